"""Serving under load (issue 39): an engine's continuous batching with chunked prefill, simulated step by step.

Requests arrive, either as a closed loop of N in flight (each sent when one finishes: benchmark_serving's
--max-concurrency, genai-perf's --concurrency) or as a Poisson process of R requests a second (benchmark_serving's
--request-rate); they wait for a slot, are prefilled in chunks within each step's token budget beside the running
sequences' decodes, and leave after their G tokens. Every step is priced from the pieces of serve's expected times
(tfcost.costs.expected) over what that step carries: the projections over all its rows at the matmul or
weight-stream roofline, the attention of its prefill chunks and decodes with their cache reads at theirs, the head
on the rows it samples, the tensor-parallel all-reduces, dequantization and the per-step floor.

Assumptions, stated in the report (ASSUMPTIONS):
- The scheduler is vLLM V1's: the running requests first (each decode one token, or K + 1 under speculative
  decoding; a prefill its next chunk), then waiting requests first come first served, while the step's token budget
  (max_num_batched_tokens) and max_num_seqs allow (vllm/v1/core/sched/scheduler.py, schedule(): "First, schedule the
  RUNNING requests", then "Next, schedule the WAITING requests"). Without chunked prefill a step is either whole
  prompts or decodes.
- A request is admitted only when its whole context's KV blocks (P + G) are free, so none is preempted.
- Only the GPUs' steps take time: the host's scheduling, sampling bookkeeping and detokenization between steps and
  the client's HTTP path are not priced.
- Prefix caching (prefix_hit) leaves the cached share of each prompt out of its prefill: its chunks start there, and
  their attention still reads the cached positions.
- Speculative decoding: each drafted token is accepted with chance a given the ones before it were (Leviathan et al.
  2023, "Fast Inference from Transformers via Speculative Decoding", §3.1, i.i.d. acceptance: E[tokens a step] =
  (1 - a^(K+1)) / (1 - a)); the verify step runs K + 1 rows a sequence, and each drafted token costs one layer of the
  model and its head over the decoding sequences (DeepSeek-V3's MTP module is one transformer block and the shared
  head; EAGLE-3's draft is one decoder layer and a head).

The simulation is deterministic (its random draws come from one seeded generator) and bounded: at most
`MAX_STEPS` steps.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from tfcost.costs import expected, serving
from tfcost.errors import UsageError
from tfcost.schema import ModelShape, ServingSetup
from tfcost.units import ceil_div

# Bounds on the work (about 15 us a step and 1 us a decoded token on one core): a load that would generate more
# tokens, or a simulation that would run more steps, stops with a usage error instead of running for minutes.
MAX_STEPS = 500_000
MAX_TOKENS = 10_000_000
# Requests a benchmark sends when not told: benchmark_serving's default (vllm benchmarks/benchmark_serving.py:
# '"--num-prompts", type=int, default=1000, help="Number of prompts to process."'); a closed loop sends 8 per slot
# so that the ramp up and down is a small part of the run, at least 100.
DEFAULT_REQUESTS = 1000
REQUESTS_PER_SLOT = 8
MIN_REQUESTS = 100

# Speculative decoding's published defaults, per method: (K drafted tokens, a per-token acceptance).
# DeepSeek-V3 Technical Report (arXiv 2412.19437) §5.4.3: its MTP module predicts one more token, and "the acceptance
# rate of the second token prediction ranges between 85% and 90% across various generation topics" (the middle,
# 0.875, taken).
MTP_DEFAULT = (1, 0.875)
# EAGLE-3 (Li et al. 2025, arXiv 2503.01840) drafting a chain of 3 tokens, as SGLang is told to with
# "--speculative-eagle-topk 1 --speculative-num-steps 3 --speculative-num-draft-tokens 4" (the command of the
# thoughtworks/Llama-3.1-8B-Instruct-Eagle3 model card). The paper reports speedups ("up to 6.5x") and acceptance
# lengths of its draft trees; no per-token acceptance of a chain was read at a source here, so a = 0.8 (3.0 tokens a
# step of at most 4) is an assumption: pass --acceptance for a measured one.
EAGLE_DEFAULT = (3, 0.8)
SPECULATIVE_DEFAULTS = {"mtp": MTP_DEFAULT, "eagle": EAGLE_DEFAULT}

ASSUMPTIONS = (
    "Under load: vLLM V1's scheduler simulated step by step (running requests first, then waiting ones FCFS, within "
    "max_num_batched_tokens and max_num_seqs; prompts in chunks unless the engine's file schedules them whole), each "
    "step priced as serve's expected pieces over what "
    "it carries; a request admitted only when its whole context's KV blocks are free (no preemption); host "
    "scheduling, detokenization and the client's HTTP path not priced; percentiles interpolated linearly over the "
    "requests (TTFT, TPOT, end to end, queueing) and over every streamed chunk (ITL), as benchmark_serving computes "
    "them."
)


def speculative_setting(setup: ServingSetup) -> tuple[int, float] | None:
    """(K, a) of the setup's speculative decoding, its method's published default where not given; None without."""
    if setup.speculative is None:
        if setup.draft_tokens is not None or setup.acceptance is not None:
            raise UsageError("--draft-tokens and --acceptance need --speculative mtp|eagle")
        return None
    k, a = SPECULATIVE_DEFAULTS[setup.speculative]
    return (setup.draft_tokens or k, setup.acceptance if setup.acceptance is not None else a)


def tokens_per_step(draft_tokens: int, acceptance: float) -> float:
    """Expected tokens a verify step yields a sequence: 1 + a + a^2 + ... + a^K = (1 - a^(K+1)) / (1 - a)
    (Leviathan et al. 2023, eq. 1, with i.i.d. acceptance)."""
    return (1 - acceptance ** (draft_tokens + 1)) / (1 - acceptance)


@dataclass(frozen=True)
class StepWork:
    """What one step carries, summed over its sequences."""

    prefill_tokens: int = 0
    prefill_attention_flops: float = 0  # the chunks' QK^T and AV, whole model (all GPUs)
    prefill_cache_bytes: float = 0  # per GPU: the chunks' KV written and the earlier positions read
    decode_rows: int = 0  # decode tokens: sequences x (K + 1)
    decode_attention_flops: float = 0
    decode_cache_bytes: float = 0  # per GPU: each decoding sequence's cache, read once
    sequences: int = 0  # sequences in the step (recurrent state read and written)
    sampled: int = 0  # rows the head runs on


class StepPricer:
    """One layout's step, priced from what it carries (tfcost.reports.serve.serve_expected's pieces, per step)."""

    def __init__(
        self, shape: ModelShape, setup: ServingSetup, rates: expected.EngineRates, weights_per_gpu: int
    ) -> None:
        t = setup.gpus
        self.shape, self.setup, self.rates, self.t = shape, setup, rates, t
        read_as = serving.kernel_weights_dtype(shape, setup.weights_dtype)
        quantized = serving.share_per_gpu(serving.quantized_params(shape, read_as), t)
        self.dequant = expected.dequant_seconds(quantized, read_as, rates)
        self.floor = expected.step_floor_seconds(shape, rates)
        head_elements = expected.head_weight_elements(shape)
        element_bytes = expected.table_element_bytes(read_as)
        self.head_bytes = serving.share_per_gpu(head_elements * element_bytes, t)
        lookup_bytes = serving.share_per_gpu(expected.lookup_table_elements(shape) * element_bytes, t)
        self.layer_weights = max(weights_per_gpu - self.head_bytes - lookup_bytes, 0)
        self.head_flops_per_row = 2 * head_elements / t
        # The projections' FLOPs a token, whatever its position: a decode step's less its attention and head.
        one_token = self.attention(2) - self.attention(1)
        self.linear_per_token = (serving.decode_step_flops(shape, 2, 1) - one_token - 2 * head_elements) / t
        self.state_per_sequence = serving.state_bytes_per_gpu(shape, 1, setup.kv_dtype, t)
        self.reads = expected.cache_reads_per_decode(shape, t, setup.gqa_decode)
        self.expert_gpus = serving.stage_gpus(t, setup.ep)

    @lru_cache(maxsize=65536)  # noqa: B019 - one pricer per run; positions recur step after step
    def attention(self, tokens: int) -> int:
        """QK^T and AV FLOPs of one causal sequence of `tokens` positions (expected.attention_flops)."""
        return expected.attention_flops(self.shape, tokens) if tokens > 0 else 0

    @lru_cache(maxsize=65536)  # noqa: B019
    def cache_bytes(self, tokens: int) -> int:
        """One sequence's KV cache of `tokens` positions on one GPU, in whole blocks as a paged engine holds it."""
        if tokens <= 0:
            return 0
        allocated = expected.allocated_kv_tokens(tokens, self.setup.kv_block)
        return serving.kv_cache_bytes_per_gpu(self.shape, allocated, 1, self.setup.kv_dtype, self.t)

    @lru_cache(maxsize=65536)  # noqa: B019
    def fixed_seconds(self, rows: int, sampled: int) -> float:
        """The part of a step set by its rows alone: the projections (compute or weight stream, the experts no row
        routes to unread), the head on the sampled rows, all-reduces, the all-to-all, dequantization and floor."""
        shape, setup, rates = self.shape, self.setup, self.rates
        unread = serving.unread_expert_bytes_per_gpu(
            shape, setup.weights_dtype, rows, self.expert_gpus, setup.group_size
        )
        stream = expected.weights_stream_seconds(shape, self.layer_weights - unread, rates)
        projections = expected.split_step_seconds(self.linear_per_token * rows, stream, 0, 0, rates, rows=rows)
        head = expected.head_seconds(shape, self.head_flops_per_row * sampled, self.head_bytes, rates)
        if setup.ep == 1:
            allreduce = expected.tensor_parallel_seconds(shape, rows, self.t, rates)
        else:
            allreduce = expected.expert_parallel_allreduce_seconds(shape, rows, self.t, rates)
            allreduce += expected.all_to_all_seconds(shape, ceil_div(rows, self.t), setup.ep, rates)
        return projections + head + allreduce + self.dequant + self.floor

    def seconds(self, work: StepWork) -> float:
        """One step: its fixed part, and its attention at max(FLOPs / attention rate, cache bytes / stream rate)."""
        rows = work.prefill_tokens + work.decode_rows
        if rows == 0:
            return 0.0
        attention = (work.prefill_attention_flops + work.decode_attention_flops) / self.t
        cache = (
            work.decode_cache_bytes * self.reads + work.prefill_cache_bytes + work.sequences * self.state_per_sequence
        )
        return self.fixed_seconds(rows, work.sampled) + expected.split_step_seconds(0, 0, attention, cache, self.rates)

    def draft_seconds(self, sequences: int, draft_tokens: int) -> float:
        """The K drafted tokens of `sequences` sequences, one after another: each one layer's share of a decode
        step's projections (its stream of the weights those rows read, or its FLOPs) plus the head and one layer's
        kernels."""
        if sequences == 0 or draft_tokens == 0:
            return 0.0
        shape, setup, rates = self.shape, self.setup, self.rates
        unread = serving.unread_expert_bytes_per_gpu(
            shape, setup.weights_dtype, sequences, self.expert_gpus, setup.group_size
        )
        stream = expected.weights_stream_seconds(shape, (self.layer_weights - unread) / shape.n_layers, rates)
        layer = expected.split_step_seconds(
            self.linear_per_token / shape.n_layers * sequences, stream, 0, 0, rates, rows=sequences
        )
        head = expected.head_seconds(shape, self.head_flops_per_row * sequences, self.head_bytes, rates)
        kernels = (rates.kernels_per_layer + expected.KERNELS_OUTSIDE_LAYERS) * rates.kernel_floor_s
        return draft_tokens * (layer + head + kernels)


