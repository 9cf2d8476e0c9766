"""`tfcost serve`'s report: memory, capacity, the roofline bound and the expected times, from the core
(tfcost.reports.estimate holds the parts every report shares)."""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field

from tfcost.core import memory, params
from tfcost.costs import energy, engine_memory, expected, images, scheduler, serving
from tfcost.errors import UsageError
from tfcost.hardware import rates as hardware
from tfcost.reports.base import PricedUnder, Section, SourceNotes, optional_quantity, quantity, stepped_cache_note
from tfcost.reports.suggestion import Suggestion
from tfcost.schema import GpuSpec, ModelShape, ServingSetup
from tfcost.units import ceil_div, milliseconds

# `tfcost plan serve` runs serve_expected over every batch of thousands of layouts; these figures depend only on the
# model and a few sizes that recur from layout to layout, so the search works each out once (caches, no arithmetic).
attention_flops = lru_cache(maxsize=4096)(expected.attention_flops)
kv_cache_bytes_per_gpu = lru_cache(maxsize=4096)(serving.kv_cache_bytes_per_gpu)
state_bytes_per_gpu = lru_cache(maxsize=4096)(serving.state_bytes_per_gpu)
unread_expert_bytes_per_gpu = lru_cache(maxsize=4096)(serving.unread_expert_bytes_per_gpu)
vllm_profile_activation_bytes = lru_cache(maxsize=4096)(engine_memory.vllm_profile_activation_bytes)
quantized_params = lru_cache(maxsize=1024)(serving.quantized_params)
lookup_table_elements = lru_cache(maxsize=1024)(expected.lookup_table_elements)
head_weight_elements = lru_cache(maxsize=1024)(expected.head_weight_elements)


class ServeInputs(Section):
    parameters: int = quantity("N, parameters", "count")
    context: int = quantity("context per sequence, P + G", "whole")
    kv_heads_per_gpu: int = quantity("key-value heads per GPU, max(K / gpus, 1)", "count")
    peak_flops_per_s: float = quantity("reachable FLOP/s per GPU = peak x compute efficiency", "flops_per_s")
    bandwidth_bytes_per_s: float = quantity("reachable bandwidth = peak x memory efficiency", "bytes_per_s")
    usable_bytes_per_gpu: int = quantity("usable memory per GPU = memory x (1 - reserve)", "bytes")


class ServeMemory(Section):
    weights_bytes: int = quantity("weights, whole model", "bytes")
    weights_bytes_per_gpu: int = quantity("weights per GPU = whole / gpus", "bytes")
    # None where the cache steps every m positions (compressed attention): kv_cache_note says so.
    kv_cache_bytes_per_token: int | None = quantity("KV cache per token, whole model, 2*L*K*Q*s", "bytes")
    kv_cache_bytes: int = quantity("KV cache, B x (P + G) tokens, whole model", "bytes")
    kv_cache_bytes_per_gpu: int = quantity("KV cache per GPU (its key-value heads)", "bytes")
    state_bytes: int = quantity("recurrent state, B sequences (independent of context), whole model", "bytes")
    state_bytes_per_gpu: int = quantity("recurrent state per GPU = whole / gpus", "bytes")
    total_bytes_per_gpu: int = quantity("weights + KV cache + state per GPU", "bytes")
    fits: bool = quantity("fits in the usable memory", "text")
    kv_cache_note: str | None = Field(
        default=None,
        description="why there is no per-token figure: a cache that steps every m positions (stepped_cache_note)",
        exclude_if=lambda note: note is None,
    )


class ServeLatency(Section):
    prefill_flops_per_gpu: int = quantity("prefill FLOPs per GPU (causal, logits of the last token)", "flops")
    prefill_bytes_per_gpu: int = quantity("prefill bytes per GPU = weights + KV and state written", "bytes")
    prefill_ms: float = quantity("prefill (time to first token) = max(FLOPs/peak, bytes/bw)", "ms")
    prefill_bound: str = quantity("prefill is", "text")
    prefill_tokens_per_s: float = quantity("prefill throughput, B x P / prefill", "per_s")
    decode_flops_per_gpu: int = quantity("decode step FLOPs per GPU at context P + G", "flops")
    decode_bytes_per_gpu: int = quantity("decode step bytes per GPU = weights + KV and state read", "bytes")
    decode_ms_per_token: float = quantity("decode step (per token) = max(FLOPs/peak, bytes/bw)", "ms")
    decode_bound: str = quantity("decode is", "text")
    decode_tokens_per_s: float = quantity("decode throughput, B / decode step", "per_s")
    ttft_ms: float = quantity("time to first token (TTFT) = prefill", "ms")
    tpot_ms: float = quantity("time per output token (TPOT) = decode step", "ms")
    tokens_per_s_per_sequence: float = quantity("tokens/s per sequence = 1 / TPOT", "per_s")
    tokens_per_s: float = quantity("tokens/s overall = B / TPOT", "per_s")


