"""`tfcost train`'s report: compute, time, the predicted step and memory per GPU, from the core (tfcost.reports.estimate
holds the parts every report shares)."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import Field

from tfcost.core import flops, params
from tfcost.costs import energy, engine_memory, finetune, fit, images, parallel, step_time, throughput, training
from tfcost.hardware import rates as hardware
from tfcost.reports.base import PricedUnder, Section, SourceNotes, optional_quantity, quantity
from tfcost.reports.suggestion import Suggestion
from tfcost.schema import GpuSpec, ModelShape, TrainingSetup
from tfcost.units import TERA, human


class TrainInputs(Section):
    parameters: int = quantity("N, parameters (embeddings included)", "count")
    trainable_parameters: int = quantity("trainable parameters (LoRA: the adapters only)", "count")
    tokens: int = quantity("D, training tokens", "count")
    seq_len: int = quantity("T, tokens per sequence", "whole")
    training_per_sequence: int = quantity("training, one T-token sequence (3x forward)", "flops")
    data_parallel: int = quantity("N_d, data-parallel replicas = gpus / (tp x pp x cp)", "count")
    global_batch: int = quantity("B, sequences per step = b x N_d x m", "whole")
    micro_batches: int = quantity("m, micro-batches per replica per step", "whole")
    stage_layers: str = quantity("layers per pipeline stage", "text")
    pipeline_bubble: float = quantity("pipeline bubble = (p - 1) / (v x m) of the busy time", "fraction")
    bytes_per_param: dict[str, int] = quantity("bytes per parameter, before sharding", "count")
    peak_flops_per_s: float = quantity("peak per GPU (dense)", "flops_per_s")
    gpu_memory_bytes: int = quantity("memory per GPU", "bytes")


class TrainFlops(Section):
    six_nd: int = quantity(f"6ND ({flops.SIX_N_MEANING})", "flops")
    total: int = quantity(
        "model FLOPs, exact: training per sequence x D / T (LoRA: 2 x forward + 6 x adapters)", "flops"
    )
    recompute: int = quantity("recomputed forward work", "flops")
    hardware: int = quantity("hardware FLOPs = model + recomputed", "flops")


class TrainTime(Section):
    throughput_from: str = quantity("throughput from", "text")
    days: float = quantity("wall clock", "days")
    days_6nd: float = quantity(f"wall clock from 6ND ({flops.SIX_N_MEANING}) at the same MFU", "days")
    gpu_hours: float = quantity("GPU-hours = wall clock x gpus", "hours")
    model_utilization: float = quantity("MFU = model FLOP/s / (gpus x peak)", "fraction")
    hardware_utilization: float = quantity("HFU = hardware FLOP/s / (gpus x peak)", "fraction")
    achieved_flops_per_s: float = quantity("achieved per GPU, counting recomputation", "flops_per_s")
    cost: float | None = quantity("cost = GPU-hours x price", "usd")
    energy_kwh: float | None = optional_quantity("energy = GPU-hours x board power (GPUs only)", "kwh")
    co2_kg: float | None = optional_quantity("CO2 = energy x grid's g/kWh", "count")


class TrainStep(Section):
    steps: float = quantity("optimizer steps = D / (B x T)", "count")
    seconds: dict[str, float] = quantity("one step, predicted, by part (busiest pipeline stage)", "seconds")


class TrainMemory(Section):
    weights_bytes: int = quantity(
        "weights = N x bytes / (tp x pp) [/ N_d, + live layers at ZeRO-3: all if pp > 1]", "bytes"
    )
    gradients_bytes: int = quantity(
        "gradients = N x bytes / (tp x pp) [/ N_d at ZeRO-2+; + fp32 whole at ZeRO-3, pp > 1]", "bytes"
    )
    optimizer_bytes: int = quantity("optimizer states = N x bytes / (tp x pp) [/ N_d at ZeRO-1+]", "bytes")
    activations_per_layer_bytes: int = quantity("activations, one layer (Korthikanti)", "bytes")
    logits_bytes: int = quantity("logits at the loss, 4sbV/t: x3 --loss full, /2 compiled (last stage)", "bytes")
    activations_bytes: int = quantity("activations = one layer x L (+ logits or a recomputed layer if pp = 1)", "bytes")
    total_bytes: int = quantity("total = weights + gradients + optimizer + activations", "bytes")
    cuda_context_bytes: int = quantity("CUDA context (assumed; --cuda-context-gib)", "bytes")
    allocator_reserve_bytes: int = quantity("allocator reserve (assumed share; --allocator-reserve)", "bytes")
    fits: bool = quantity("fits: total + context + reserve <= the GPU's memory", "text")
    host_bytes: int = quantity(
        "host memory: paged optimizer states; offloaded states, gradients (and weights)", "bytes"
    )


class TrainReport(SourceNotes, PricedUnder):
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
    suggestion: Suggestion | None = Field(
        default=None,
        description="when the layout does not fit: the nearest that does (`tfcost plan train`)",
        exclude_if=lambda suggestion: suggestion is None,
    )

    def needs_suggestion(self) -> bool:
        """Whether the layout does not fit, so that `tfcost plan`'s search should name one that does (LoRA runs are
        not searched). A method here, so that a run that fits never imports the search."""
        return not self.memory_per_gpu.fits and self.setup.lora_rank is None


TRAIN_SECTIONS: dict[str, str] = {
    "inputs": "Inputs",
    "flops": "Compute",
    "time": "Time",
    "step": "Step time, predicted (Calculon's method; docs/training.md)",
    "memory_per_gpu": "Memory per GPU (first pipeline stage)",
}


def train(shape: ModelShape, gpu: GpuSpec, setup: TrainingSetup, explained: bool = False) -> TrainReport:
    """Run the training core over one model on one kind of GPU; `explained`: with the main quantities' working."""
    setup = images.with_image_tokens(shape, setup)  # the images' tokens join each sequence (--images)
    training.check_parallel_layout(shape, setup)
    peak = training.peak_flops_per_s(gpu, setup.precision)
    t, tokens = setup.seq_len, setup.tokens
    adapters = None
    if setup.lora_rank is not None:
        finetune.check_targets(shape, setup.lora_targets)
        finetune.check_rank(shape, setup.lora_rank, setup.lora_targets)
        adapters = finetune.lora_params(shape, setup.lora_rank, setup.lora_targets)
    model_flops = training.model_training_flops(shape, t, tokens, adapters) + images.images_training_flops(shape, setup)
    recomputed = training.recompute_flops(shape, t, tokens, setup.recompute, setup.precision)
    six_nd = flops.six_nd_flops(shape, tokens)
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
    energy_kwh = energy.gpu_hours_kwh(gpu, hours)
    mfu = throughput.utilization(model_flops, seconds, setup.gpus, peak)
    stages = parallel.setup_stages(shape, setup)
    m = parallel.micro_batches(setup)
    held = engine_memory.with_eager_norms(training.memory_per_gpu(shape, setup), shape, setup)
    overhead = fit.overhead_bytes(hardware.memory_bytes(gpu), setup.cuda_context_gib, setup.allocator_reserve)
    lines = None
    if explained:
        from tfcost.reports.explain import train_lines  # the working's module: only for --explain

        assumed_mfu = training.run_mfu(setup) if step is None else None
        lines = train_lines(
            shape, setup, model_flops, None if assumed_mfu is None else (seconds, peak, assumed_mfu), held,
            training.activation_bytes_by_layer_kind_of(shape, setup), training.loss_or_recompute_bytes(shape, setup),
            None if step is None else gpu,
        )  # fmt: skip
    return TrainReport(
        explain=lines,
        model=shape.name,
        source=shape.source,
        gpu=gpu.name,
        setup=setup,
        tokens_are_chinchilla_optimal=tokens == training.chinchilla_optimal_tokens(shape),
        seq_len_is_default=t == training.default_seq_len(shape),
        notes=training.defaults_notes(shape, setup) | images.training_notes(setup, step is not None),
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
            energy_kwh=energy_kwh,
            co2_kg=None
            if energy_kwh is None or setup.grid_gco2_per_kwh is None
            else energy_kwh * setup.grid_gco2_per_kwh / 1000,
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
            fits=fit.fits(held["total"], overhead, hardware.memory_bytes(gpu)),
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
    mfu = training.run_mfu(setup)
    assert mfu is not None  # neither HFU nor TFLOP/s was given
    label = f"MFU {mfu:g}" + (" (the default: the GPU table cannot predict this layout)" if setup.mfu is None else "")
    return label, throughput.seconds_at_mfu(model_flops, setup.gpus, peak, mfu)


# The default step when --global-batch is not given: Llama 2 (Touvron et al. 2023, Table 1 caption): "All models
# are trained with a global batch-size of 4M tokens", 1,024 sequences of their 4,096-token context, i.e. 2^22.
DEFAULT_STEP_TOKENS = 2**22


def default_global_batch(setup: TrainingSetup) -> int:
    """Sequences per optimizer step for about DEFAULT_STEP_TOKENS tokens: a whole number (at least one) of
    micro-batches of b sequences on each of the N_d replicas."""
    per_pass = setup.micro_batch * setup.data_parallel
    return per_pass * max(1, round(DEFAULT_STEP_TOKENS / (setup.seq_len * per_pass)))


def with_default_layout(
    setup_with: Callable[[int | None, int], TrainingSetup], run: Callable[[TrainingSetup], TrainReport],
    global_batch: int | None, zero: int | None,
) -> TrainReport:  # fmt: skip
    """The run a practitioner would set up when the options leave it open: about 4M tokens a step (Llama 2) where
    --global-batch is not given, and the lowest ZeRO stage whose memory per GPU fits where --zero is not (else
    ZeRO-3); the table says which were chosen. `setup_with(global batch, ZeRO stage)` is the user's setup."""
    chosen_batch = global_batch
    if chosen_batch is None:
        chosen_batch = default_global_batch(setup_with(None, zero or 0))
    stages = [zero] if zero is not None else [0, 1, 2, 3]
    report = None
    for stage in stages:
        report = run(setup_with(chosen_batch, stage))
        if report.memory_per_gpu.fits:
            break
    assert report is not None  # one stage at least is tried
    notes = dict(report.notes)
    if global_batch is None:
        tokens = human(report.inputs.global_batch * report.setup.seq_len, "count")
        notes["global_batch"] = f" ({tokens} tokens a step, the default: about 4M, as Llama 2 trained)"
    if zero is None:
        fitted = "the lowest stage that fits, the default" if report.memory_per_gpu.fits else "none fits"
        notes["zero"] = f" ({fitted})"
    return report.model_copy(update={"notes": notes})


def with_intervals(report: TrainReport) -> TrainReport:
    """The report with its predicted step time, days and memory per GPU given their error bars; a time from a
    utilization the user gave is theirs, and gets none."""
    from tfcost.costs.intervals import train_intervals

    framework = report.framework.name if report.framework is not None else None
    step = report.step.seconds["total"] if report.step is not None else None
    bars = train_intervals(step, report.time.days, report.memory_per_gpu.total_bytes, framework)
    return report.model_copy(update={"intervals": bars})
