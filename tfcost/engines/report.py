"""What the transformers engine reports, and `tfcost check`: the two engines side by side.

The engine's totals keep the analytic report's keys (params.total, flops.forward_per_sequence, kv_cache.bytes_per_token,
...) so that a script reads either the same way; `engine` says which answered. Pure: numbers in, report objects out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from pydantic import Field

from tfcost.core import flops, memory
from tfcost.reports.base import PricedUnder
from tfcost.reports.estimate import Estimate, Section, quantity
from tfcost.reports.explain import Line
from tfcost.reports.serve import ServeLatency
from tfcost.schema import GpuSpec, ServingSetup, TrainingSetup, Workload
from tfcost.units import UNBOUNDED_CONTEXT, Unit

if TYPE_CHECKING:
    from tfcost.engines.hf import EngineTotals, SavedBytes


class EngineParams(Section):
    total: int = quantity("total parameters (transformers: sum of model.parameters())", "count")


class EngineFlops(Section):
    forward_per_sequence: int = quantity("forward, one sequence (FlopCounterMode)", "flops")
    training_per_sequence: int = quantity("training, one sequence (3x forward)", "flops")


class EngineKvCache(Section):
    bytes_per_token: int = quantity("KV cache per token (what grows with T)", "bytes")
    state_bytes: int = quantity("recurrent state, batch (what does not grow with T)", "bytes")
    bytes: int = quantity("KV cache, batch x T tokens (what grows with T)", "bytes")


class EngineEstimate(Section):
    """`tfcost estimate` answered by the transformers engine: the totals it measures, under the analytic keys."""

    model: str
    source: str | None
    engine: str = "transformers"
    workload: Workload
    params: EngineParams
    flops: EngineFlops
    kv_cache: EngineKvCache


ENGINE_SECTIONS: dict[str, str] = {"params": "Parameters", "flops": "FLOPs", "kv_cache": "Cache"}
ENGINE_NOTE = (
    "engine: transformers (the model built from its config on the meta device, no weights: parameters summed, "
    "forward FLOPs counted by FlopCounterMode, the cache it returns measured at T and T + 1). train and serve "
    "use these totals; per-part breakdowns and the score matrix need tfcost's own reader."
)


def engine_estimate(name: str, source: str | None, totals: EngineTotals, workload: Workload) -> EngineEstimate:
    """The engine's totals for one model under one workload (T and dtype as measured, B sequences)."""
    return EngineEstimate(
        model=name,
        source=source,
        workload=workload,
        params=EngineParams(total=totals.params_total),
        flops=EngineFlops(
            forward_per_sequence=totals.forward_flops,
            training_per_sequence=flops.training_flops_from_forward(totals.forward_flops),
        ),
        kv_cache=EngineKvCache(
            bytes_per_token=totals.kv_bytes_per_token,
            state_bytes=memory.measured_state_bytes(totals.state_bytes, workload.batch),
            bytes=memory.measured_cache_bytes(totals.kv_bytes_per_token, workload.seq_len, workload.batch),
        ),
    )


class CheckRow(Section):
    quantity: str
    label: str
    unit: Unit
    analytic: int
    transformers: int
    difference: int  # transformers - analytic


class CheckReport(Section):
    """`tfcost check`: tfcost's own reader against transformers' implementation, quantity by quantity."""

    model: str
    source: str | None
    workload: Workload
    rows: list[CheckRow]
    agree: bool


# The quantities both engines report, by their shared key, in the same terms (KV apart from the fixed state).
CHECKED = (
    "params.total",
    "flops.forward_per_sequence",
    "kv_cache.bytes_per_token",
    "kv_cache.bytes",
    "kv_cache.state_bytes",
)


# A cache that steps every m positions (compressed attention) has no per-token part to set beside the engine's
# (its growth from T to T + 1): the two are compared on what is held after T tokens, cache and state together.
HELD = "kv_cache.held_bytes"
HELD_LABEL = "KV cache and state held after T tokens (the cache steps every few tokens: no per-token split)"


# Past a sliding window the cache stops growing: the engine, which takes the growth from T to T + 1 as the per-token
# part, then calls it all fixed state. Both are compared on what is held between steps, where a sliding layer keeps
# W - 1 keys (memory.kv_cache_held_between_steps_bytes says why, with transformers' source).
WINDOW_LABEL = "KV cache and state held between steps (a sliding window full: W - 1 keys per sliding layer)"


