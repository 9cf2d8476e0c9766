"""The result of `tfcost measure`: each timed attention call set beside the core's estimate for it.

tfcost/measure/kernels.py (torch) only times and reports what happened (`KernelRun`); every derived number here comes
from
the core (flops.py, memory.py, hardware.py, timing.py), so the estimate and the measurement share one formula.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tfcost.core import flops, memory
from tfcost.errors import TfcostError
from tfcost.hardware import rates as hardware
from tfcost.hardware.timing import timing_summary
from tfcost.reports.base import Section, quantity
from tfcost.schema import AttentionShape, GpuSpec, MeasureDevice, MeasureDtype
from tfcost.units import GIGA, TERA, iec

Direction = Literal["forward", "forward+backward"]
Status = Literal["ok", "unsupported", "oom"]
MATERIALIZED_BACKENDS = {"math"}  # the non-fused path that holds the T x T scores

FLOP_CONVENTION = (
    "attention FLOPs = 4*B*H*T^2*Q forward (QK^T and PV, 2*m*k*n per matmul; causal: the exact T(T+1)/2 "
    "triangle); backward = 2.5x forward (5 matmuls with recomputation, as FlashAttention-2 counts it); "
    "forward+backward = 3.5x forward"
)
BYTES_CONVENTION = (
    "minimum bytes = Q, K, V read and O written once (K, V with the key-value heads); forward+backward also "
    "reads dO and writes dQ, dK, dV"
)
MEMORY_CONVENTION = (
    "peak memory = allocated by one call on top of its inputs; estimate = outputs + the B*H*T^2 score matrix "
    "(math backend; twice with backward) or + an fp32 log-sum-exp, linear in T (fused kernels)"
)


class KernelRun(BaseModel):
    """What torch did with one (sequence length, backend, direction): measure.py's raw outcome, nothing derived."""

    model_config = ConfigDict(frozen=True)

    seq: int
    backend: str = Field(description="the backend asked for: auto, flash, efficient, cudnn or math")
    backend_ran: str | None = Field(description="the kernel torch ran (auto's pick); null when none ran")
    direction: Direction
    status: Status
    reason: str | None = Field(None, description="torch's reason, for unsupported and oom")
    samples_ms: list[float] = Field(default_factory=list, description="one time per repetition, milliseconds")
    peak_memory_bytes: int | None = Field(None, description="allocated by one call above its inputs")


class MeasureSetup(BaseModel):
    """What every call of one sweep shares."""

    model_config = ConfigDict(frozen=True)

    model: str | None
    shape: AttentionShape
    batch: int
    dtype: MeasureDtype
    causal: bool


class Measurement(Section):
    """One row of the sweep: the call, its timing, and the core's numbers for it."""

    seq: int
    batch: int
    heads: int
    kv_heads: int
    head_dim: int
    dtype: MeasureDtype
    causal: bool
    direction: Direction
    backend: str
    backend_ran: str | None
    status: Status
    reason: str | None
    repeats: int
    median_ms: float | None = quantity("median ms", "kernel_ms")
    p10_ms: float | None = quantity("p10 ms", "kernel_ms")
    p90_ms: float | None = quantity("p90 ms", "kernel_ms")
    flops: int = quantity("FLOPs", "flops")
    tflops_per_s: float | None = quantity("TFLOP/s", "tflops_per_s")
    peak_fraction: float | None = quantity("of peak", "fraction")
    bytes_moved: int = quantity("min. bytes moved", "bytes")
    bandwidth_gb_per_s: float | None = quantity("GB/s", "gb_per_s")
    roofline_ms: float | None = quantity("roofline ms", "kernel_ms")
    roofline_ratio: float | None = quantity("x roofline", "ratio")
    compute_bound: bool | None = Field(description="the roofline says compute-bound (null without a GPU spec)")
    peak_memory_bytes: int | None = quantity("peak mem", "bytes")
    peak_memory_estimate_bytes: int = quantity("mem est.", "bytes")


class MeasureReport(Section):
    """Everything `tfcost measure` reports."""

    device: MeasureDevice
    device_name: str
    gpu: str | None = Field(description="the GPU spec table row used for peaks; null when none applies")
    torch_version: str
    model: str | None
    flop_convention: str = FLOP_CONVENTION
    bytes_convention: str = BYTES_CONVENTION
    memory_convention: str = MEMORY_CONVENTION
    timing: str = Field(description="how the times were taken")
    notes: list[str] = Field(default_factory=list, description="what the user should know about this run")
    measurements: list[Measurement]


def kernel_flops(shape: AttentionShape, batch: int, seq: int, causal: bool, direction: Direction) -> int:
    """The FLOPs a call is credited with: forward, or forward + backward (2.5x forward for the backward)."""
    args = (batch, shape.heads, seq, shape.head_dim, causal)
    forward = flops.attention_forward_flops(*args)
    return forward if direction == "forward" else forward + flops.attention_backward_flops(*args)