@dataclass
class Request:
    """One request's life in the simulation."""

    arrival: float
    prompt: int
    generate: int
    prefilled: int  # positions in the cache so far (the cached prefix counts from the start)
    cached: int
    generated: int = 0
    admitted: float | None = None
    first_token: float | None = None
    last_token: float | None = None
    done: float | None = None
    gaps: list[float] = field(default_factory=list)
    ready: float | None = None  # disaggregated: when its KV cache reaches the decode pool (else its arrival)

    @property
    def eligible(self) -> float:
        """When the engine may first schedule it."""
        return self.arrival if self.ready is None else self.ready


@dataclass(frozen=True)
class LoadResult:
    """Per-request figures and totals of one simulated benchmark, each in seconds, tokens or joule-free counts."""

    ttft: list[float]
    generates: list[int]  # each finished request's G, in the order of ttft and e2e
    tpot: list[float]
    itl: list[float]
    e2e: list[float]
    queueing: list[float]
    duration: float
    busy: float
    prefill_busy: float  # the busy time's share priced as prefill work, seconds
    input_tokens: int
    prefilled_tokens: int
    output_tokens: int
    steps: int
    mean_batch: float
    tokens_per_step: float | None  # speculative decoding: tokens a sequence's verify step yielded, mean
    requests: int
    replicas: int = 1  # engines the busy times are summed over (disaggregated: both pools')