def check_report(analytic: Estimate, engine: EngineEstimate, held_between_steps: int | None = None) -> CheckReport:
    """Each shared quantity from both engines, with transformers' value minus tfcost's; for a stepped cache, the
    bytes held after T tokens in place of the per-token split; past a sliding window (`held_between_steps`, the
    analytic bytes held between steps), those bytes against the cache transformers returns."""
    windowed = held_between_steps is not None
    stepped = analytic.kv_cache.bytes_per_token is None or windowed
    rows = []
    for key in CHECKED:
        if stepped and key.startswith("kv_cache."):
            continue
        section, name = key.split(".")
        ours, theirs = getattr(analytic, section), getattr(engine, section)
        field = type(theirs).model_fields[name]
        extra = field.json_schema_extra
        assert isinstance(extra, dict)  # every quantity() field carries its unit
        unit = cast(Unit, extra["unit"])
        mine, real = getattr(ours, name), getattr(theirs, name)
        rows.append(
            CheckRow(quantity=key, label=field.description or key, unit=unit, analytic=mine, transformers=real,
                     difference=real - mine)
        )  # fmt: skip
    if stepped:
        mine = (
            held_between_steps
            if held_between_steps is not None
            else analytic.kv_cache.bytes + (analytic.kv_cache.state_bytes)
        )
        real = engine.kv_cache.bytes + engine.kv_cache.state_bytes
        rows.append(
            CheckRow(quantity=HELD, label=WINDOW_LABEL if windowed else HELD_LABEL, unit="bytes", analytic=mine,
                     transformers=real, difference=real - mine)
        )  # fmt: skip
    return CheckReport(
        model=analytic.model,
        source=analytic.source,
        workload=analytic.workload,
        rows=rows,
        agree=all(row.difference == 0 for row in rows),
    )


# train and serve from the engine's totals ------------------------------------------------------------------------

ENGINE_TRAIN_NOTE = (
    "engine: transformers. Parameters summed and forward FLOPs counted by FlopCounterMode on the meta device "
    "(training = 3 x forward, full T x T scores); activations are the bytes autograd saves in one training forward "
    "of the model's eager implementation at the micro-batch, less the T x T scores under --flash (FlashAttention "
    "stores none). Model states: ZeRO Fig. 1 over N. tfcost's own reader adds tp/pp/cp/ep, recomputation, LoRA and "
    "the predicted step."
)
ENGINE_SERVE_NOTE = (
    "engine: transformers. Weights: N from the parameter sum (embeddings 16-bit under 8- and 4-bit weights); KV "
    "cache and state: the cache the model returns at P and P + 1 tokens. Prefill and decode FLOPs from "
    "FlopCounterMode's counts at P and P + 1, taken as a*T + b*T^2 (exact for attention and matmuls): causal prompt "
    "scores, the head for the last position only. The bound only: tfcost's own reader adds tensor parallelism and "
    "the expected engine time."
)


class EngineTrainInputs(Section):
    parameters: int = quantity("N, parameters (transformers: sum of model.parameters())", "count")
    tokens: int = quantity("D, training tokens", "count")
    seq_len: int = quantity("T, tokens per sequence", "count")
    training_per_sequence: int = quantity("training, one T-token sequence (3x forward, FlopCounterMode)", "flops")
    data_parallel: int = quantity("N_d, data-parallel replicas = gpus", "count")
    global_batch: int = quantity("B, sequences per step = b x N_d x m", "count")
    bytes_per_param: dict[str, int] = quantity("bytes per parameter, before sharding", "count")
    peak_flops_per_s: float = quantity("peak per GPU (dense)", "flops_per_s")
    gpu_memory_bytes: int = quantity("memory per GPU", "bytes")


class EngineTrainFlops(Section):
    total: int = quantity("model FLOPs: training per sequence x D / T", "flops")


class EngineTrainTime(Section):
    throughput_from: str = quantity("throughput from", "text")
    days: float = quantity("wall clock", "days")
    gpu_hours: float = quantity("GPU-hours = wall clock x gpus", "hours")
    model_utilization: float = quantity("MFU = model FLOP/s / (gpus x peak)", "fraction")
    cost: float | None = quantity("cost = GPU-hours x price", "usd")


class EngineTrainMemory(Section):
    weights_bytes: int = quantity("weights = N x bytes [/ N_d, + 2 live layers at ZeRO-3]", "bytes")
    gradients_bytes: int = quantity("gradients = N x bytes [/ N_d at ZeRO-2+]", "bytes")
    optimizer_bytes: int = quantity("optimizer states = N x bytes [/ N_d at ZeRO-1+]", "bytes")
    activations_saved_bytes: int = quantity("activations autograd saves, eager implementation, b sequences", "bytes")
    activations_bytes: int = quantity("activations (without the T x T scores under --flash)", "bytes")
    total_bytes: int = quantity("total = weights + gradients + optimizer + activations", "bytes")
    cuda_context_bytes: int = quantity("CUDA context (assumed; --cuda-context-gib)", "bytes")
    allocator_reserve_bytes: int = quantity("allocator reserve (assumed share; --allocator-reserve)", "bytes")
    fits: bool = quantity("fits: total + context + reserve <= the GPU's memory", "text")


