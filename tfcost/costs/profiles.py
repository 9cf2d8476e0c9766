"""Profiles: what `tfcost measure --roofline` (and `--step`) measured on one machine, kept as plain YAML under the
user's config directory ($XDG_CONFIG_HOME/tfcost/profiles, else ~/.config/tfcost/profiles), so that `serve` and
`train` can use measured rates in place of the GPU table's. A profile is a file a user can commit and share."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tfcost.core import flops
from tfcost.costs import expected
from tfcost.errors import TfcostError, UsageError
from tfcost.hardware import rates as hardware
from tfcost.schema import GpuSpec
from tfcost.units import GIB, TERA

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
PRINTABLE = r"^[^\x00-\x1f\x7f]*$"  # a shared profile's text is printed: no control characters


class MatmulRun(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    dtype: str
    kind: str = Field(description="decode (one row: streams the weights) or prefill (many rows: compute)")
    m: int
    k: int
    n: int
    count: int = Field(default=1, description="matrices applied in a row (decode: more than the caches hold)")
    median_ms: float
    flops_per_s: float
    bytes_per_s: float


class AttentionRun(BaseModel):
    """One causal forward of the fused attention kernel (sdpa) at B = 1, H heads of Q, T positions."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dtype: str
    heads: int
    seq: int
    head_dim: int
    median_ms: float
    flops_per_s: float


class Profile(BaseModel):
    """One machine's measured rates."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=NAME.pattern)
    device: str = Field(pattern="^(cuda|cpu)$", description="cuda or cpu")
    device_name: str = Field(pattern=PRINTABLE)
    torch_version: str = Field(pattern=PRINTABLE)
    date: str = Field(pattern=PRINTABLE)
    dtype: str = Field(pattern=PRINTABLE, description="the element type the rates are for (serve --weights-dtype)")
    memory_bytes: int = Field(gt=0, description="device memory (CPU: physical memory)")
    copy_bytes_per_s: float = Field(gt=0, description="large device copy: bytes read + written per second")
    tiny_kernel_us: float = Field(ge=0, description="one tiny kernel (an add of one element), back to back, us")
    tiny_matmul_us: float = Field(ge=0, description="one 16 x 16 matmul, back to back, us")
    kernels_per_layer: int = Field(gt=0, description="kernels one layer launches in the engine measured")
    floor_layers: list[int] = Field(default_factory=list, description="depths of the narrow floor model")
    floor_step_us: list[float] | None = Field(default=None, description="its decode step at each depth, us")
    matmuls: list[MatmulRun]
    attentions: list[AttentionRun] = Field(default_factory=list, description="sdpa at a prefill's shape")
    steps: list[dict[str, object]] = Field(default_factory=list, description="measure --step results, if any")

    def matmul(self, kind: str) -> MatmulRun:
        runs = [run for run in self.matmuls if run.kind == kind and run.dtype == self.dtype]
        if not runs:
            raise TfcostError(f"profile {self.name} has no {kind} matmul measured in {self.dtype}")
        return max(runs, key=lambda run: run.flops_per_s)

    def stream_by_row_length(self) -> tuple[tuple[int, float], ...]:
        """(K, bytes/s) of the one-row (decode) matmuls in the profile's dtype, the best at each K."""
        best: dict[int, float] = {}
        for run in self.matmuls:
            if run.kind == "decode" and run.dtype == self.dtype:
                best[run.k] = max(best.get(run.k, 0.0), run.bytes_per_s)
        return tuple(sorted(best.items())) if len(best) > 1 else ()

    def matmul_by_rows(self) -> tuple[tuple[int, float], ...]:
        """(M, FLOP/s) of the prefill matmuls that read their weights from memory (more than one matrix in a row),
        in the profile's dtype, the best at each M."""
        best: dict[int, float] = {}
        for run in self.matmuls:
            if run.kind == "prefill" and run.dtype == self.dtype and run.count > 1:
                best[run.m] = max(best.get(run.m, 0.0), run.flops_per_s)
        return tuple(sorted(best.items()))

    def attention_flops_per_s(self) -> float | None:
        runs = [run.flops_per_s for run in self.attentions if run.dtype == self.dtype]
        return max(runs) if runs else None

    def rates(self) -> expected.EngineRates:
        """Measured rates for `expected`: decode matmuls' achieved bytes/s stream the weights and KV cache,
        prefill matmuls' FLOP/s do the compute, one tiny kernel is the per-kernel floor."""
        context = expected.CUDA_CONTEXT_BYTES if self.device == "cuda" else 0
        per_layer, fixed = self.layer_floor_us()
        return expected.EngineRates(
            stream_bytes_per_s=self.matmul("decode").bytes_per_s,
            matmul_flops_per_s=self.matmul("prefill").flops_per_s,
            attention_flops_per_s=self.attention_flops_per_s(),
            matmul_by_rows=self.matmul_by_rows(),
            stream_by_row_length=self.stream_by_row_length(),
            kernel_floor_s=per_layer * 1e-6,
            kernels_per_layer=1,
            step_fixed_s=fixed * 1e-6,
            cuda_context_bytes=context,
            sources={
                "profile": f"{self.name}: {self.device_name}, torch {self.torch_version}, {self.date}",
                "stream": "measured: decode-shape matmul bytes/s, by the weights' row length"
                if self.stream_by_row_length()
                else "measured: decode-shape matmul bytes/s",
                "matmul": "measured: prefill-shape matmul FLOP/s, by rows in flight, weights from memory"
                if self.matmul_by_rows()
                else "measured: prefill-shape matmul FLOP/s",
                "attention": "measured: sdpa causal forward FLOP/s"
                if self.attentions
                else "the matmul rate (no attention measured)",
                "kernel_floor": "measured: decode step of a 64-wide Llama-like model at 1 and 3 layers"
                if self.floor_step_us
                else "measured: one tiny kernel x the eager ops of a layer",
            },
        )

    def layer_floor_us(self) -> tuple[float, float]:
        """(per layer, per step outside the layers) fixed cost: the slope and the rest of the narrow model's decode
        step over its depths; without it, the eager ops of a layer x one tiny kernel. The head's kernels
        (expected.KERNELS_OUTSIDE_LAYERS x the per-layer figure) come out of the rest."""
        if not self.floor_step_us:
            return self.kernels_per_layer * self.tiny_kernel_us, 0.0
        (low, high), (t_low, t_high) = self.floor_layers, self.floor_step_us
        per_layer = max((t_high - t_low) / (high - low), 0.0)
        rest = t_low - low * per_layer - expected.KERNELS_OUTSIDE_LAYERS * per_layer
        return per_layer, max(rest, 0.0)

    def gpu_spec(self) -> GpuSpec:
        """The machine as a GPU-table row for the bound: measured best matmul FLOP/s and copy bandwidth as peaks."""
        peak = self.matmul("prefill").flops_per_s / TERA
        return GpuSpec(
            name=f"profile {self.name}",
            source=f"measured by tfcost measure --roofline on {self.device_name}",
            device_names=[],
            peak_bf16_tflops=peak,
            peak_fp32_tflops=peak,
            memory_gib=self.memory_bytes / GIB,
            memory_bandwidth_tb_per_s=self.copy_bytes_per_s / TERA,
        )


