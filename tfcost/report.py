"""The result objects the CLI renders: every number of an estimate, computed by the core, in one place.

Each field's description is its label and its `unit` says how to print it, so the table, the JSON and the
comparison all fall out of the same object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from tfcost import (
    crossover,
    expected,
    finetune,
    fit,
    flops,
    hardware,
    memory,
    parallel,
    params,
    serving,
    step_time,
    throughput,
    training,
    weights,
)
from tfcost.blocks import layer_count
from tfcost.explain import Line, estimate_lines, serve_lines, train_lines
from tfcost.schema import GpuSpec, ModelShape, ServingSetup, TrainingSetup, Workload
from tfcost.units import TERA, Unit, ceil_div, milliseconds

if TYPE_CHECKING:
    from tfcost.presets import ModelSource


def quantity(label: str, unit: Unit) -> Any:
    """A reported number: its label and unit travel with it."""
    return Field(description=label, json_schema_extra={"unit": unit})


class Section(BaseModel):
    # Validators are built on first use, so a command builds only the reports it prints (estimate: 4 ms less).
    model_config = ConfigDict(frozen=True, defer_build=True)


class SourceNotes(Section):
    """What a model's config said that tfcost did not use: every report carries it."""

    ignored_fields: list[str] = Field(
        default_factory=list, description="config.json keys ignored (tfcost does not use them; --strict refuses)"
    )
    not_priced: list[str] = Field(
        default_factory=list, description="parts of a multimodal model left out of every figure (its towers)"
    )
    checkpoint_bytes: int | None = Field(
        default=None, description="a Hub checkpoint's stored bytes, from its model.safetensors.index.json"
    )
    checkpoint_bytes_estimate: int | None = Field(
        default=None,
        description="tfcost's bytes of the same weights as stored (16-bit, or its quantization), to set beside it",
    )
    explain: list[Line] | None = Field(
        default=None,
        description="--explain: each quantity's formula, the model's numbers and the result",
        exclude_if=lambda lines: lines is None,  # only --explain adds the key to the JSON
    )


ReportT = TypeVar("ReportT", bound=SourceNotes)


def with_source(report: ReportT, source: ModelSource) -> ReportT:
    """The report with its model source's notes."""
    notes: dict[str, Any] = {"ignored_fields": source.ignored_fields, "not_priced": source.not_priced}
    if source.checkpoint_bytes is not None:
        notes["checkpoint_bytes"] = source.checkpoint_bytes
        notes["checkpoint_bytes_estimate"] = weights.checkpoint_weight_bytes(source.shape)
    return report.model_copy(update=notes)