def measurement(run: KernelRun, setup: MeasureSetup, gpu: GpuSpec | None) -> Measurement:
    """Set one run beside the core: FLOPs, bytes, achieved rates, the GPU's peak and the roofline."""
    shape, backward = setup.shape, run.direction == "forward+backward"
    work = kernel_flops(shape, setup.batch, run.seq, setup.causal, run.direction)
    moved = memory.attention_io_bytes(
        setup.batch, shape.heads, shape.kv_heads, run.seq, shape.head_dim, setup.dtype, backward
    )
    estimate = memory.attention_peak_memory_bytes(
        setup.batch,
        shape.heads,
        shape.kv_heads,
        run.seq,
        shape.head_dim,
        setup.dtype,
        materialized=(run.backend_ran or run.backend) in MATERIALIZED_BACKENDS,
        backward=backward,
    )
    # Without a GPU spec (CPU, unknown GPU, no verified peak for the dtype) peak and roofline stay null.
    peak = hardware.peak_flops_per_s(gpu, setup.dtype) if gpu else None
    bandwidth = hardware.bandwidth_bytes_per_s(gpu) if gpu else None
    roofline_ms = hardware.roofline_seconds(work, moved, peak, bandwidth) * 1000 if peak and bandwidth else None

    timed = run.status == "ok" and bool(run.samples_ms)
    median, p10, p90 = timing_summary(run.samples_ms) if timed else (None, None, None)
    flops_per_s = hardware.achieved_per_s(work, median / 1000) if median else None
    bytes_per_s = hardware.achieved_per_s(moved, median / 1000) if median else None
    return Measurement(
        seq=run.seq,
        batch=setup.batch,
        heads=shape.heads,
        kv_heads=shape.kv_heads,
        head_dim=shape.head_dim,
        dtype=setup.dtype,
        causal=setup.causal,
        direction=run.direction,
        backend=run.backend,
        backend_ran=run.backend_ran,
        status=run.status,
        reason=run.reason,
        repeats=len(run.samples_ms),
        median_ms=median,
        p10_ms=p10,
        p90_ms=p90,
        flops=work,
        tflops_per_s=flops_per_s / TERA if flops_per_s else None,
        peak_fraction=hardware.peak_fraction(flops_per_s, peak) if flops_per_s and peak else None,
        bytes_moved=moved,
        bandwidth_gb_per_s=bytes_per_s / GIGA if bytes_per_s else None,
        roofline_ms=roofline_ms,
        roofline_ratio=hardware.roofline_ratio(median, roofline_ms) if median and roofline_ms else None,
        compute_bound=hardware.is_compute_bound(work, moved, peak, bandwidth) if peak and bandwidth else None,
        peak_memory_bytes=run.peak_memory_bytes,
        peak_memory_estimate_bytes=estimate,
    )


def call_bytes(setup: MeasureSetup, seq: int, backend: str, backward: bool) -> int:
    """The least one call needs in memory: its inputs Q, K, V (and dO with the backward pass) plus the core's
    estimate of what the call allocates on top of them. 'auto' may pick a fused kernel, so it is priced as one."""
    shape = setup.shape
    q_bytes = memory.attention_tensor_bytes(setup.batch, shape.heads, seq, shape.head_dim, setup.dtype)
    kv_bytes = memory.attention_tensor_bytes(setup.batch, shape.kv_heads, seq, shape.head_dim, setup.dtype)
    inputs = q_bytes + 2 * kv_bytes + (q_bytes if backward else 0)
    allocated = memory.attention_peak_memory_bytes(
        setup.batch,
        shape.heads,
        shape.kv_heads,
        seq,
        shape.head_dim,
        setup.dtype,
        materialized=backend in MATERIALIZED_BACKENDS,
        backward=backward,
    )
    return inputs + allocated


def does_not_fit(needed: int, free: int, where: str) -> str:
    """The reason a call is not run: the bytes it needs and the bytes free."""
    return f"needs at least {needed:,} bytes ({iec(needed)}); {where} has {free:,} bytes ({iec(free)}) free"


def calls_that_do_not_fit(
    setup: MeasureSetup, seqs: list[int], directions: list[Direction], backends: list[str], free: int | None, where: str
) -> dict[tuple[int, Direction, str], str]:
    """(seq, direction, backend) -> why not, for each call of the sweep that cannot fit in `free` bytes; when none
    of them can, one line naming the smallest, before anything is allocated."""
    if free is None:  # nothing known: torch's own out-of-memory error will say
        return {}
    needs = {
        (seq, direction, backend): call_bytes(setup, seq, backend, direction == "forward+backward")
        for seq in seqs
        for direction in directions
        for backend in backends
    }
    unfit = {call: does_not_fit(needed, free, where) for call, needed in needs.items() if needed > free}
    if len(unfit) == len(needs):
        (seq, direction, backend), needed = min(needs.items(), key=lambda item: item[1])
        raise TfcostError(f"T={seq:,} {direction} ({backend}) {does_not_fit(needed, free, where)}")
    return unfit


# A spread of repeats wider than this (p90 / p10) means the machine is busy with other work: the medians, and the
# expected/measured ratios set beside them, move run to run. A quiet GPU repeats a kernel within a few percent; a
# shared 2-core CPU showed ratios swinging 4-9x between runs. The limit is a judgement, said in the warning.
NOISY_SPREAD = 1.5


def spread(row: Measurement) -> float | None:
    """p90 / p10 of a measurement's repeats; None when it did not run."""
    if row.p10_ms is None or row.p90_ms is None or row.p10_ms <= 0:
        return None
    return row.p90_ms / row.p10_ms


def noisiest(report: MeasureReport) -> tuple[Measurement, float] | None:
    """The measurement whose repeats spread most, when that spread passes NOISY_SPREAD; else None."""
    spreads = [(row, value) for row in report.measurements if (value := spread(row)) is not None]
    if not spreads:
        return None
    row, value = max(spreads, key=lambda item: item[1])
    return (row, value) if value > NOISY_SPREAD else None