def per_request(finished: list[Request]) -> dict[str, Any]:
    """What a LoadResult says of each finished request (TTFT, TPOT, ITL, end to end, queueing) and their totals."""
    return {
        "ttft": [r.first_token - r.arrival for r in finished if r.first_token is not None],
        "generates": [r.generate for r in finished],
        "tpot": [
            (r.done - r.first_token) / (r.generate - 1)
            for r in finished
            if r.done is not None and r.first_token is not None and r.generate > 1
        ],
        "itl": [gap for r in finished for gap in r.gaps],
        "e2e": [r.done - r.arrival for r in finished if r.done is not None],
        "queueing": [r.admitted - r.arrival for r in finished if r.admitted is not None],
        "input_tokens": sum(r.prompt for r in finished),
        "prefilled_tokens": sum(r.prompt - r.cached for r in finished),
        "output_tokens": sum(r.generate for r in finished),
        "requests": len(finished),
    }


def default_requests(setup: ServingSetup) -> int:
    """benchmark_serving's --num-prompts when not given: 8 per slot of a closed loop (100 to 1,000), else 1,000."""
    if setup.requests is not None:
        return setup.requests
    if setup.concurrency is not None:
        return min(max(REQUESTS_PER_SLOT * setup.concurrency, MIN_REQUESTS), DEFAULT_REQUESTS)
    return DEFAULT_REQUESTS


