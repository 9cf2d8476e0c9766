"""Profiles: what `tfcost measure --roofline` (and `--step`) measured on one machine, kept as plain YAML under the
user's config directory ($XDG_CONFIG_HOME/tfcost/profiles, else ~/.config/tfcost/profiles), so that `serve` and
`train` can use measured rates in place of the GPU table's. A profile is a file a user can commit and share."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from tfcost.core import flops
from tfcost.costs import expected
from tfcost.errors import TfcostError, UsageError, describe_validation_error
from tfcost.hardware import rates as hardware
from tfcost.schema import GpuSpec
from tfcost.units import GIB, TERA

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# A profile is a file users share: every number must be one a machine could measure. The bounds are far past any
# machine (a zettaFLOP/s, an exbibyte), and keep every product the estimates make finite.
MAX_RATE = 1e21
MAX_SIZE = 1 << 60
MAX_MS = 1e7  # a timing of about three hours


def printable(text: str) -> str:
    """A shared profile's text is printed: nothing that would not print as itself (C0, C1, bidi controls)."""
    if not text.isprintable():
        raise ValueError("holds a character that does not print (a control or a bidi override)")
    return text


Text = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(printable)]
Rate = Annotated[float, Field(gt=0, le=MAX_RATE)]
Millis = Annotated[float, Field(gt=0, le=MAX_MS)]
Micros = Annotated[float, Field(ge=0, le=MAX_MS * 1000)]
Size = Annotated[int, Field(gt=0, le=MAX_SIZE)]
ProfileDtype = Literal["bf16", "fp16", "fp32", "fp8"]
STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class MatmulRun(BaseModel):
    model_config = STRICT

    dtype: ProfileDtype
    kind: Literal["decode", "prefill"] = Field(
        description="decode (one row: streams the weights) or prefill (many rows: compute)"
    )
    m: Size
    k: Size
    n: Size
    count: Size = Field(default=1, description="matrices applied in a row (decode: more than the caches hold)")
    median_ms: Millis
    flops_per_s: Rate
    bytes_per_s: Rate


class AttentionRun(BaseModel):
    """One causal forward of the fused attention kernel (sdpa) at B = 1, H heads of Q, T positions."""

    model_config = STRICT

    dtype: ProfileDtype
    heads: Size
    seq: Size
    head_dim: Size
    median_ms: Millis
    flops_per_s: Rate


class Profile(BaseModel):
    """One machine's measured rates."""

    model_config = STRICT

    name: str = Field(pattern=NAME.pattern)
    device: Literal["cuda", "cpu"] = Field(description="cuda or cpu")
    device_name: Text
    torch_version: Text
    date: Text
    dtype: ProfileDtype = Field(description="the element type the rates are for (serve --weights-dtype)")
    memory_bytes: Size = Field(description="device memory (CPU: physical memory)")
    copy_bytes_per_s: Rate = Field(description="large device copy: bytes read + written per second")
    tiny_kernel_us: Micros = Field(description="one tiny kernel (an add of one element), back to back, us")
    tiny_matmul_us: Micros = Field(description="one 16 x 16 matmul, back to back, us")
    kernels_per_layer: int = Field(gt=0, le=100_000, description="kernels one layer launches in the engine measured")
    floor_layers: list[Annotated[int, Field(gt=0, le=100_000)]] = Field(
        default_factory=list, max_length=2, description="depths of the narrow floor model"
    )
    floor_step_us: list[Micros] | None = Field(
        default=None, max_length=2, description="its decode step at each depth, us"
    )
    matmuls: list[MatmulRun] = Field(min_length=1, max_length=10_000)
    attentions: list[AttentionRun] = Field(
        default_factory=list, max_length=10_000, description="sdpa at a prefill's shape"
    )
    steps: list[dict[str, object]] = Field(
        default_factory=list, max_length=1000, description="measure --step results, if any"
    )

    @model_validator(mode="after")
    def consistent(self) -> Profile:
        """The fields agree: a decode and a prefill matmul in the profile's dtype, and a floor measured at two
        different depths, a time for each."""
        kinds = {run.kind for run in self.matmuls if run.dtype == self.dtype}
        if kinds != {"decode", "prefill"}:
            raise ValueError(f"matmuls: needs a decode and a prefill run in the profile's dtype {self.dtype}")
        if self.floor_step_us is not None or self.floor_layers:
            layers, steps = self.floor_layers, self.floor_step_us or []
            if len(layers) != 2 or len(steps) != 2 or layers[0] >= layers[1]:
                raise ValueError("floor_layers and floor_step_us: two increasing depths and a time for each")
        return self

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