class ServeExpected(ServeLatency):
    """What an engine (vLLM, TensorRT-LLM, gpt-fast) is expected to reach: the same keys as the bound, with the
    parts the roofline leaves out."""

    prefill_kernels_ms: float = quantity("prefill kernels at the rates reached", "ms")
    prefill_dequant_ms: float = quantity("prefill dequantization of int8/int4/fp4 weights", "ms")
    prefill_allreduce_ms: float = quantity("prefill tensor-parallel all-reduces (2 per layer)", "ms")
    decode_kernels_ms: float = quantity("decode kernels at the rates reached", "ms")
    decode_dequant_ms: float = quantity("decode dequantization of int8/int4/fp4 weights", "ms")
    decode_allreduce_ms: float = quantity("decode tensor-parallel all-reduces (2 per layer)", "ms")
    prefill_all_to_all_ms: float | None = optional_quantity(
        "prefill expert-parallel dispatch and combine (2 all-to-alls per MoE layer)", "ms"
    )
    decode_all_to_all_ms: float | None = optional_quantity(
        "decode expert-parallel dispatch and combine (2 all-to-alls per MoE layer)", "ms"
    )
    pipeline_send_ms: float | None = optional_quantity(
        "decode stage-to-stage sends (hidden states and residual), the pp - 1 of one pass", "ms"
    )
    step_floor_ms: float = quantity("per-step floor: kernels x one kernel's fixed cost", "ms")
    decode_mean_ms_per_token: float = quantity("mean decode step of the generation, at context P + (G + 1) / 2", "ms")
    run_ms: float = quantity("a static batch's whole run = prefill + G mean decode steps", "ms")
    run_tokens_per_s: float = quantity("static-batch throughput over the run, B x G / run", "per_s")
    inflight_step_ms: float = quantity("in-flight step, concurrency B: B decode + B x P/G prompt tokens", "ms")
    inflight_tokens_per_s: float = quantity("in-flight batching throughput at concurrency B, B / step", "per_s")
    stream_bytes_per_s: float = quantity("bandwidth reached streaming weights and KV", "bytes_per_s")
    matmul_flops_per_s: float = quantity("FLOP/s reached by large matmuls", "flops_per_s")
    kv_tokens_per_sequence: int = quantity("KV slots per sequence, rounded up to whole blocks", "whole")
    cuda_context_bytes: int = quantity("CUDA context and libraries, per GPU", "bytes")
    workspace_bytes: int = quantity("activation peak of the prefill (vLLM's profile run), per GPU", "bytes")
    total_bytes_per_gpu: int = quantity("weights + KV blocks + state + context + workspace per GPU", "bytes")
    fits: bool = quantity("fits in the usable memory", "text")
    max_batch: int = quantity("largest batch at context P + G, in whole blocks", "whole")
    max_kv_tokens: int = quantity("KV-cache capacity in tokens per GPU's share, whole blocks", "whole")
    sources: dict[str, str] = quantity("where each rate comes from", "text")


class ServeLoad(Section):
    """Serving under load (issue 39): per-request latency percentiles of a simulated benchmark, the throughput, and
    what the tokens cost in money and energy (tfcost.costs.scheduler, tfcost.costs.energy)."""

    load: str = quantity("load", "text")
    requests: int = quantity("requests simulated (benchmark_serving's --num-prompts)", "count")
    ttft_p50_ms: float = quantity("time to first token (TTFT), p50, queueing included", "ms")
    ttft_p90_ms: float = quantity("TTFT p90", "ms")
    ttft_p99_ms: float = quantity("TTFT p99", "ms")
    ttft_mean_ms: float = quantity("TTFT mean", "ms")
    tpot_p50_ms: float = quantity("time per output token (TPOT) p50, (end to end - TTFT) / (G - 1)", "ms")
    tpot_p90_ms: float = quantity("TPOT p90", "ms")
    tpot_p99_ms: float = quantity("TPOT p99", "ms")
    tpot_mean_ms: float = quantity("TPOT mean", "ms")
    itl_p50_ms: float = quantity("inter-token latency (ITL) p50, between streamed chunks", "ms")
    itl_p90_ms: float = quantity("ITL p90", "ms")
    itl_p99_ms: float = quantity("ITL p99", "ms")
    e2e_p50_ms: float = quantity("end-to-end latency p50", "ms")
    e2e_p90_ms: float = quantity("end-to-end latency p90", "ms")
    e2e_p99_ms: float = quantity("end-to-end latency p99", "ms")
    e2e_mean_ms: float = quantity("end-to-end latency mean", "ms")
    queueing_p50_ms: float = quantity("queueing delay (arrival to first scheduled) p50", "ms")
    queueing_p90_ms: float = quantity("queueing delay p90", "ms")
    queueing_p99_ms: float = quantity("queueing delay p99", "ms")
    duration_s: float = quantity("benchmark duration, first arrival to last token", "seconds")
    request_throughput_per_s: float = quantity("requests per second", "per_s")
    output_tokens_per_s: float = quantity("output tokens per second, all GPUs", "per_s")
    total_tokens_per_s: float = quantity("input + output tokens per second, all GPUs", "per_s")
    output_tokens_per_s_per_gpu: float = quantity("output tokens per second per GPU", "per_s")
    output_tokens_per_s_per_user: float = quantity("output tokens per second per user, (G - 1) / (E2E - TTFT)", "per_s")
    mean_batch: float = quantity("sequences per step, mean", "count")
    busy_share: float = quantity("share of the run the GPUs were stepping", "fraction")
    prefill_share: float = quantity("share of the busy time priced as prefill work", "fraction")
    kv_capacity_tokens: int = quantity("KV-cache slots the engine has, whole blocks", "count")
    speculative: str | None = Field(
        default=None, description="speculative decoding", exclude_if=lambda value: value is None
    )
    acceptance: float | None = optional_quantity(
        "a: chance a drafted token is accepted, given the ones before it were", "fraction"
    )
    expected_tokens_per_step: float | None = optional_quantity(
        "tokens a verify step yields a sequence, expected: (1 - a^(K+1)) / (1 - a)", "count"
    )
    tokens_per_step: float | None = optional_quantity(
        "tokens a verify step yielded a sequence in the simulation, mean", "count"
    )
    usd_per_million_input_tokens: float | None = optional_quantity(
        "$ per million input tokens (the prefill's share of the GPU-hours)", "usd_fine"
    )
    usd_per_million_output_tokens: float | None = optional_quantity(
        "$ per million output tokens (the decode's share of the GPU-hours)", "usd_fine"
    )
    usd_per_million_tokens: float | None = optional_quantity(
        "$ per million tokens, input and output together", "usd_fine"
    )
    joules_per_input_token: float | None = optional_quantity("energy per input token (prefill), GPUs only", "joules")
    joules_per_output_token: float | None = optional_quantity("energy per output token (decode), GPUs only", "joules")
    kwh_per_million_input_tokens: float | None = optional_quantity("energy per million input tokens", "kwh")
    kwh_per_million_output_tokens: float | None = optional_quantity("energy per million output tokens", "kwh")
    gco2_per_million_input_tokens: float | None = optional_quantity(
        "CO2 per million input tokens, g (--grid-gco2-per-kwh x kWh)", "count"
    )
    gco2_per_million_output_tokens: float | None = optional_quantity(
        "CO2 per million output tokens, g (--grid-gco2-per-kwh x kWh)", "count"
    )
    power_model: str | None = optional_quantity("the power model and its source", "text")
    assumptions: str = quantity("what the simulation assumes", "text")