def drawn_length(mean: int, spread: float, draw: random.Random) -> int:
    """A length drawn uniformly from [L(1 - r), L(1 + r)], at least 1; L itself when r = 0. benchmark_serving's
    --random-range-ratio: 'Must be in the range [0, 1) to define a symmetric sampling range [length * (1 -
    range_ratio), length * (1 + range_ratio)].'"""
    if spread == 0:
        return mean
    return max(draw.randint(int(mean * (1 - spread)), int(mean * (1 + spread))), 1)


def simulate(
    pricer: StepPricer,
    setup: ServingSetup,
    kv_tokens: int,
    state_sequences: int | None = None,
    given: list[Request] | None = None,
    prefill_only: bool = False,
) -> LoadResult:
    """Run the benchmark: `setup`'s load against an engine of `kv_tokens` KV slots (whole blocks) and, for a model
    with a recurrent state, room for `state_sequences` sequences' states, pricing each step with `pricer`.
    Deterministic for a seed; at most MAX_STEPS steps. `given`: these requests instead of the load's (a pool of a
    disaggregated engine); `prefill_only`: a request leaves once its first token is sampled (the prefill pool)."""
    if setup.concurrency is not None and setup.rate is not None:
        raise UsageError("give --concurrency (a closed loop) or --rate (Poisson arrivals), not both")
    draw = random.Random(setup.seed)
    total = default_requests(setup) if given is None else len(given)
    if total * setup.generate > MAX_TOKENS:
        raise UsageError(
            f"{total:,} requests of {setup.generate:,} tokens is more than the {MAX_TOKENS:,} tokens a simulated "
            "benchmark generates: fewer --requests"
        )
    speculative = speculative_setting(setup)
    draft, acceptance = speculative or (0, 0.0)
    rows_per_decode = draft + 1
    budget_tokens = setup.max_num_batched_tokens
    if rows_per_decode > budget_tokens:
        raise UsageError(f"max_num_batched_tokens ({budget_tokens}) is less than one verify step's {rows_per_decode}")
    keeps_kv = pricer.cache_bytes(1) > 0  # a pure state-space model keeps no KV cache, only its states
    blocks_free = kv_tokens // setup.kv_block
    slots = min(setup.max_num_seqs, state_sequences if state_sequences is not None else setup.max_num_seqs)
    if slots < 1:
        raise UsageError(
            "the weights leave no room for one sequence's state on these GPUs: more GPUs or a smaller --weights-dtype"
        )

    def new_request(arrival: float) -> Request:
        prompt = drawn_length(setup.prompt, setup.length_spread, draw)
        generate = drawn_length(setup.generate, setup.length_spread, draw)
        cached = min(int(prompt * setup.prefix_hit), prompt - 1)
        return Request(arrival, prompt, generate, prefilled=cached, cached=cached)

    def blocks(request: Request) -> int:
        return ceil_div(request.prompt + (0 if prefill_only else request.generate), setup.kv_block)

    def admissible(queue: deque[Request], admitted: list[Request], free: int) -> bool:
        """Whether the head of the queue may start: a sequence slot and its whole context's blocks are free."""
        return bool(queue) and len(admitted) < slots and (not keeps_kv or blocks(queue[0]) <= free)

    arrivals: deque[Request] = deque()
    if given is not None:
        arrivals.extend(sorted(given, key=lambda request: request.eligible))
    elif setup.concurrency is not None:
        arrivals.extend(new_request(0.0) for _ in range(min(setup.concurrency, total)))
    else:
        assert setup.rate is not None
        clock = 0.0
        for _ in range(total):
            arrivals.append(new_request(clock))
            clock += draw.expovariate(setup.rate)
    sent = len(arrivals)
    largest = max(blocks(request) for request in arrivals)
    longest = max(request.prompt - request.cached for request in arrivals)
    if not setup.chunked_prefill and longest > budget_tokens:
        raise UsageError(
            f"without chunked prefill a prompt ({longest:,} tokens) must fit one step's max_num_batched_tokens "
            f"({budget_tokens:,})"
        )
    if keeps_kv and blocks_free == 0:
        raise UsageError("the weights leave no KV cache on these GPUs: more GPUs or a smaller --weights-dtype")
    if keeps_kv and largest > blocks_free:
        raise UsageError(
            f"one request's context ({largest * setup.kv_block:,} tokens in whole blocks) does not fit the KV cache "
            f"({kv_tokens:,} tokens): fewer tokens, more GPUs or a smaller --kv-dtype"
        )

    waiting: deque[Request] = deque()
    running: list[Request] = []
    finished: list[Request] = []
    now = busy = prefill_busy = 0.0
    steps = carried = 0
    yielded, verifies = 0, 0
    while len(finished) < total:
        while arrivals and arrivals[0].eligible <= now:
            waiting.append(arrivals.popleft())
        if not running and not waiting:
            now = arrivals[0].eligible  # idle until the next request arrives
            continue
        steps += 1
        if steps > MAX_STEPS:
            raise UsageError(f"the load needs more than {MAX_STEPS:,} steps to simulate: fewer --requests")
        budget = budget_tokens

        # Without chunked prefill a step is either whole prompts (when one waits and fits) or decodes.
        prompts_only = not setup.chunked_prefill and admissible(waiting, running, blocks_free)
        decodes: list[Request] = []
        chunks: list[tuple[Request, int]] = []
        for request in running:  # the running requests first, in the order they came
            if request.prefilled >= request.prompt:
                if not prompts_only and budget >= rows_per_decode:
                    decodes.append(request)
                    budget -= rows_per_decode
            elif budget > 0:  # a prompt still in chunks (chunked prefill only)
                size = min(request.prompt - request.prefilled, budget)
                chunks.append((request, size))
                budget -= size
        # Then the waiting ones, first come first served.
        while admissible(waiting, running, blocks_free) and (setup.chunked_prefill or prompts_only):
            request = waiting[0]
            left = request.prompt - request.prefilled
            if budget <= 0 or (not setup.chunked_prefill and left > budget):
                break
            waiting.popleft()
            blocks_free -= blocks(request)
            if request.admitted is None:
                request.admitted = now
            running.append(request)
            if left > 0:  # a request whose prompt is already cached (the decode pool's) decodes from the next step
                chunks.append((request, min(left, budget)))
                budget -= min(left, budget)
        if not decodes and not chunks:
            if any(request.prefilled >= request.prompt for request in running):
                continue  # admitted already prefilled (the decode pool): they decode from the next step
            raise UsageError("the scheduler could not place any request: raise max_num_batched_tokens")

        # A decode-only step under multi-step scheduling runs `scheduler_steps` steps on the same batch, and the
        # tokens reach the client when the pass ends (vLLM V0's --num-scheduler-steps).
        passes = setup.scheduler_steps if decodes and not chunks else 1
        step_s = 0.0
        for _ in range(passes):
            work, prefill_work, decode_work = step_work(pricer, chunks, decodes, rows_per_decode)
            one_s = pricer.seconds(work) + pricer.draft_seconds(len(decodes), draft)
            if chunks and decodes:  # the step's time split between its prefill and decode work by their own prices
                alone_prefill = pricer.seconds(prefill_work)
                alone_decode = pricer.seconds(decode_work) + pricer.draft_seconds(len(decodes), draft)
                prefill_busy += one_s * alone_prefill / (alone_prefill + alone_decode)
            elif chunks:
                prefill_busy += one_s
            step_s += one_s
            carried += len(chunks) + len(decodes)
            for request in decodes:
                if speculative is None:
                    new = 1
                else:
                    accepted = 0
                    while accepted < draft and draw.random() < acceptance:
                        accepted += 1
                    new = accepted + 1
                    yielded += new
                    verifies += 1
                request.generated += new
            if all(request.generated >= request.generate for request in decodes):
                break
        steps += passes - 1
        now += step_s
        busy += step_s

        for request, size in chunks:
            request.prefilled += size
            if request.prefilled >= request.prompt:  # the step that ends a prompt samples its first token
                request.generated = 1
                request.first_token = request.last_token = now
        for request in decodes:  # the step's (or pass's) tokens stream out together, one chunk
            assert request.last_token is not None
            request.gaps.append(now - request.last_token)
            request.last_token = now
        still: list[Request] = []
        for request in running:
            if request.first_token is not None and (prefill_only or request.generated >= request.generate):
                if not prefill_only:
                    request.done = now
                finished.append(request)
                blocks_free += blocks(request)
                if setup.concurrency is not None and sent < total:  # the closed loop sends the next one
                    arrivals.append(new_request(now))
                    sent += 1
            else:
                still.append(request)
        running = still

    return LoadResult(
        **per_request(finished),
        duration=now,
        busy=busy,
        prefill_busy=prefill_busy,
        steps=steps,
        mean_batch=carried / steps if steps else 0.0,
        tokens_per_step=yielded / verifies if verifies else None,
    )