class ParamsReport(Section):
    total: int = quantity("total parameters", "count")
    active: int = quantity("active per token (MoE: k of E experts)", "count")
    embedding: int = quantity("embedding (incl. untied head)", "count")
    non_embedding: int = quantity("non-embedding N", "count")
    per_layer: int = quantity("per block", "count")
    breakdown: dict[str, int] = quantity("by part", "count")
    by_layer_kind: dict[str, int] = quantity("by layer kind (count x one layer)", "count")
    mtp: int | None = quantity("multi-token prediction modules (not in the total)", "count")

    @model_serializer(mode="wrap")
    def _mtp_where_present(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("mtp") is None:  # a model without MTP modules has no such key
            data.pop("mtp", None)
        return data


class FlopsReport(Section):
    six_n_per_token: int = quantity("training per token, 6N", "flops")
    attention_scores_per_token: int = quantity("attention scores per token, 6*L*T*d", "flops")
    forward_per_sequence: int = quantity("forward, one sequence (exact matmuls)", "flops")
    training_per_sequence: int = quantity("training, one sequence (3x forward)", "flops")
    forward_breakdown: dict[str, int] = quantity("forward by part", "flops")
    by_layer_kind: dict[str, int] = quantity("forward by layer kind", "flops")


class KvCacheReport(Section):
    bytes_per_token: int | None = quantity("KV cache per token", "bytes")  # None: the cache steps (note says so)
    bytes: int = quantity("KV cache, batch x T tokens", "bytes")
    state_bytes: int = quantity("recurrent state, batch (independent of T)", "bytes")
    note: str | None = Field(
        default=None,
        description="why there is no per-token figure: a cache that steps every m positions (stepped_cache_note)",
        exclude_if=lambda note: note is None,
    )


def stepped_cache_note(shape: ModelShape, tokens: int) -> str | None:
    """What to say of a cache that steps every m positions (memory.cache_steps: compressed attention), whose bytes
    per token are no fixed figure; None for every other cache."""
    steps = memory.cache_steps(shape)
    if not steps:
        return None
    every = " and ".join(f"{step:,}" for step in steps)
    return (
        f"The KV cache steps every {every} positions (compressed attention: one entry per window, the window not "
        "yet closed buffered, the raw keys of the sliding window only), so it has no fixed bytes per token: the "
        f"cache shown is what is held after {tokens:,} tokens, and the recurrent state is the fixed overlap state."
    )


class ScoreMatrixReport(Section):
    entries_per_head: int = quantity("score entries per head (T^2)", "count")
    bytes_per_layer: int = quantity("score matrices, one layer", "bytes")
    bytes: int = quantity("score matrices, all layers", "bytes")


class CrossoverReport(Section):
    """A crossover (tfcost.crossover.Crossover) with exact numbers only: T rounded down, the crossing as a fraction
    "p/q" where it is rational, the fixed cost it crosses, or the reason there is none."""

    model: str
    name: str
    label: str
    batch: int
    seq_len: int | None
    exact: str | None
    level: int
    reason: str | None


def crossover_reports(found: list[crossover.Crossover]) -> list[CrossoverReport]:
    return [
        CrossoverReport(
            model=c.model,
            name=c.name,
            label=c.label,
            batch=c.batch,
            seq_len=c.seq_len,
            exact=c.exact,
            level=c.level,
            reason=c.reason,
        )
        for c in found
    ]


class Estimate(SourceNotes):
    """Everything `tfcost estimate` reports for one model under one workload."""

    model: str
    source: str | None
    engine: str = "analytic"  # which engine answered; the transformers engine's report says "transformers"
    workload: Workload
    params: ParamsReport
    flops: FlopsReport
    kv_cache: KvCacheReport
    score_matrix: ScoreMatrixReport
    crossovers: list[CrossoverReport]  # the lesson's crossovers in T (tfcost.crossover), rounded down


SECTIONS: dict[str, str] = {
    "params": "Parameters",
    "flops": "FLOPs",
    "kv_cache": "KV cache",
    "score_matrix": "Score matrix",
}


def estimate(shape: ModelShape, workload: Workload, gpu: GpuSpec | None = None, explained: bool = False) -> Estimate:
    """Run the core over one model and workload; with a GPU, also the T at which a score matrix outgrows it;
    `explained`: with every quantity's working (tfcost.explain)."""
    t, b, dtype, causal = workload.seq_len, workload.batch, workload.dtype, workload.causal
    return Estimate(
        explain=estimate_lines(shape, t, b, dtype, causal) if explained else None,
        model=shape.name,
        source=shape.source,
        workload=workload,
        params=ParamsReport(
            total=params.total_params(shape),
            active=params.active_params(shape),
            embedding=params.embedding_params(shape),
            non_embedding=params.non_embedding_params(shape),
            per_layer=params.params_per_layer(shape),
            breakdown=params.parameter_breakdown(shape),
            by_layer_kind=params.params_by_layer_kind(shape),
            mtp=params.mtp_params(shape) if shape.mtp_layers else None,
        ),
        flops=FlopsReport(
            six_n_per_token=flops.six_n_flops_per_token(shape),
            attention_scores_per_token=flops.attention_score_flops_per_token(shape, t),
            forward_per_sequence=flops.forward_flops(shape, t, causal),
            training_per_sequence=flops.training_flops(shape, t, causal),
            forward_breakdown=flops.forward_flops_breakdown(shape, t, causal),
            by_layer_kind=flops.flops_by_layer_kind(shape, t, causal),
        ),
        kv_cache=KvCacheReport(
            bytes_per_token=None if memory.cache_steps(shape) else memory.kv_cache_bytes_per_token(shape, dtype),
            bytes=memory.kv_cache_bytes(shape, t, b, dtype),
            state_bytes=memory.state_bytes(shape, b, dtype),
            note=stepped_cache_note(shape, t),
        ),
        score_matrix=ScoreMatrixReport(
            entries_per_head=memory.score_matrix_entries_per_head(t),
            bytes_per_layer=memory.score_matrix_bytes_per_layer(shape, t, b, dtype),
            bytes=memory.score_matrix_bytes(shape, t, b, dtype),
        ),
        crossovers=crossover_reports(crossover.crossovers(shape, b, dtype, gpu)),
    )


# `tfcost train` ---------------------------------------------------------------------------------------------


class TrainInputs(Section):
    parameters: int = quantity("N, parameters (embeddings included)", "count")
    trainable_parameters: int = quantity("trainable parameters (LoRA: the adapters only)", "count")
    tokens: int = quantity("D, training tokens", "count")
    seq_len: int = quantity("T, tokens per sequence", "count")
    training_per_sequence: int = quantity("training, one T-token sequence (3x forward)", "flops")
    data_parallel: int = quantity("N_d, data-parallel replicas = gpus / (tp x pp x cp)", "count")
    global_batch: int = quantity("B, sequences per step = b x N_d x m", "count")
    micro_batches: int = quantity("m, micro-batches per replica per step", "count")
    stage_layers: str = quantity("layers per pipeline stage", "text")
    pipeline_bubble: float = quantity("pipeline bubble = (p - 1) / (v x m) of the busy time", "fraction")
    bytes_per_param: dict[str, int] = quantity("bytes per parameter, before sharding", "count")
    peak_flops_per_s: float = quantity("peak per GPU (dense)", "flops_per_s")
    gpu_memory_bytes: int = quantity("memory per GPU", "bytes")


class TrainFlops(Section):
    six_nd: int = quantity("6ND", "flops")
    total: int = quantity(
        "model FLOPs, exact: training per sequence x D / T (LoRA: 2 x forward + 6 x adapters)", "flops"
    )
    recompute: int = quantity("recomputed forward work", "flops")
    hardware: int = quantity("hardware FLOPs = model + recomputed", "flops")


class TrainTime(Section):
    throughput_from: str = quantity("throughput from", "text")
    days: float = quantity("wall clock", "days")
    days_6nd: float = quantity("wall clock from 6ND at the same MFU", "days")
    gpu_hours: float = quantity("GPU-hours = wall clock x gpus", "hours")
    model_utilization: float = quantity("MFU = model FLOP/s / (gpus x peak)", "fraction")
    hardware_utilization: float = quantity("HFU = hardware FLOP/s / (gpus x peak)", "fraction")
    achieved_flops_per_s: float = quantity("achieved per GPU, counting recomputation", "flops_per_s")
    cost: float | None = quantity("cost = GPU-hours x price", "usd")


class TrainStep(Section):
    steps: float = quantity("optimizer steps = D / (B x T)", "count")
    seconds: dict[str, float] = quantity("one step, predicted, by part (busiest pipeline stage)", "seconds")


class TrainMemory(Section):
    weights_bytes: int = quantity("weights = N x bytes / (tp x pp) [/ N_d, + live layers at ZeRO-3]", "bytes")
    gradients_bytes: int = quantity("gradients = N x bytes / (tp x pp) [/ N_d at ZeRO-2+]", "bytes")
    optimizer_bytes: int = quantity("optimizer states = N x bytes / (tp x pp) [/ N_d at ZeRO-1+]", "bytes")
    activations_per_layer_bytes: int = quantity("activations, one layer (Korthikanti)", "bytes")
    logits_bytes: int = quantity("logits, fp32, 4sbV/t (last stage)", "bytes")
    activations_bytes: int = quantity("activations = one layer x L (+ logits if pp = 1)", "bytes")
    total_bytes: int = quantity("total = weights + gradients + optimizer + activations", "bytes")
    cuda_context_bytes: int = quantity("CUDA context (assumed; --cuda-context-gib)", "bytes")
    allocator_reserve_bytes: int = quantity("allocator reserve (assumed share; --allocator-reserve)", "bytes")
    fits: bool = quantity("fits: total + context + reserve <= the GPU's memory", "text")
    host_bytes: int = quantity("host memory: paged or offloaded optimizer states (and offloaded weights)", "bytes")


class TrainReport(SourceNotes):
    """Everything `tfcost train` reports for one model, GPU and setup."""

    model: str
    source: str | None
    gpu: str
    setup: TrainingSetup
    tokens_are_chinchilla_optimal: bool
    seq_len_is_default: bool
    notes: dict[str, str] = Field(default_factory=dict, exclude=True)  # what the table says about the defaults
    inputs: TrainInputs
    flops: TrainFlops
    time: TrainTime
    step: TrainStep | None
    memory_per_gpu: TrainMemory


TRAIN_SECTIONS: dict[str, str] = {
    "inputs": "Inputs",
    "flops": "Compute",
    "time": "Time",
    "step": "Step time, predicted (Calculon's method; README 'Step time')",
    "memory_per_gpu": "Memory per GPU (first pipeline stage)",
}


def train(shape: ModelShape, gpu: GpuSpec, setup: TrainingSetup, explained: bool = False) -> TrainReport:
    """Run the training core over one model on one kind of GPU; `explained`: with the main quantities' working."""
    training.check_parallel_layout(shape, setup)
    peak = training.peak_flops_per_s(gpu, setup.precision)
    t, tokens = setup.seq_len, setup.tokens
    adapters = None
    if setup.lora_rank is not None:
        finetune.check_targets(shape, setup.lora_targets)
        adapters = finetune.lora_params(shape, setup.lora_rank, setup.lora_targets)
    model_flops = training.model_training_flops(shape, t, tokens, adapters)
    recomputed = training.recompute_flops(shape, t, tokens, setup.recompute)
    six_nd = training.six_nd_flops(shape, tokens)
    hardware_flops = model_flops + recomputed
    step = None
    if setup.mfu is None and setup.hfu is None and setup.tflops_per_gpu is None and step_time.can_predict(gpu, setup):
        parts = step_time.step_seconds(shape, gpu, setup)
        steps = tokens / (parallel.global_batch(setup) * t)
        step = TrainStep(steps=steps, seconds=parts)
        source, seconds = "predicted step time", steps * parts["total"]
    else:
        source, seconds = run_seconds(setup, model_flops, hardware_flops, peak)
    hours = training.gpu_hours(seconds, setup.gpus)
    mfu = throughput.utilization(model_flops, seconds, setup.gpus, peak)
    stages = parallel.stage_layers(layer_count(shape), setup.pp, setup.pp_first_layers, setup.pp_last_layers)
    m = parallel.micro_batches(setup)
    held = training.memory_per_gpu(shape, setup)
    overhead = fit.overhead_bytes(hardware.memory_bytes(gpu), setup.cuda_context_gib, setup.allocator_reserve)
    lines = None
    if explained:
        at_mfu = step is None and setup.hfu is None and setup.tflops_per_gpu is None
        mfu = training.DEFAULT_MFU if setup.mfu is None else setup.mfu
        lines = train_lines(
            shape, setup, model_flops, (seconds, peak, mfu) if at_mfu else None, held,
            training.activation_bytes_by_layer_kind_of(shape, setup), training.last_stage_logits_bytes(shape, setup),
        )  # fmt: skip
    return TrainReport(
        explain=lines,
        model=shape.name,
        source=shape.source,
        gpu=gpu.name,
        setup=setup,
        tokens_are_chinchilla_optimal=tokens == training.chinchilla_optimal_tokens(shape),
        seq_len_is_default=t == training.default_seq_len(shape),
        notes=training.defaults_notes(shape, setup),
        inputs=TrainInputs(
            parameters=params.total_params(shape),
            trainable_parameters=training.trainable_params(shape, setup),
            tokens=tokens,
            seq_len=t,
            training_per_sequence=flops.training_flops(shape, t),
            data_parallel=setup.data_parallel,
            global_batch=parallel.global_batch(setup),
            micro_batches=m,
            stage_layers=" + ".join(str(layers) for layers in stages),
            pipeline_bubble=parallel.bubble_fraction(setup.pp, m, setup.virtual_stages),
            bytes_per_param=training.state_bytes_per_param(setup.precision, setup.optimizer),
            peak_flops_per_s=peak,
            gpu_memory_bytes=hardware.memory_bytes(gpu),
        ),
        flops=TrainFlops(six_nd=six_nd, total=model_flops, recompute=recomputed, hardware=hardware_flops),
        time=TrainTime(
            throughput_from=source,
            days=seconds / training.SECONDS_PER_DAY,
            days_6nd=throughput.seconds_at_same_utilization(seconds, six_nd, model_flops) / training.SECONDS_PER_DAY,
            gpu_hours=hours,
            model_utilization=mfu,
            hardware_utilization=throughput.utilization(hardware_flops, seconds, setup.gpus, peak),
            achieved_flops_per_s=hardware_flops / (seconds * setup.gpus),
            cost=None if setup.price_per_gpu_hour is None else training.training_cost(hours, setup.price_per_gpu_hour),
        ),
        step=step,
        memory_per_gpu=TrainMemory(
            weights_bytes=held["weights"],
            gradients_bytes=held["gradients"],
            optimizer_bytes=held["optimizer"],
            activations_per_layer_bytes=training.activation_bytes_per_layer_of(shape, setup),
            logits_bytes=training.last_stage_logits_bytes(shape, setup),
            activations_bytes=held["activations"],
            total_bytes=held["total"],
            cuda_context_bytes=overhead["cuda_context"],
            allocator_reserve_bytes=overhead["allocator_reserve"],
            fits=held["total"] + sum(overhead.values()) <= hardware.memory_bytes(gpu),
            host_bytes=held["host"],
        ),
    )


def run_seconds(setup: TrainingSetup, model_flops: int, hardware_flops: int, peak: float) -> tuple[str, float]:
    """The run's wall clock from the one throughput the user gave (MFU, HFU or TFLOP/s per GPU), and which."""
    if setup.hfu is not None:
        return f"HFU {setup.hfu:g}", throughput.seconds_at_hfu(hardware_flops, setup.gpus, peak, setup.hfu)
    if setup.tflops_per_gpu is not None:
        achieved = setup.tflops_per_gpu * TERA
        return f"{setup.tflops_per_gpu:g} TFLOP/s per GPU", throughput.seconds_at_achieved(
            hardware_flops, setup.gpus, achieved
        )
    mfu = training.DEFAULT_MFU if setup.mfu is None else setup.mfu
    label = f"MFU {mfu:g}" + (" (the default: the GPU table cannot predict this layout)" if setup.mfu is None else "")
    return label, throughput.seconds_at_mfu(model_flops, setup.gpus, peak, mfu)


# `tfcost serve` ---------------------------------------------------------------------------------------------


class ServeInputs(Section):
    parameters: int = quantity("N, parameters", "count")
    context: int = quantity("context per sequence, P + G", "count")
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
    step_floor_ms: float = quantity("per-step floor: kernels x one kernel's fixed cost", "ms")
    stream_bytes_per_s: float = quantity("bandwidth reached streaming weights and KV", "bytes_per_s")
    matmul_flops_per_s: float = quantity("FLOP/s reached by large matmuls", "flops_per_s")
    kv_tokens_per_sequence: int = quantity("KV slots per sequence, rounded up to whole blocks", "count")
    cuda_context_bytes: int = quantity("CUDA context and libraries, per GPU", "bytes")
    workspace_bytes: int = quantity("activation workspace of the prefill, per GPU", "bytes")
    total_bytes_per_gpu: int = quantity("weights + KV blocks + state + context + workspace per GPU", "bytes")
    fits: bool = quantity("fits in the usable memory", "text")
    max_batch: int = quantity("largest batch at context P + G, in whole blocks", "count")
    max_kv_tokens: int = quantity("KV-cache capacity in tokens per GPU's share, whole blocks", "count")
    sources: dict[str, str] = quantity("where each rate comes from", "text")


class ServeReport(SourceNotes):
    """Everything `tfcost serve` reports for one model, GPU and setup."""

    model: str
    source: str | None
    gpu: str
    setup: ServingSetup
    compute_dtype: str
    weights_format: str
    inputs: ServeInputs
    memory: ServeMemory
    max_batch: int = quantity("largest batch at context P + G", "count")
    max_context: int = quantity("longest context at batch B (memory only)", "count")
    model_max_context: int = quantity("the model's own maximum context", "count")
    latency: ServeLatency = Field(description="bound: the roofline, the best any engine could do")
    expected: ServeExpected = Field(description="expected: what an engine reaches (rates, floor, all-reduce, ...)")
    profile: str | None = Field(None, description="the measured profile used in place of the GPU table")


SERVE_SECTIONS: dict[str, str] = {
    "inputs": "Inputs",
    "memory": "Memory",
    "": "Capacity",
    "latency": "Bound (roofline)",
    "expected": "Expected (engine)",
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
) -> ServeReport:
    """Run the serving core over one model on `setup.gpus` GPUs of one kind. `rates` (from a measured profile)
    replace the table-derived rates of `expected`; `explained`: with the working."""
    setup = serving.with_weights_dtype(shape, setup)
    t, b, kv_dtype = setup.gpus, setup.batch, setup.kv_dtype
    serving.check_generates(shape)
    serving.check_tensor_parallel(shape, t)
    peak = serving.effective_peak_flops_per_s(gpu, setup.weights_dtype, setup.compute_efficiency, shape)
    bandwidth = serving.effective_bandwidth_bytes_per_s(gpu, setup.memory_efficiency)
    usable = serving.usable_bytes_per_gpu(gpu, setup.reserve)
    weights = serving.served_weight_bytes(shape, setup.weights_dtype, setup.group_size)
    weights_per_gpu = serving.share_per_gpu(weights, t)
    tokens, encoder_tokens = serving.cached_positions(shape, setup.prompt, setup.generate)
    kv_per_gpu = serving.kv_cache_bytes_per_gpu(shape, tokens, b, kv_dtype, t, encoder_tokens)
    state_per_gpu = serving.state_bytes_per_gpu(shape, b, kv_dtype, t)
    stepped = bool(memory.cache_steps(shape))  # no bytes per token: the cache at P + G, the context by bisection
    held = serving.bytes_moved_per_gpu(weights_per_gpu, kv_per_gpu + state_per_gpu)  # what decode reads
    budget = serving.kv_budget_bytes_per_gpu(usable, weights_per_gpu)
    prefill = serving.prefill_roofline(shape, setup, weights_per_gpu, peak, bandwidth)
    decode = serving.decode_roofline(shape, setup, held, peak, bandwidth)
    rates = rates or expected.table_rates(gpu, serving.compute_dtype(setup.weights_dtype, gpu, shape))
    lines = None
    if explained:
        lines = serve_lines(shape, setup, weights, weights_per_gpu, kv_per_gpu, prefill, decode, peak, bandwidth)
    return ServeReport(
        explain=lines,
        model=shape.name,
        source=shape.source,
        gpu=gpu.name,
        setup=setup,
        compute_dtype=serving.compute_dtype(setup.weights_dtype, gpu, shape),
        weights_format=serving.weights_format(shape, setup.weights_dtype),
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
            kv_cache_bytes=memory.kv_cache_bytes(shape, tokens, b, kv_dtype, encoder_tokens),
            kv_cache_bytes_per_gpu=kv_per_gpu,
            state_bytes=memory.state_bytes(shape, b, kv_dtype),
            state_bytes_per_gpu=state_per_gpu,
            total_bytes_per_gpu=held,
            fits=held <= usable,
            kv_cache_note=stepped_cache_note(shape, tokens),
        ),
        max_batch=serving.max_batch(
            budget,
            serving.kv_cache_bytes_per_gpu(shape, tokens, 1, kv_dtype, t, encoder_tokens),
            serving.state_bytes_per_gpu(shape, 1, kv_dtype, t),
        ),
        max_context=serving.stepped_max_context(shape, budget, b, kv_dtype, t, state_per_gpu)
        if stepped
        else serving.max_context(
            budget, serving.kv_cache_bytes_per_gpu(shape, 1, b, kv_dtype, t), state_per_gpu, shape.max_seq_len
        ),
        model_max_context=shape.max_seq_len,
        latency=ServeLatency(
            prefill_flops_per_gpu=prefill.flops_per_gpu,
            prefill_bytes_per_gpu=prefill.bytes_per_gpu,
            prefill_ms=milliseconds(prefill.seconds),
            prefill_bound=bound(prefill.compute_bound),
            prefill_tokens_per_s=hardware.achieved_per_s(b * setup.prompt, prefill.seconds),
            decode_flops_per_gpu=decode.flops_per_gpu,
            decode_bytes_per_gpu=decode.bytes_per_gpu,
            decode_ms_per_token=milliseconds(decode.seconds),
            decode_bound=bound(decode.compute_bound),
            decode_tokens_per_s=hardware.achieved_per_s(b, decode.seconds),
            ttft_ms=milliseconds(prefill.seconds),
            tpot_ms=milliseconds(decode.seconds),
            tokens_per_s_per_sequence=hardware.achieved_per_s(1, decode.seconds),
            tokens_per_s=hardware.achieved_per_s(b, decode.seconds),
        ),
        expected=serve_expected(shape, setup, rates, usable, weights_per_gpu),
        profile=profile,
    )