class ServeReport(SourceNotes, PricedUnder):
    """Everything `tfcost serve` reports for one model, GPU and setup."""

    model: str
    source: str | None
    gpu: str
    setup: ServingSetup
    compute_dtype: str
    weights_format: str
    inputs: ServeInputs
    memory: ServeMemory
    max_batch: int = quantity("largest batch at context P + G", "whole")
    max_context: int = quantity("longest context at batch B (memory only)", "whole")
    model_max_context: int = quantity("the model's own maximum context", "whole")
    latency: ServeLatency = Field(description="bound: the roofline, the best any engine could do")
    expected: ServeExpected = Field(description="expected: what an engine reaches (rates, floor, all-reduce, ...)")
    load: ServeLoad | None = Field(
        default=None,
        description="under load (--concurrency or --rate): continuous batching simulated step by step",
        exclude_if=lambda load: load is None,
    )
    profile: str | None = Field(None, description="the measured profile used in place of the GPU table")
    suggestion: Suggestion | None = Field(
        default=None,
        description="when the layout does not fit: the nearest that does (`tfcost plan serve`)",
        exclude_if=lambda suggestion: suggestion is None,
    )

    def needs_suggestion(self) -> bool:
        """Whether the layout does not fit in its expected memory, so that `tfcost plan`'s search should name one
        that does. A method here, so that a run that fits never imports the search."""
        return not self.expected.fits


SERVE_SECTIONS: dict[str, str] = {
    "inputs": "Inputs",
    "memory": "Memory",
    "": "Capacity",
    "stored": "Stored bytes (the files' headers)",
    "latency": "Bound (roofline, static batch of B)",
    "expected": "Expected (engine, static batch of B)",
    "load": "Under load (engine, continuous batching simulated)",
}


def bound(is_compute_bound: bool) -> str:
    return "compute-bound" if is_compute_bound else "memory-bound"