def profiles_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "tfcost" / "profiles"


def check_name(name: str) -> str:
    if not NAME.match(name):
        raise UsageError(f"profile name {name!r} must be letters, digits, '.', '_' or '-' (at most 64)")
    return name


def save(profile: Profile) -> Path:
    path = profiles_dir() / f"{check_name(profile.name)}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(profile.model_dump(mode="json"), sort_keys=False))
    return path


def load(name: str) -> Profile:
    path = profiles_dir() / f"{check_name(name)}.yaml"
    if not path.is_file():
        raise UsageError(f"no profile named {name!r} in {profiles_dir()} (`tfcost profiles` lists them)")
    try:
        return Profile.model_validate(yaml.safe_load(path.read_text()))
    except (yaml.YAMLError, ValidationError) as error:
        raise TfcostError(f"profile {name!r} ({path}) is not a valid profile: {type(error).__name__}") from None


def listing() -> list[Profile]:
    folder = profiles_dir()
    return [load(path.stem) for path in sorted(folder.glob("*.yaml"))] if folder.is_dir() else []


# Ops one decoder layer dispatches in transformers' eager decode step (5.24, counted with TorchDispatchMode): 39 for
# GPT-2, 55 for Llama; a profile of eager torch takes the middle. A fused engine launches about 10
# (tfcost.costs.expected.KERNELS_PER_LAYER).
EAGER_OPS_PER_LAYER = 47
ELEMENT_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "fp8": 1}


def matmul_run(raw: dict[str, Any]) -> MatmulRun:
    """Rates of `count` timed (m x k) @ (k x n): 2mkn FLOPs each; bytes = both inputs read and the output written
    once, each."""
    m, k, n, count, seconds = raw["m"], raw["k"], raw["n"], raw.get("count", 1), raw["median_ms"] / 1000
    moved = count * (m * k + k * n + m * n) * ELEMENT_BYTES[raw["dtype"]]
    return MatmulRun(
        **raw,
        flops_per_s=hardware.achieved_per_s(count * 2 * m * k * n, seconds),
        bytes_per_s=hardware.achieved_per_s(moved, seconds),
    )


def attention_run(raw: dict[str, Any]) -> AttentionRun:
    """The rate of one causal sdpa forward: the causal triangle's QK^T and AV FLOPs (tfcost.core.flops) over its
    time."""
    work = flops.attention_forward_flops(1, raw["heads"], raw["seq"], raw["head_dim"], causal=True)
    return AttentionRun(**raw, flops_per_s=hardware.achieved_per_s(work, raw["median_ms"] / 1000))


def from_roofline(raw: dict[str, Any], name: str, dtype: str, date: str) -> Profile:
    """A profile from measure.roofline's raw timings."""
    return Profile(
        name=check_name(name),
        device=raw["device"],
        device_name=raw["device_name"],
        torch_version=raw["torch_version"],
        date=date,
        dtype=dtype,
        memory_bytes=raw["memory_bytes"],
        copy_bytes_per_s=hardware.achieved_per_s(raw["copy_bytes"], raw["copy_ms"] / 1000),
        tiny_kernel_us=raw["tiny_kernel_us"],
        tiny_matmul_us=raw["tiny_matmul_us"],
        kernels_per_layer=EAGER_OPS_PER_LAYER,
        floor_layers=raw.get("floor_layers", []),
        floor_step_us=raw.get("floor_step_us"),
        matmuls=[matmul_run(run) for run in raw["matmuls"]],
        attentions=[attention_run(run) for run in raw.get("attentions", [])],
    )