class EngineAnswer(Section, PricedUnder):
    """What the engine's train and serve reports share: the model, where it came from, the GPU, and the working."""

    explain: list[Line] | None = Field(
        default=None,
        description="--explain: each quantity's formula, the measured numbers and the result",
        exclude_if=lambda lines: lines is None,  # only --explain adds the key to the JSON
    )
    model: str
    source: str | None
    engine: str = "transformers"
    gpu: str


class EngineTrainReport(EngineAnswer):
    """`tfcost train` answered by the transformers engine, from its totals and what autograd saves."""

    setup: TrainingSetup
    notes: dict[str, str] = Field(default_factory=dict, exclude=True)  # what the table says about the defaults
    inputs: EngineTrainInputs
    flops: EngineTrainFlops
    time: EngineTrainTime
    memory_per_gpu: EngineTrainMemory


ENGINE_TRAIN_SECTIONS: dict[str, str] = {
    "inputs": "Inputs",
    "flops": "Compute",
    "time": "Time",
    "memory_per_gpu": "Memory per GPU",
}


def engine_train(
    name: str,
    source: str | None,
    totals: EngineTotals,
    saved: SavedBytes,
    gpu: GpuSpec,
    setup: TrainingSetup,
    default_seq: int,
    explained: bool = False,
) -> EngineTrainReport:
    """The training core over the engine's totals: data parallel (and ZeRO) only, the time at the throughput
    given, memory from the parameter count and the activations autograd saves; `explained`: with the working."""
    from tfcost.costs import fit, parallel, throughput, training
    from tfcost.hardware import rates as hardware
    from tfcost.reports.explain import engine_train_lines
    from tfcost.reports.train import run_seconds

    peak = training.peak_flops_per_s(gpu, setup.precision)
    n = totals.params_total
    per_sequence = flops.training_flops_from_forward(totals.forward_flops)
    model_flops = training.training_flops_over(per_sequence, setup.seq_len, setup.tokens)
    throughput_from, seconds = run_seconds(setup, model_flops, model_flops, peak)
    hours = training.gpu_hours(seconds, setup.gpus)
    activations = training.measured_activation_bytes(saved.total, saved.scores, setup.flash)
    held = training.data_parallel_memory_per_gpu(n, totals.layer_params, activations, setup, totals.root_params)
    memory = hardware.memory_bytes(gpu)
    overhead = fit.overhead_bytes(memory, setup.cuda_context_gib, setup.allocator_reserve)
    lines = None
    if explained:
        mfu = training.run_mfu(setup)
        lines = engine_train_lines(
            setup, totals.forward_flops, model_flops, None if mfu is None else (seconds, peak, mfu), n, held,
            saved.total, saved.scores,
        )  # fmt: skip
    return EngineTrainReport(
        explain=lines,
        model=name,
        source=source,
        gpu=gpu.name,
        setup=setup,
        notes=training.defaults_notes_of(setup, training.chinchilla_optimal_tokens_of(n), default_seq),
        inputs=EngineTrainInputs(
            parameters=n,
            tokens=setup.tokens,
            seq_len=setup.seq_len,
            training_per_sequence=per_sequence,
            data_parallel=setup.data_parallel,
            global_batch=parallel.global_batch(setup),
            bytes_per_param=training.state_bytes_per_param(setup.precision, setup.optimizer),
            peak_flops_per_s=peak,
            gpu_memory_bytes=memory,
        ),
        flops=EngineTrainFlops(total=model_flops),
        time=EngineTrainTime(
            throughput_from=throughput_from,
            days=seconds / training.SECONDS_PER_DAY,
            gpu_hours=hours,
            model_utilization=throughput.utilization(model_flops, seconds, setup.gpus, peak),
            cost=None if setup.price_per_gpu_hour is None else training.training_cost(hours, setup.price_per_gpu_hour),
        ),
        memory_per_gpu=EngineTrainMemory(
            weights_bytes=held["weights"],
            gradients_bytes=held["gradients"],
            optimizer_bytes=held["optimizer"],
            activations_saved_bytes=saved.total,
            activations_bytes=held["activations"],
            total_bytes=held["total"],
            cuda_context_bytes=overhead["cuda_context"],
            allocator_reserve_bytes=overhead["allocator_reserve"],
            fits=fit.fits(held["total"], overhead, memory),
        ),
    )


class EngineServeInputs(Section):
    parameters: int = quantity("N, parameters (transformers: sum of model.parameters())", "count")
    context: int = quantity("context per sequence, P + G", "count")
    peak_flops_per_s: float = quantity("reachable FLOP/s per GPU = peak x compute efficiency", "flops_per_s")
    bandwidth_bytes_per_s: float = quantity("reachable bandwidth = peak x memory efficiency", "bytes_per_s")
    usable_bytes_per_gpu: int = quantity("usable memory per GPU = memory x (1 - reserve)", "bytes")