def serve(
    shape: ModelShape,
    gpu: GpuSpec,
    setup: ServingSetup,
    rates: expected.EngineRates | None = None,
    profile: str | None = None,
    explained: bool = False,
    stored_bytes: int | None = None,
) -> ServeReport:
    """Run the serving core over one model on `setup.gpus` GPUs of one kind. `rates` (from a measured profile)
    replace the table-derived rates of `expected`; `explained`: with the working."""
    # The files' own bytes (tfcost.core.stored) stand for the weights unless a --weights-dtype re-prices them.
    from_files = stored_bytes is not None and setup.weights_dtype is None
    setup = serving.with_weights_dtype(shape, setup)
    setup = images.with_image_tokens(shape, setup)  # the images' tokens join each prompt (--images)
    setup = engine_memory.with_card_max_num_seqs(setup, gpu)  # vLLM's larger default on large cards
    t, kv_dtype = setup.gpus, setup.kv_dtype
    serving.check_generates(shape)
    serving.check_tensor_parallel(shape, t)
    serving.check_parallel(shape, t, setup.pp, setup.ep)
    if explained and (setup.pp > 1 or setup.ep > 1):
        raise UsageError("--explain works out tensor parallelism only: not with --pp or --ep")
    # With pipeline or expert parallelism the bound is one forward step of b sequences through every stage (a GPU
    # of each, summed), and the memory that of the stage with the most layers (docs/serving.md).
    held_sequences, _, b = serving.step_sequences(setup)
    step = setup if b == setup.batch else setup.model_copy(update={"batch": b})
    ranks = serving.attention_ranks(t, setup.ep)
    fullest = max(serving.stage_layers(shape.n_layers, setup.pp))

    def on_stage(whole: int) -> int:
        return whole if setup.pp == 1 else serving.stage_share(whole, fullest, shape.n_layers)

    peak = serving.effective_peak_flops_per_s(gpu, setup.weights_dtype, setup.compute_efficiency, shape)
    bandwidth = serving.effective_bandwidth_bytes_per_s(gpu, setup.memory_efficiency)
    usable = serving.usable_bytes_per_gpu(gpu, setup.reserve)
    weights = serving.served_weight_bytes(
        shape, setup.weights_dtype, setup.group_size, stored_bytes if from_files else None
    )
    weights_per_gpu = serving.layout_weight_bytes_per_gpu(
        shape, weights, setup.weights_dtype, t, setup.ep, setup.group_size
    )
    tokens, encoder_tokens = serving.cached_positions(shape, setup.prompt, setup.generate)
    kv_per_gpu = serving.kv_cache_bytes_per_gpu(shape, tokens, b, kv_dtype, t, encoder_tokens)
    state_per_gpu = serving.state_bytes_per_gpu(shape, b, kv_dtype, t)
    stepped = bool(memory.cache_steps(shape))  # no bytes per token: the cache at P + G, the context by bisection
    held = serving.bytes_moved_per_gpu(weights_per_gpu, kv_per_gpu + state_per_gpu)  # what decode reads
    prefill = serving.prefill_roofline(shape, step, weights_per_gpu, peak, bandwidth)
    decode = serving.decode_roofline(shape, step, held, peak, bandwidth)
    if step is not setup:  # the memory: every micro-batch's cache, on the fullest stage
        kv_per_gpu = serving.kv_cache_bytes_per_gpu(shape, tokens, held_sequences, kv_dtype, t, encoder_tokens)
        state_per_gpu = serving.state_bytes_per_gpu(shape, held_sequences, kv_dtype, t)
    layout_weights = weights_per_gpu  # summed over the stages: what serve_expected splits
    weights_per_gpu, kv_per_gpu, state_per_gpu = (
        on_stage(weights_per_gpu),
        on_stage(kv_per_gpu),
        on_stage(state_per_gpu),
    )
    held = serving.bytes_moved_per_gpu(weights_per_gpu, kv_per_gpu + state_per_gpu)
    budget = serving.kv_budget_bytes_per_gpu(usable, weights_per_gpu)
    rates = rates or expected.table_rates(
        gpu, serving.compute_dtype(setup.weights_dtype, gpu, shape), setup.fp8_attention
    )
    lines = None
    if explained:
        from tfcost.reports.explain import serve_lines  # the working's module: only for --explain

        lines = serve_lines(shape, setup, weights, weights_per_gpu, kv_per_gpu, prefill, decode, peak, bandwidth)
    return ServeReport(
        explain=lines,
        model=shape.name,
        source=shape.source,
        gpu=gpu.name,
        setup=setup,
        compute_dtype=serving.compute_dtype(setup.weights_dtype, gpu, shape),
        weights_format=serving.weights_format(shape, setup.weights_dtype, from_files),
        inputs=ServeInputs(
            parameters=params.total_params(shape),
            context=setup.context,
            kv_heads_per_gpu=serving.kv_heads_per_gpu(shape, t),
            peak_flops_per_s=peak,
            bandwidth_bytes_per_s=bandwidth,
            usable_bytes_per_gpu=usable,
        ),
        memory=ServeMemory(
            weights_bytes=weights,
            weights_bytes_per_gpu=weights_per_gpu,
            kv_cache_bytes_per_token=None if stepped else memory.kv_cache_bytes_per_token(shape, kv_dtype),
            kv_cache_bytes=memory.kv_cache_bytes(shape, tokens, setup.batch, kv_dtype, encoder_tokens),
            kv_cache_bytes_per_gpu=kv_per_gpu,
            state_bytes=memory.state_bytes(shape, setup.batch, kv_dtype),
            state_bytes_per_gpu=state_per_gpu,
            total_bytes_per_gpu=held,
            fits=held <= usable,
            kv_cache_note=stepped_cache_note(shape, tokens),
        ),
        max_batch=ranks
        * serving.max_batch(
            budget,
            on_stage(serving.kv_cache_bytes_per_gpu(shape, tokens, 1, kv_dtype, t, encoder_tokens)),
            on_stage(serving.state_bytes_per_gpu(shape, 1, kv_dtype, t)),
        ),
        max_context=serving.stepped_max_context(shape, budget, held_sequences, kv_dtype, t, state_per_gpu)
        if stepped
        else serving.max_context(
            budget,
            on_stage(serving.kv_cache_bytes_per_gpu(shape, 1, held_sequences, kv_dtype, t)),
            state_per_gpu,
            shape.max_seq_len,
        ),
        model_max_context=shape.max_seq_len,
        latency=latency(prefill, decode, setup.batch, setup.prompt),
        expected=serve_expected(
            shape, setup, rates, engine_memory.engine_usable_bytes(gpu, setup.reserve), layout_weights
        ),
        load=serve_load(shape, gpu, setup, rates, layout_weights) if setup.under_load else None,
        profile=profile,
    )


