"""Accelerator numbers in base units, from a GpuSpec: FLOP/s, bytes, bytes/s, and the roofline ridge point."""

from __future__ import annotations

from tfcost.schema import GpuSpec
from tfcost.units import GIB, TERA, Dtype


def peak_flops_per_s(gpu: GpuSpec, dtype: Dtype | str) -> float | None:
    """Dense peak FLOP/s for matmuls in `dtype`; None where the table has no verified figure (or no such unit)."""
    tflops = {
        "bf16": gpu.peak_bf16_tflops,
        "fp16": gpu.peak_bf16_tflops,
        "fp8": gpu.peak_fp8_tflops,
        "fp32": gpu.peak_fp32_tflops,
    }.get(dtype)
    return None if tflops is None else tflops * TERA


def memory_bytes(gpu: GpuSpec) -> int:
    """Device memory as sold, in bytes."""
    return round(gpu.memory_gib * GIB)


def bandwidth_bytes_per_s(gpu: GpuSpec) -> float:
    """Device memory bandwidth, bytes per second."""
    return gpu.memory_bandwidth_tb_per_s * TERA


def ridge_point(gpu: GpuSpec, dtype: Dtype | str) -> float | None:
    """FLOPs per byte above which a kernel is compute-bound: peak / bandwidth (the roofline model,
    Williams et al. 2009). H100 SXM in bf16: 989.4e12 / 3.35e12 = 295."""
    peak = peak_flops_per_s(gpu, dtype)
    return None if peak is None else peak / bandwidth_bytes_per_s(gpu)


def roofline_seconds(flops: float, bytes_moved: float, peak_flops: float, bandwidth: float) -> float:
    """The roofline lower bound on a kernel's time: it can neither compute faster than the peak nor move data
    faster than the bandwidth, so time >= max(FLOPs / peak, bytes / bandwidth) (Williams et al. 2009)."""
    return max(flops / peak_flops, bytes_moved / bandwidth)


def is_compute_bound(flops: float, bytes_moved: float, peak_flops: float, bandwidth: float) -> bool:
    """True when arithmetic intensity (FLOPs per byte) reaches the ridge point peak / bandwidth."""
    return flops * bandwidth >= bytes_moved * peak_flops


def achieved_per_s(amount: float, seconds: float) -> float:
    """A rate: FLOPs, bytes or tokens done over the seconds it took (a measured run, or a roofline time)."""
    return amount / seconds


def peak_fraction(achieved_per_second: float, peak_per_second: float) -> float:
    """Achieved over the datasheet's dense peak: the model-FLOPs utilisation of one kernel (PaLM App. B's MFU)."""
    return achieved_per_second / peak_per_second


def roofline_ratio(measured_seconds: float, roofline_bound_seconds: float) -> float:
    """Measured time over the roofline bound: 1.0 would be a kernel at the hardware's limit."""
    return measured_seconds / roofline_bound_seconds