class EngineServeMemory(Section):
    weights_bytes: int = quantity("weights", "bytes")
    kv_cache_bytes_per_token: int = quantity("KV cache per token (what grows with T)", "bytes")
    kv_cache_bytes: int = quantity("KV cache, B x (P + G) tokens", "bytes")
    state_bytes: int = quantity("recurrent state, B sequences (independent of context)", "bytes")
    total_bytes_per_gpu: int = quantity("weights + KV cache + state", "bytes")
    fits: bool = quantity("fits in the usable memory", "text")


class EngineServeReport(EngineAnswer):
    """`tfcost serve` answered by the transformers engine: memory, capacity and the roofline bound from its totals."""

    setup: ServingSetup
    compute_dtype: str
    weights_format: str
    inputs: EngineServeInputs
    memory: EngineServeMemory
    max_batch: int = quantity("largest batch at context P + G", "count")
    max_context: int = quantity("longest context at batch B (memory only)", "count")
    latency: ServeLatency = Field(description="bound: the roofline, the best any engine could do")


ENGINE_SERVE_SECTIONS: dict[str, str] = {
    "inputs": "Inputs",
    "memory": "Memory",
    "": "Capacity",
    "latency": "Bound (roofline)",
}


def engine_serve(
    name: str, source: str | None, totals: EngineTotals, gpu: GpuSpec, setup: ServingSetup, explained: bool = False
) -> EngineServeReport:
    """The serving core over the engine's totals, measured at T = P, on one GPU: memory = weights + KV x tokens
    + state x sequences, the largest batch and context from both, and the roofline prefill and decode;
    `explained`: with the working."""
    from tfcost.costs import serving
    from tfcost.reports.explain import engine_serve_lines
    from tfcost.reports.serve import latency

    assert setup.weights_dtype is not None  # the CLI makes it explicit: the engine reads no quantization_config
    b, prompt, context = setup.batch, setup.prompt, setup.context
    peak = serving.effective_peak_flops_per_s(gpu, setup.weights_dtype, setup.compute_efficiency)
    bandwidth = serving.effective_bandwidth_bytes_per_s(gpu, setup.memory_efficiency)
    usable = serving.usable_bytes_per_gpu(gpu, setup.reserve)
    weights = serving.weight_bytes_of(
        totals.params_total, totals.embedding_params, setup.weights_dtype, setup.group_size
    )
    per_token, state = totals.kv_bytes_per_token, totals.state_bytes
    kv = memory.measured_cache_bytes(per_token, context, b)
    states = memory.measured_state_bytes(state, b)
    held = serving.bytes_moved_per_gpu(weights, kv + states)
    budget = serving.kv_budget_bytes_per_gpu(usable, weights)
    a, row = serving.forward_coefficients(totals.forward_flops, totals.forward_flops_next, totals.seq_len)
    head = flops.matmul_flops(1, 1, totals.head_params)  # one position through the d x V head
    prefill = serving.roofline(
        serving.prefill_flops_of(a, row, head, prompt, b),
        serving.bytes_moved_per_gpu(weights, memory.measured_cache_bytes(per_token, prompt, b) + states),
        peak,
        bandwidth,
    )
    decode = serving.roofline(serving.decode_step_flops_of(a, row, context, b), held, peak, bandwidth)
    lines = None
    if explained:
        counts = (totals.seq_len, totals.forward_flops, totals.forward_flops_next)
        lines = engine_serve_lines(setup, counts, (a, row), head, prefill, decode, peak, bandwidth)
    return EngineServeReport(
        explain=lines,
        model=name,
        source=source,
        gpu=gpu.name,
        setup=setup,
        compute_dtype=serving.compute_dtype(setup.weights_dtype, gpu),
        weights_format=setup.weights_dtype,
        inputs=EngineServeInputs(
            parameters=totals.params_total,
            context=context,
            peak_flops_per_s=peak,
            bandwidth_bytes_per_s=bandwidth,
            usable_bytes_per_gpu=usable,
        ),
        memory=EngineServeMemory(
            weights_bytes=weights,
            kv_cache_bytes_per_token=per_token,
            kv_cache_bytes=kv,
            state_bytes=states,
            total_bytes_per_gpu=held,
            fits=held <= usable,
        ),
        max_batch=serving.max_batch(budget, memory.measured_cache_bytes(per_token, context, 1), state),
        max_context=serving.max_context(
            budget, memory.measured_cache_bytes(per_token, 1, b), states, totals.max_positions or UNBOUNDED_CONTEXT
        ),
        latency=latency(prefill, decode, b, prompt),
    )