def serve_load(
    shape: ModelShape, gpu: GpuSpec, setup: ServingSetup, rates: expected.EngineRates, weights_per_gpu: int
) -> ServeLoad:
    """The load's simulated benchmark (tfcost.costs.scheduler) on one replica, its KV capacity that of the engine
    profiled at its step budget (vLLM profiles max_num_batched_tokens tokens: ceil(budget / P') prompts of
    P' = min(P, budget) tokens stand for them), and its tokens' price and energy (tfcost.costs.energy)."""
    if setup.pp > 1 or serving.attention_ranks(setup.gpus, setup.ep) > 1:
        raise UsageError("--concurrency and --rate model one tensor-parallel replica: not with --pp or --ep > --gpus")
    if serving.is_encoder_decoder(shape):
        raise UsageError(f"{shape.name} is an encoder-decoder model: --concurrency and --rate price decoder-only ones")
    if setup.rate is None and setup.concurrency is None:
        raise UsageError("give --concurrency or --rate")
    chunk = min(setup.prompt, setup.max_num_batched_tokens)  # the profile run's tokens: one step's budget
    profiled = setup.model_copy(update={"prompt": chunk, "batch": ceil_div(setup.max_num_batched_tokens, chunk)})
    engine = serve_expected(
        shape, profiled, rates, engine_memory.engine_usable_bytes(gpu, setup.reserve), weights_per_gpu
    )
    capacity = engine.max_kv_tokens
    pricer = scheduler.StepPricer(shape, setup, rates, weights_per_gpu)
    # A model with a recurrent state holds one a sequence: the engine's largest batch at P + G bounds them.
    states = engine.max_batch if pricer.state_per_sequence > 0 else None
    pools = setup.pools
    if pools is None:
        run = scheduler.simulate(pricer, setup, capacity, states)
    else:  # both pools on the same layout: the same steps and KV capacity a replica
        run = scheduler.simulate_disaggregated(pricer, pricer, setup, (pools[0], capacity), (pools[1], capacity))
    replica = serving.stage_gpus(setup.gpus, setup.ep)
    gpus = replica * run.replicas
    speculative = scheduler.speculative_setting(setup)
    decode_busy = run.busy - run.prefill_busy
    prefill_share = run.prefill_busy / run.busy if run.busy else 0.0
    money: dict[str, float] = {}
    if setup.price_per_gpu_hour is not None:  # idle time split as the busy time is
        cost = energy.dollars(setup.price_per_gpu_hour, gpus, run.duration)
        money = {
            "usd_per_million_input_tokens": energy.per_million(cost * prefill_share, run.input_tokens),
            "usd_per_million_output_tokens": energy.per_million(cost * (1 - prefill_share), run.output_tokens),
            "usd_per_million_tokens": energy.per_million(cost, run.input_tokens + run.output_tokens),
        }
    joules = energy.busy_joules(gpu, replica, run.prefill_busy, decode_busy)
    power: dict[str, float | str] = {}
    if joules is not None:
        power = {
            "joules_per_input_token": joules[0] / run.input_tokens,
            "joules_per_output_token": joules[1] / run.output_tokens,
            "kwh_per_million_input_tokens": energy.per_million(joules[0], run.input_tokens) / energy.J_PER_KWH,
            "kwh_per_million_output_tokens": energy.per_million(joules[1], run.output_tokens) / energy.J_PER_KWH,
            "power_model": f"{gpu.board_power_w:g} W a GPU: {energy.POWER_SOURCE}",
        }
        if setup.grid_gco2_per_kwh is not None:
            for part, spent, tokens in (
                ("input", joules[0], run.input_tokens),
                ("output", joules[1], run.output_tokens),
            ):
                kwh_per_million = energy.per_million(spent, tokens) / energy.J_PER_KWH
                power[f"gco2_per_million_{part}_tokens"] = kwh_per_million * setup.grid_gco2_per_kwh
    ms = 1000.0
    load = (
        f"closed loop, concurrency {setup.concurrency}"
        if setup.concurrency is not None
        else f"Poisson arrivals, {setup.rate:g} requests/s"
    )
    if pools is not None:
        load += f"; disaggregated: {pools[0]} prefill + {pools[1]} decode replicas of {replica} GPUs"
    user_rates = [
        (generate - 1) / (e2e - ttft)
        for generate, e2e, ttft in zip(run.generates, run.e2e, run.ttft, strict=True)
        if generate > 1 and e2e > ttft
    ]
    return ServeLoad(
        load=load,
        requests=run.requests,
        ttft_p50_ms=scheduler.percentile(run.ttft, 0.5) * ms,
        ttft_p90_ms=scheduler.percentile(run.ttft, 0.9) * ms,
        ttft_p99_ms=scheduler.percentile(run.ttft, 0.99) * ms,
        ttft_mean_ms=scheduler.mean(run.ttft) * ms,
        tpot_p50_ms=scheduler.percentile(run.tpot, 0.5) * ms,
        tpot_p90_ms=scheduler.percentile(run.tpot, 0.9) * ms,
        tpot_p99_ms=scheduler.percentile(run.tpot, 0.99) * ms,
        tpot_mean_ms=scheduler.mean(run.tpot) * ms,
        itl_p50_ms=scheduler.percentile(run.itl, 0.5) * ms,
        itl_p90_ms=scheduler.percentile(run.itl, 0.9) * ms,
        itl_p99_ms=scheduler.percentile(run.itl, 0.99) * ms,
        e2e_p50_ms=scheduler.percentile(run.e2e, 0.5) * ms,
        e2e_p90_ms=scheduler.percentile(run.e2e, 0.9) * ms,
        e2e_p99_ms=scheduler.percentile(run.e2e, 0.99) * ms,
        e2e_mean_ms=scheduler.mean(run.e2e) * ms,
        queueing_p50_ms=scheduler.percentile(run.queueing, 0.5) * ms,
        queueing_p90_ms=scheduler.percentile(run.queueing, 0.9) * ms,
        queueing_p99_ms=scheduler.percentile(run.queueing, 0.99) * ms,
        duration_s=run.duration,
        request_throughput_per_s=run.requests / run.duration,
        output_tokens_per_s=run.output_tokens / run.duration,
        total_tokens_per_s=(run.input_tokens + run.output_tokens) / run.duration,
        output_tokens_per_s_per_gpu=run.output_tokens / run.duration / gpus,
        output_tokens_per_s_per_user=scheduler.mean(user_rates),
        mean_batch=run.mean_batch,
        busy_share=run.busy / run.duration / run.replicas,
        prefill_share=prefill_share,
        kv_capacity_tokens=capacity,
        speculative=None if speculative is None else f"{setup.speculative}, K = {speculative[0]} drafted tokens a step",
        acceptance=None if speculative is None else speculative[1],
        expected_tokens_per_step=None if speculative is None else scheduler.tokens_per_step(*speculative),
        tokens_per_step=run.tokens_per_step,
        assumptions=scheduler.ASSUMPTIONS,
        **money,
        **power,
    )


def latency(prefill: serving.Roofline, decode: serving.Roofline, batch: int, prompt: int) -> ServeLatency:
    """The roofline bound of a prefill and a decode step, as times and throughputs."""
    return ServeLatency(
        prefill_flops_per_gpu=prefill.flops_per_gpu,
        prefill_bytes_per_gpu=prefill.bytes_per_gpu,
        prefill_ms=milliseconds(prefill.seconds),
        prefill_bound=bound(prefill.compute_bound),
        prefill_tokens_per_s=hardware.achieved_per_s(batch * prompt, prefill.seconds),
        decode_flops_per_gpu=decode.flops_per_gpu,
        decode_bytes_per_gpu=decode.bytes_per_gpu,
        decode_ms_per_token=milliseconds(decode.seconds),
        decode_bound=bound(decode.compute_bound),
        decode_tokens_per_s=hardware.achieved_per_s(batch, decode.seconds),
        ttft_ms=milliseconds(prefill.seconds),
        tpot_ms=milliseconds(decode.seconds),
        tokens_per_s_per_sequence=hardware.achieved_per_s(1, decode.seconds),
        tokens_per_s=hardware.achieved_per_s(batch, decode.seconds),
    )