def profile_path(name: str) -> Path:
    return profiles_dir() / f"{check_name(name)}.yaml"


def check_save_path(name: str) -> Path:
    """Where `--save-profile NAME` will write, checked before any measuring: a valid name, a folder that exists
    (made if need be) and takes a new file, and no folder or other non-file in the way."""
    path = profile_path(name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and not path.is_file():
            raise TfcostError(f"--save-profile: {path} is not a regular file")
        handle, probe = tempfile.mkstemp(dir=path.parent, prefix=".tfcost-", suffix=".probe")
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        raise TfcostError(f"--save-profile: cannot write in {path.parent}: {error.strerror}") from None
    return path


def save(profile: Profile) -> Path:
    """The profile written whole or not at all: a temporary file in the same folder, renamed over the old one, so
    that a reader never sees half a file."""
    from tfcost.readers.files import atomic_write

    path = check_save_path(profile.name)
    text = yaml.safe_dump(profile.model_dump(mode="json"), sort_keys=False)
    try:
        atomic_write(path, text)
    except OSError as error:
        raise TfcostError(f"--save-profile: cannot write {path}: {error.strerror}") from None
    return path


def refuse_aliases(text: str) -> None:
    """A profile is plain data: no anchor or alias (a few lines of them expand to gigabytes, "billion laughs")."""
    from tfcost.readers.files import strict_loader

    for event in yaml.parse(text, Loader=strict_loader()):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise yaml.YAMLError("anchors and aliases are refused in a profile")


def load(name: str) -> Profile:
    from tfcost.readers.files import CONSTRUCTOR_ERRORS, read_text, safe_load

    if not isinstance(name, str):
        raise UsageError(f"profile: expected a saved profile's name, not {type(name).__name__}")
    path = profile_path(name)
    if not path.is_file():
        raise UsageError(f"no profile named {name!r} in {profiles_dir()} (`tfcost profiles` lists them)")
    bad = f"profile {name!r} ({path}) is not a valid profile"
    text = read_text(path, "a profile")  # size-checked (1 MiB) before it is parsed
    try:
        refuse_aliases(text)
        return Profile.model_validate(safe_load(text))
    except yaml.YAMLError as error:
        problem = getattr(error, "problem", None) or (str(error) if type(error) is yaml.YAMLError else "")
        raise TfcostError(f"{bad}: malformed YAML{': ' + problem if problem else ''}") from None
    except ValidationError as error:
        raise TfcostError(f"{bad}: {describe_validation_error(error)}") from None
    except CONSTRUCTOR_ERRORS:
        raise TfcostError(f"{bad}: a value that does not fit its type") from None
    except RecursionError:
        raise TfcostError(f"{bad}: nested too deeply") from None


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
    """A profile from measure.roofline's raw timings, refused in one line if they are not a valid profile (a timer
    that read zero, a device name that does not print)."""
    try:
        return measured_profile(raw, name, dtype, date)
    except ValidationError as error:
        raise TfcostError(
            f"this machine's measurements do not make a profile: {describe_validation_error(error)}"
        ) from None


def measured_profile(raw: dict[str, Any], name: str, dtype: str, date: str) -> Profile:
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
