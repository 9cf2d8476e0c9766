"""`tfcost fit`'s report: a model under llama.cpp on one's own GPUs and host (tfcost.costs.local), as the table and
the JSON show it (`gpu_layers`, `max_context`, `tokens_per_s` with `prompt` and `generation`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from tfcost.core.ops import op_params
from tfcost.costs import local
from tfcost.reports.base import Section, quantity
from tfcost.schema import GpuSpec, Interval, LocalSetup

if TYPE_CHECKING:
    from tfcost.core.model import Model


class DeviceMemory(Section):
    """What one device holds, bytes."""

    device: str = Field(description="GPU 0, GPU 1, ... or host")
    layers: int = Field(description="repeating layers it holds")
    weights_bytes: int = Field(description="its weights (the host: token_embd always, llama.cpp's input layer)")
    kv_cache_bytes: int = Field(description="the KV cache (and recurrent state) of its layers")
    compute_bytes: int = Field(description="its compute buffer (llama.cpp's worst-case graph reserve)")
    total_bytes: int = Field(description="weights + KV cache + compute")
    budget_bytes: int | None = Field(
        description="what it may hold (GPU: less --fit's 1024 MiB target); null: unbounded"
    )
    fits: bool


class TokensPerSecond(Section):
    prompt: float = quantity("prompt processing, tokens/s (llama-bench's pp)", "per_s")
    generation: float = quantity("generation, tokens/s (llama-bench's tg)", "per_s")


class LocalReport(Section):
    """Where llama.cpp puts a model on this machine, the largest context that fits, and its speed."""

    model: str
    gpu: str
    setup: LocalSetup
    file_type: str = Field(description="the GGUF file type priced (a file's own tensors where a .gguf was given)")
    file_bytes: int = quantity("the GGUF file's tensors", "bytes")
    bits_per_weight: float = quantity("file bytes x 8 / parameters", "ratio")
    gpu_layers: int = quantity("-ngl: layers on the GPUs, the output layer counted as llama.cpp counts it", "count")
    layers: int = quantity("layers -ngl can count: the repeating ones and the output layer", "count")
    layers_per_gpu: list[int] = Field(description="repeating layers on each GPU (llama.cpp's --split-mode layer)")
    expert_layers_on_host: int = quantity(
        "layers on the GPUs whose routed experts --fit leaves on the host (-ot ...exps=CPU)", "count"
    )
    context: int = quantity("n_ctx: the context asked for, or as llama.cpp's --fit chooses it", "count")
    max_context: int | None = quantity("the largest context that fits the GPUs at these layers (steps of 256)", "count")
    fits: bool = Field(description="the GPUs and the host both hold their share")
    memory: list[DeviceMemory]
    tokens_per_s: TokensPerSecond
    notes: list[str] = Field(default_factory=list)
    intervals: dict[str, Interval] = Field(
        default_factory=dict,
        description="each tokens/s with the range the validation suite's local_inference runs measured around such "
        "predictions (tfcost.costs.intervals)",
    )


def device_memory(device: local.Device) -> DeviceMemory:
    return DeviceMemory(
        device=device.name,
        layers=device.layers,
        weights_bytes=device.weights,
        kv_cache_bytes=device.kv_cache,
        compute_bytes=device.compute,
        total_bytes=device.total,
        budget_bytes=device.budget,
        fits=device.fits,
    )


def fit_report(
    name: str,
    model: Model,
    gpu: GpuSpec,
    setup: LocalSetup,
    stored: list[tuple[str, int]] | None = None,
    stored_type: str | None = None,
) -> LocalReport:
    """The report of `tfcost fit`: llama.cpp's layers and context for this model on these GPUs, and its speed.
    `stored`: a GGUF file's own tensors (name, bytes), priced in place of the file type's mixture."""
    n_layers = model.n_layers
    if stored is not None:
        weights = local.stored_file_bytes(stored, n_layers, local.active_share(model))
        file_type = stored_type or "as stored"
    else:
        weights = local.file_bytes(model, setup.quant)
        file_type = setup.quant
    chosen = local.fit(model, weights, gpu, setup)
    placement = chosen.placement
    speed = local.speed(model, placement, weights, gpu, setup)
    counted = sum(count * op_params(op) for count, op in model.layer_rows()) + sum(map(op_params, model.outside_rows()))
    notes = report_notes(placement, chosen, gpu, setup)
    if placement.context > model.shape.max_seq_len:
        notes.append(
            f"-c {placement.context:,} passes the model's own context of {model.shape.max_seq_len:,} (llama.cpp warns "
            "and runs it)"
        )
    return LocalReport(
        model=name,
        gpu=gpu.name,
        setup=setup,
        file_type=file_type,
        file_bytes=weights.total,
        bits_per_weight=weights.total * 8 / counted,
        gpu_layers=placement.gpu_layers,
        layers=chosen.all_layers,
        layers_per_gpu=[device.layers for device in placement.gpus],
        expert_layers_on_host=placement.experts_on_host,
        context=placement.context,
        max_context=chosen.max_context,
        fits=placement.fits,
        memory=[*map(device_memory, placement.gpus), device_memory(placement.host)],
        tokens_per_s=TokensPerSecond(prompt=speed.prompt_tokens_per_s, generation=speed.generation_tokens_per_s),
        notes=notes,
        intervals=local_intervals(speed.prompt_tokens_per_s, speed.generation_tokens_per_s),
    )


def local_intervals(prompt: float, generation: float) -> dict[str, Interval]:
    """Each tokens/s with its category's range (a rate: measured between P x r10 and P x r90)."""
    from tfcost.costs.intervals import interval

    bars = {
        "tokens_per_s.prompt": interval(prompt, "local_inference", None, rate=True),
        "tokens_per_s.generation": interval(generation, "local_inference", None, rate=True),
    }
    return {key: bar for key, bar in bars.items() if bar is not None}


def report_notes(placement: local.Placement, chosen: local.Fit, gpu: GpuSpec, setup: LocalSetup) -> list[str]:
    """What the figures rest on, and what does not fit."""
    notes = []
    if not all(device.fits for device in placement.gpus):
        notes.append("does not fit the GPUs at this -ngl and context")
    if not placement.host.fits:
        notes.append("the host's memory does not hold its share (weights, KV cache, buffers): it would swap")
    if not placement.gpus:
        notes.append("no layer on a GPU: prompt tokens/s is the host's memory bound only (its FLOP/s are not known)")
    if setup.kv_dtype not in ("f16", "bf16", "f32") and not setup.flash_attn:
        notes.append("llama.cpp refuses a quantized V cache without flash attention")
    if gpu.unified_memory:
        share = gpu.gpu_memory_share or 1.0
        notes.append(f"unified memory: the GPU may wire {share:.0%} of it (the OS's default working set)")
    return notes