def kv_transfer_seconds(pricer: StepPricer, prompt: int) -> float:
    """Moving one request's prompt KV cache from its prefill replica to a decode replica: each of the t GPUs sends
    its share (its key-value heads, in whole blocks) at the network's per-GPU rate between nodes (the GPU table's
    inter_node_bandwidth_gb_per_s; the intra-node link where none is given), plus one hop's latency. DistServe and
    Splitwise move it so ("the KV cache ... transferred from the prefill instance to the decoding instance"); the
    transfer is not overlapped with the prefill here."""
    rates = pricer.rates
    rate = rates.network_bytes_per_s or rates.link_bytes_per_s
    return (0.0 if rate is None else pricer.cache_bytes(prompt) / rate) + rates.link_latency_s


def simulate_disaggregated(
    prefill_pricer: StepPricer,
    decode_pricer: StepPricer,
    setup: ServingSetup,
    prefill: tuple[int, int],
    decode: tuple[int, int],
) -> LoadResult:
    """Disaggregated serving (DistServe, Splitwise; vLLM's and SGLang's prefill-decode disaggregation): the load's
    requests go round robin to `prefill` = (replicas, KV slots each) replicas that only prefill (a request leaves with
    its first token), its KV cache then crosses to the decode pool (`kv_transfer_seconds`), and the requests, in the
    order they are ready, go round robin to `decode` = (replicas, KV slots each) replicas that only decode; the first
    token reaches the client with the KV cache (TTFT: the prefill and the transfer). Both pools on the setup's GPUs
    a replica and scheduler. An open load only (--rate): a closed loop would couple the pools."""
    if setup.rate is None:
        raise UsageError("--disaggregated simulates an open load: give --rate")
    draw = random.Random(setup.seed)
    total = default_requests(setup)
    requests: list[Request] = []
    clock = 0.0
    for _ in range(total):
        prompt = drawn_length(setup.prompt, setup.length_spread, draw)
        generate = drawn_length(setup.generate, setup.length_spread, draw)
        cached = min(int(prompt * setup.prefix_hit), prompt - 1)
        requests.append(Request(clock, prompt, generate, prefilled=cached, cached=cached))
        clock += draw.expovariate(setup.rate)
    prefill_replicas, prefill_kv = prefill
    decode_replicas, decode_kv = decode
    pools: list[LoadResult] = []
    for replica in range(prefill_replicas):
        share = requests[replica::prefill_replicas]
        if share:
            pools.append(simulate(prefill_pricer, setup, prefill_kv, given=share, prefill_only=True))
    prefill_busy = sum(pool.busy for pool in pools)
    for request in requests:  # the first token streams from the decode replica once the KV cache is there
        assert request.first_token is not None
        request.ready = request.first_token + kv_transfer_seconds(prefill_pricer, request.prompt)
        request.first_token = request.last_token = request.ready
    ordered = sorted(requests, key=lambda request: request.eligible)
    decoding: list[LoadResult] = []
    for replica in range(decode_replicas):
        share = ordered[replica::decode_replicas]
        if share:
            decoding.append(simulate(decode_pricer, setup, decode_kv, given=share))
    every = [*pools, *decoding]
    steps = sum(pool.steps for pool in every)
    verifies = [pool.tokens_per_step for pool in decoding if pool.tokens_per_step is not None]
    finished = [request for request in requests if request.done is not None and request.first_token is not None]
    return LoadResult(
        **per_request(finished),
        duration=max(r.done for r in finished if r.done is not None),
        busy=sum(pool.busy for pool in every),
        prefill_busy=prefill_busy,
        steps=steps,
        mean_batch=sum(pool.mean_batch * pool.steps for pool in decoding) / max(sum(p.steps for p in decoding), 1),
        tokens_per_step=sum(verifies) / len(verifies) if verifies else None,
        replicas=prefill_replicas + decode_replicas,
    )