def serve_expected(
    shape: ModelShape, setup: ServingSetup, rates: expected.EngineRates, usable: int, weights_per_gpu: int
) -> ServeExpected:
    """The expected serving times and memory: tfcost.costs.expected's terms added to the kernels' time at the rates
    reached. The KV cache is counted in whole blocks, as a paged engine allocates it.

    With pipeline or expert parallelism (setup.pp, setup.ep; `weights_per_gpu` summed over one GPU of each stage,
    serving.layout_weight_bytes_per_gpu): the B sequences are split over the attention ranks (ep / t of them) and, in
    each, over one micro-batch in flight per stage; each stage does its layers' share of the stack's work
    (expected.pipeline_seconds), and memory is that of the fullest stage."""
    t, kv_dtype, pp = setup.gpus, setup.kv_dtype, setup.pp
    ranks = serving.attention_ranks(t, setup.ep)
    held_sequences, in_flight, b = serving.step_sequences(setup)  # b: one forward step's sequences (B: pp = ep = 1)
    expert_gpus = serving.stage_gpus(t, setup.ep)
    kv_tokens = expected.allocated_kv_tokens(setup.context, setup.kv_block)
    kv_per_gpu = kv_cache_bytes_per_gpu(shape, kv_tokens, b, kv_dtype, t)
    prompt_kv = kv_cache_bytes_per_gpu(shape, setup.prompt, b, kv_dtype, t)
    read_as = serving.kernel_weights_dtype(shape, setup.weights_dtype)
    quantized = serving.share_per_gpu(quantized_params(shape, read_as), t)
    dequant = expected.dequant_seconds(quantized, read_as, rates)
    floor = expected.step_floor_seconds(shape, rates)

    # The weights split by how a step reads them: the output head (a one-row matmul per sequence, its own
    # roofline), the lookup tables (B rows gathered, not streamed) and the layers' matrices.
    head_elements = head_weight_elements(shape)
    element_bytes = expected.table_element_bytes(read_as)
    head_bytes = serving.share_per_gpu(head_elements * element_bytes, t)
    lookup_bytes = serving.share_per_gpu(lookup_table_elements(shape) * element_bytes, t)
    layer_weights = max(weights_per_gpu - head_bytes - lookup_bytes, 0)
    head_flops = serving.share_per_gpu(2 * head_elements * b, t)
    decoder_only = not serving.is_encoder_decoder(shape)

    # Routed experts no token picks are not read (uniform routing): a decode step of B tokens, a prefill of B x P;
    # with expert parallelism every rank's tokens meet a GPU's E / ep experts.
    decode_unread = unread_expert_bytes_per_gpu(shape, setup.weights_dtype, b * ranks, expert_gpus, setup.group_size)
    prefill_unread = unread_expert_bytes_per_gpu(
        shape, setup.weights_dtype, b * setup.prompt * ranks, expert_gpus, setup.group_size
    )
    step_setup = setup if b == setup.batch else setup.model_copy(update={"batch": b})
    prefill_flops = serving.prefill_flops(shape, setup.prompt, b) + serving.images_prefill_flops(shape, step_setup)
    prefill_flops = serving.share_per_gpu(prefill_flops, t)
    prefill_attention = serving.share_per_gpu(b * attention_flops(shape, setup.prompt), t)
    prefill_head = expected.head_seconds(shape, head_flops, head_bytes, rates)
    prefill_kernels = (
        expected.phase_seconds(
            prefill_flops - head_flops,
            layer_weights - prefill_unread + prompt_kv,
            rates,
            prefill_attention if decoder_only else 0,
            rows=b * setup.prompt,
        )
        + prefill_head
    )
    prefill_allreduce = allreduce_seconds(shape, b * setup.prompt, setup, rates)
    prefill_all_to_all = expected.all_to_all_seconds(shape, ceil_div(b * setup.prompt, t), setup.ep, rates)
    prefill_s = prefill_kernels + dequant + prefill_allreduce + floor
    if setup.trt_session:  # the context step's host work in TensorRT-LLM's GptSession, no CUDA graph
        prefill_s += expected.session_context_host_seconds(shape)

    # On the layout: a step adds the expert all-to-all and passes through the pipeline's stages, each its layers'
    # share, the head and its kernels on the last (expected.pipeline_seconds); pp = ep = 1 leaves it as it is.
    stages = serving.stage_layers(shape.n_layers, pp)
    across = expected.stage_boundaries_across_nodes(pp, expert_gpus, rates)
    end_floor = expected.KERNELS_OUTSIDE_LAYERS * rates.kernel_floor_s + rates.step_fixed_s

    def on_layout(step_s: float, head_s: float, tokens: int, a2a_s: float, per_token: bool) -> float:
        if setup.ep > 1:
            step_s += a2a_s
        if pp == 1:
            return step_s
        send = {crosses: expected.pipeline_send_seconds(shape, tokens, rates, crosses) for crosses in set(across)}
        sends = [send[crosses] for crosses in across]  # two kinds of boundary: priced once each
        one_pass, slowest = expected.pipeline_seconds(
            step_s - head_s - end_floor, head_s + end_floor, stages, shape.n_layers, sends
        )
        if per_token:  # a sequence's next token
            return expected.pipeline_token_seconds(one_pass, slowest, in_flight)
        return expected.pipeline_batch_seconds(one_pass, slowest, in_flight)  # every micro-batch's prompts

    prefill_s = on_layout(prefill_s, prefill_head, b * setup.prompt, prefill_all_to_all, per_token=False)
    state_per_gpu = state_bytes_per_gpu(shape, b, kv_dtype, t)  # read and written once a step
    decode_stream_s = expected.weights_stream_seconds(shape, layer_weights - decode_unread, rates)
    head_s = expected.head_seconds(shape, head_flops, head_bytes, rates)
    reads = expected.cache_reads_per_decode(shape, t, setup.gqa_decode)

    def decode_step(context: int) -> tuple[int, int, int, float]:
        """One decode step at `context`: its FLOPs and attention FLOPs per GPU, its cache bytes, its kernels' time."""
        flops = serving.share_per_gpu(serving.decode_step_flops(shape, context, b), t)
        one_token = attention_flops(shape, context) - attention_flops(shape, context - 1)
        attention = serving.share_per_gpu(b * one_token, t) if decoder_only else 0
        cache = kv_cache_bytes_per_gpu(shape, expected.allocated_kv_tokens(context, setup.kv_block), b, kv_dtype, t)
        cache_read = cache * reads  # bytes the attention kernel streams: each head's cache `reads` times
        kernels = expected.split_step_seconds(
            flops - head_flops - attention, decode_stream_s, attention, cache_read + state_per_gpu, rates, rows=b
        )
        return flops, attention, cache, kernels + head_s

    decode_flops, _, _, decode_kernels = decode_step(setup.context)
    decode_bytes = layer_weights - decode_unread + head_bytes + kv_per_gpu + state_per_gpu
    decode_allreduce = allreduce_seconds(shape, b, setup, rates)
    decode_all_to_all = expected.all_to_all_seconds(shape, ceil_div(b, t), setup.ep, rates)
    decode_s = decode_kernels + dequant + decode_allreduce + floor
    decode_s = on_layout(decode_s, head_s, b, decode_all_to_all, per_token=True)

    # A whole run (issue 22): a static batch's G steps at their mean context after the prefill; and in-flight
    # batching's steady step at concurrency B, B decode tokens and B x P / G prompt tokens in one step, the
    # projections and attention each at its own roofline (expected.split_step_seconds).
    mean_context = expected.mean_decode_context(setup.prompt, setup.generate)
    mean_flops, mean_attention, mean_cache, mean_kernels = decode_step(mean_context)
    decode_mean_s = mean_kernels + dequant + decode_allreduce + floor
    decode_mean_s = on_layout(decode_mean_s, head_s, b, decode_all_to_all, per_token=True)
    run_s = prefill_s + setup.generate * decode_mean_s
    prompt_rows = expected.prompt_tokens_per_step(b, setup.prompt, setup.generate)
    rows = b + prompt_rows
    prompt_share = prompt_rows / setup.prompt  # prompts prefilled per step, B / G
    linear_per_token = (mean_flops - mean_attention - head_flops) / b
    inflight_unread = unread_expert_bytes_per_gpu(
        shape, setup.weights_dtype, max(round(rows), 1) * ranks, expert_gpus, setup.group_size
    )
    inflight_head = expected.head_seconds(shape, head_flops * (1 + prompt_share / b), head_bytes, rates)
    inflight_kernels = (
        expected.split_step_seconds(
            linear_per_token * rows,
            expected.weights_stream_seconds(shape, layer_weights - inflight_unread, rates),
            mean_attention + prompt_share * (prefill_attention / b if decoder_only else 0),
            mean_cache * reads + state_per_gpu + prompt_share * prompt_kv / b,
            rates,
            rows=max(round(rows), 1),
        )
        + inflight_head
    )
    inflight_rows = max(round(rows), 1)
    inflight_allreduce = allreduce_seconds(shape, inflight_rows, setup, rates)
    inflight_s = inflight_kernels + dequant + inflight_allreduce + floor
    inflight_all_to_all = expected.all_to_all_seconds(shape, ceil_div(inflight_rows, t), setup.ep, rates)
    inflight_s = on_layout(inflight_s, inflight_head, inflight_rows, inflight_all_to_all, per_token=True)

    # vLLM's profile run (setup.vllm_profile): B x P tokens stand for max_num_batched_tokens, split over its dummy
    # requests (one logits row each); FP8 weights run fused_moe's FP8 path (counted wherever the weights are FP8,
    # docs/serving.md).
    profile_tokens = b * setup.prompt
    workspace = vllm_profile_activation_bytes(
        setup.vllm_profile,
        shape,
        profile_tokens,
        engine_memory.profile_sequences(profile_tokens, setup.max_num_seqs),
        t,
        fp8_w8a8=read_as == "fp8",
    )
    if setup.nccl_record_stream:  # every all-reduced activation held to the end of the forward (vllm#2248)
        workspace += engine_memory.record_stream_held_bytes(shape, profile_tokens, t)
    kv_per_token = kv_cache_bytes_per_gpu(shape, 1, 1, kv_dtype, t)
    block_bytes = kv_per_token * setup.kv_block
    state_per_sequence = state_bytes_per_gpu(shape, 1, kv_dtype, t)
    blocks_per_sequence = ceil_div(setup.context, setup.kv_block)
    sequence_kv = blocks_per_sequence * block_bytes
    if memory.cache_steps(shape):  # no bytes per token to page in blocks: the cache at P + G
        sequence_kv = kv_cache_bytes_per_gpu(shape, setup.context, 1, kv_dtype, t)
    held_kv = kv_per_gpu + state_per_gpu
    if held_sequences != b:  # every micro-batch's cache stays on the GPU
        held_kv = kv_cache_bytes_per_gpu(shape, kv_tokens, held_sequences, kv_dtype, t)
        held_kv += state_bytes_per_gpu(shape, held_sequences, kv_dtype, t)

    def stage_part(whole: int, layers: int) -> int:
        """A stage's share of what the layers hold (serving.stage_share); all of it without a pipeline."""
        return whole if pp == 1 else serving.stage_share(whole, layers, shape.n_layers)

    stage_weights = [stage_part(layer_weights, layers) for layers in stages] if pp > 1 else [weights_per_gpu]
    stage_weights[0] += lookup_bytes if pp > 1 else 0  # the embedding on the first stage, the head on the last
    stage_weights[-1] += head_bytes if pp > 1 else 0
    totals, fitting, batches, capacities = [], [], [], []
    # Stages alike in layers and weights hold alike: each kind is worked out once (max, min and all see the same).
    for layers, weights in dict.fromkeys(zip(stages, stage_weights, strict=True)):
        totals.append(weights + rates.cuda_context_bytes + workspace + stage_part(held_kv, layers))
        budget = engine_memory.kv_pool_bytes(
            setup.kv_pool, usable, 1 - setup.reserve, weights, workspace, rates.cuda_context_bytes
        )
        fitting.append(stage_part(held_kv, layers) <= budget)  # the engine's pool holds them (vLLM's: usable - fixed)
        batches.append(
            serving.max_batch(budget, stage_part(sequence_kv, layers), stage_part(state_per_sequence, layers))
        )
        if memory.cache_steps(shape):  # capacity by bisection (the whole stack's cache, not a stage's)
            capacities.append(serving.stepped_max_context(shape, budget, 1, kv_dtype, t, state_per_sequence))
        else:  # a model with no KV cache (pure Mamba) has no blocks
            block = stage_part(block_bytes, layers)
            capacities.append((budget // block if block else 0) * setup.kv_block)
    total, max_batch, max_kv_tokens = max(totals), min(batches), min(capacities)
    return ServeExpected(
        prefill_flops_per_gpu=prefill_flops,
        prefill_bytes_per_gpu=layer_weights - prefill_unread + head_bytes + prompt_kv,
        prefill_ms=milliseconds(prefill_s),
        prefill_bound=bound(
            prefill_flops / rates.matmul_flops_per_s
            >= (layer_weights - prefill_unread + prompt_kv) / rates.stream_bytes_per_s
        ),
        prefill_tokens_per_s=hardware.achieved_per_s(setup.batch * setup.prompt, prefill_s),
        decode_flops_per_gpu=decode_flops,
        decode_bytes_per_gpu=decode_bytes,
        decode_ms_per_token=milliseconds(decode_s),
        decode_bound=bound(decode_flops / rates.matmul_flops_per_s >= decode_bytes / rates.stream_bytes_per_s),
        decode_tokens_per_s=hardware.achieved_per_s(setup.batch, decode_s),
        ttft_ms=milliseconds(prefill_s),
        tpot_ms=milliseconds(decode_s),
        tokens_per_s_per_sequence=hardware.achieved_per_s(1, decode_s),
        tokens_per_s=hardware.achieved_per_s(setup.batch, decode_s),
        prefill_kernels_ms=milliseconds(prefill_kernels),
        prefill_dequant_ms=milliseconds(dequant),
        prefill_allreduce_ms=milliseconds(prefill_allreduce),
        decode_kernels_ms=milliseconds(decode_kernels),
        decode_dequant_ms=milliseconds(dequant),
        decode_allreduce_ms=milliseconds(decode_allreduce),
        prefill_all_to_all_ms=milliseconds(prefill_all_to_all) if setup.ep > 1 else None,
        decode_all_to_all_ms=milliseconds(decode_all_to_all) if setup.ep > 1 else None,
        pipeline_send_ms=milliseconds(
            sum(expected.pipeline_send_seconds(shape, b, rates, crosses) for crosses in across)
        )
        if pp > 1
        else None,
        step_floor_ms=milliseconds(floor),
        decode_mean_ms_per_token=milliseconds(decode_mean_s),
        run_ms=milliseconds(run_s),
        run_tokens_per_s=hardware.achieved_per_s(setup.batch * setup.generate, run_s),
        inflight_step_ms=milliseconds(inflight_s),
        inflight_tokens_per_s=hardware.achieved_per_s(setup.batch, inflight_s),
        stream_bytes_per_s=rates.stream_bytes_per_s,
        matmul_flops_per_s=rates.matmul_flops_per_s,
        kv_tokens_per_sequence=kv_tokens,
        cuda_context_bytes=rates.cuda_context_bytes,
        workspace_bytes=workspace,
        total_bytes_per_gpu=total,
        fits=all(fitting),
        max_batch=max_batch * ranks,
        max_kv_tokens=max_kv_tokens,
        sources=rates.sources,
    )


def allreduce_seconds(shape: ModelShape, tokens: int, setup: ServingSetup, rates: expected.EngineRates) -> float:
    """The tensor-parallel all-reduces of a forward over `tokens` tokens: 2 a layer, or, with expert parallelism,
    the MoE layers' replaced by the all-to-all (expected.expert_parallel_allreduce_seconds)."""
    if setup.ep == 1:
        return expected.tensor_parallel_seconds(shape, tokens, setup.gpus, rates)
    return expected.expert_parallel_allreduce_seconds(shape, tokens, setup.gpus, rates)


def with_intervals(report: ServeReport) -> ServeReport:
    """The report with its expected TTFT, TPOT, in-flight tokens/s and KV capacity given their error bars."""
    from tfcost.costs.intervals import serve_intervals

    framework = report.framework.name if report.framework is not None else None
    e = report.expected
    bars = serve_intervals(e.ttft_ms, e.tpot_ms, e.inflight_tokens_per_s, e.max_kv_tokens, framework)
    return report.model_copy(update={"intervals": bars})