def serve_expected(
    shape: ModelShape, setup: ServingSetup, rates: expected.EngineRates, usable: int, weights_per_gpu: int
) -> ServeExpected:
    """The expected serving times and memory: tfcost.expected's terms added to the kernels' time at the rates
    reached. The KV cache is counted in whole blocks, as a paged engine allocates it."""
    t, b, kv_dtype = setup.gpus, setup.batch, setup.kv_dtype
    kv_tokens = expected.allocated_kv_tokens(setup.context, setup.kv_block)
    kv_per_gpu = serving.kv_cache_bytes_per_gpu(shape, kv_tokens, b, kv_dtype, t)
    prompt_kv = serving.kv_cache_bytes_per_gpu(shape, setup.prompt, b, kv_dtype, t)
    read_as = serving.kernel_weights_dtype(shape, setup.weights_dtype)
    quantized = serving.share_per_gpu(serving.quantized_params(shape, read_as), t)
    dequant = expected.dequant_seconds(quantized, read_as, rates)
    floor = expected.step_floor_seconds(shape, rates)

    # The weights split by how a step reads them: the output head (a one-row matmul per sequence, its own
    # roofline), the lookup tables (B rows gathered, not streamed) and the layers' matrices.
    head_elements = expected.head_weight_elements(shape)
    element_bytes = expected.table_element_bytes(read_as)
    head_bytes = serving.share_per_gpu(head_elements * element_bytes, t)
    lookup_bytes = serving.share_per_gpu(expected.lookup_table_elements(shape) * element_bytes, t)
    layer_weights = max(weights_per_gpu - head_bytes - lookup_bytes, 0)
    head_flops = serving.share_per_gpu(2 * head_elements * b, t)
    decoder_only = not serving.is_encoder_decoder(shape)

    prefill_flops = serving.share_per_gpu(serving.prefill_flops(shape, setup.prompt, b), t)
    prefill_attention = serving.share_per_gpu(b * expected.attention_flops(shape, setup.prompt), t)
    prefill_kernels = expected.phase_seconds(
        prefill_flops - head_flops,
        layer_weights + prompt_kv,
        rates,
        prefill_attention if decoder_only else 0,
        rows=b * setup.prompt,
    ) + expected.head_seconds(shape, head_flops, head_bytes, rates)
    prefill_allreduce = expected.tensor_parallel_seconds(shape, b * setup.prompt, t, rates)
    prefill_s = prefill_kernels + dequant + prefill_allreduce + floor
    decode_flops = serving.share_per_gpu(serving.decode_step_flops(shape, setup.context, b), t)
    one_token = expected.attention_flops(shape, setup.context) - expected.attention_flops(shape, setup.context - 1)
    decode_attention = serving.share_per_gpu(b * one_token, t) if decoder_only else 0
    state_per_gpu = serving.state_bytes_per_gpu(shape, b, kv_dtype, t)  # read and written once a step
    decode_bytes = layer_weights + head_bytes + kv_per_gpu + state_per_gpu
    decode_kernels = expected.phase_seconds(
        decode_flops - head_flops, kv_per_gpu + state_per_gpu, rates, decode_attention,
        weight_stream_s=expected.weights_stream_seconds(shape, layer_weights, rates), rows=b,
    ) + expected.head_seconds(shape, head_flops, head_bytes, rates)  # fmt: skip
    decode_allreduce = expected.tensor_parallel_seconds(shape, b, t, rates)
    decode_s = decode_kernels + dequant + decode_allreduce + floor

    workspace = serving.share_per_gpu(expected.workspace_bytes(shape, b * setup.prompt, b), t)
    fixed = weights_per_gpu + rates.cuda_context_bytes + workspace
    budget = serving.kv_budget_bytes_per_gpu(usable, fixed)
    kv_per_token = serving.kv_cache_bytes_per_gpu(shape, 1, 1, kv_dtype, t)
    block_bytes = kv_per_token * setup.kv_block
    blocks = budget // block_bytes if block_bytes else 0  # a model with no KV cache (pure Mamba) has no blocks
    state_per_sequence = serving.state_bytes_per_gpu(shape, 1, kv_dtype, t)
    blocks_per_sequence = ceil_div(setup.context, setup.kv_block)
    max_batch = serving.max_batch(budget, blocks_per_sequence * block_bytes, state_per_sequence)
    max_kv_tokens = blocks * setup.kv_block
    if memory.cache_steps(shape):  # no bytes per token to page in blocks: the cache at P + G, capacity by bisection
        sequence_kv = serving.kv_cache_bytes_per_gpu(shape, setup.context, 1, kv_dtype, t)
        max_batch = serving.max_batch(budget, sequence_kv, state_per_sequence)
        max_kv_tokens = serving.stepped_max_context(shape, budget, 1, kv_dtype, t, state_per_sequence)
    return ServeExpected(
        prefill_flops_per_gpu=prefill_flops,
        prefill_bytes_per_gpu=layer_weights + head_bytes + prompt_kv,
        prefill_ms=milliseconds(prefill_s),
        prefill_bound=bound(
            prefill_flops / rates.matmul_flops_per_s >= (layer_weights + prompt_kv) / rates.stream_bytes_per_s
        ),
        prefill_tokens_per_s=hardware.achieved_per_s(b * setup.prompt, prefill_s),
        decode_flops_per_gpu=decode_flops,
        decode_bytes_per_gpu=decode_bytes,
        decode_ms_per_token=milliseconds(decode_s),
        decode_bound=bound(decode_flops / rates.matmul_flops_per_s >= decode_bytes / rates.stream_bytes_per_s),
        decode_tokens_per_s=hardware.achieved_per_s(b, decode_s),
        ttft_ms=milliseconds(prefill_s),
        tpot_ms=milliseconds(decode_s),
        tokens_per_s_per_sequence=hardware.achieved_per_s(1, decode_s),
        tokens_per_s=hardware.achieved_per_s(b, decode_s),
        prefill_kernels_ms=milliseconds(prefill_kernels),
        prefill_dequant_ms=milliseconds(dequant),
        prefill_allreduce_ms=milliseconds(prefill_allreduce),
        decode_kernels_ms=milliseconds(decode_kernels),
        decode_dequant_ms=milliseconds(dequant),
        decode_allreduce_ms=milliseconds(decode_allreduce),
        step_floor_ms=milliseconds(floor),
        stream_bytes_per_s=rates.stream_bytes_per_s,
        matmul_flops_per_s=rates.matmul_flops_per_s,
        kv_tokens_per_sequence=kv_tokens,
        cuda_context_bytes=rates.cuda_context_bytes,
        workspace_bytes=workspace,
        total_bytes_per_gpu=fixed + kv_per_gpu + state_per_gpu,
        fits=fixed + kv_per_gpu + state_per_gpu <= usable,
        max_batch=max_batch,
        max_kv_tokens=max_kv_tokens,
        sources=rates.sources,
    )