def step_work(
    pricer: StepPricer, chunks: list[tuple[Request, int]], decodes: list[Request], rows_per_decode: int
) -> tuple[StepWork, StepWork, StepWork]:
    """(the whole step, its prefill chunks alone, its decodes alone) as StepWork."""
    prefill_tokens = sum(size for _, size in chunks)
    prefill_attention = sum(
        pricer.attention(request.prefilled + size) - pricer.attention(request.prefilled) for request, size in chunks
    )
    # A chunk writes its positions' KV and its attention reads the positions before it once: its context's cache.
    prefill_cache = sum(pricer.cache_bytes(request.prefilled + size) for request, size in chunks)
    ending = sum(1 for request, size in chunks if request.prefilled + size >= request.prompt)
    decode_attention = 0.0
    decode_cache = 0.0
    for request in decodes:
        context = request.prompt + request.generated  # the new token attends every earlier position and itself
        decode_attention += rows_per_decode * (pricer.attention(context) - pricer.attention(context - 1))
        decode_cache += pricer.cache_bytes(context)
    decode_rows = rows_per_decode * len(decodes)
    prefill = StepWork(prefill_tokens, prefill_attention, prefill_cache, sequences=len(chunks), sampled=ending)
    decode = StepWork(
        decode_rows=decode_rows,
        decode_attention_flops=decode_attention,
        decode_cache_bytes=decode_cache,
        sequences=len(decodes),
        sampled=decode_rows,
    )
    whole = StepWork(
        prefill_tokens,
        prefill_attention,
        prefill_cache,
        decode_rows,
        decode_attention,
        decode_cache,
        len(chunks) + len(decodes),
        ending + decode_rows,
    )
    return whole, prefill, decode


def percentile(values: list[float], share: float) -> float:
    """The `share` percentile of `values`, interpolated linearly between the nearest ranks (numpy.percentile's
    default, which benchmark_serving uses); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = share * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0
