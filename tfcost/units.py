"""Units: bytes per dtype, and the one place numbers become human text.

Counts and FLOPs use SI (decimal) prefixes: 1 GFLOP = 10^9 FLOPs. Bytes use IEC (binary) prefixes:
1 MiB = 2^20 bytes. Both are labelled as such, never "GB" for 2^30.
"""

from __future__ import annotations

from typing import Literal

Dtype = Literal["fp32", "fp16", "bf16", "fp8", "int8"]
DTYPE_BYTES: dict[str, int] = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}

Unit = Literal["count", "flops", "bytes", "ms", "tflops_per_s", "gb_per_s", "fraction", "ratio"]

GIB = 2**30  # bytes in a gibibyte
GIGA = 10**9  # measured bandwidth is shown in decimal GB/s
TERA = 10**12  # datasheets give FLOP/s and bytes/s in decimal tera

# Measured quantities carry their unit in their name and label (median_ms, "TFLOP/s"), so a cell is a bare
# number; bandwidth in decimal GB/s as datasheets quote it.
MEASURED_FORMATS: dict[str, str] = {
    "ms": "{:.4g}",
    "tflops_per_s": "{:.3g}",
    "gb_per_s": "{:.1f}",
    "fraction": "{:.1%}",
    "ratio": "{:.2f}x",
}

_SI = ["", "k", "M", "G", "T", "P", "E", "Z", "Y", "R", "Q"]
_IEC = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"]


def si(value: float, suffix: str = "") -> str:
    """124439808 -> '124.44 M'; 2.9e11 with suffix 'FLOP' -> '291.65 GFLOP'."""
    scaled, step = float(value), 0
    while abs(scaled) >= 1000 and step < len(_SI) - 1:
        scaled, step = scaled / 1000, step + 1
    if abs(scaled) >= 1000:  # beyond quetta: say it in powers of ten rather than print a 40-digit mantissa
        return f"{value:.3e} {suffix}".rstrip()
    if step == 0 and float(value).is_integer():
        return f"{int(value)} {suffix}".rstrip()
    return f"{scaled:.2f} {_SI[step]}{suffix}".rstrip()


def iec(num_bytes: float) -> str:
    """37748736 -> '36.00 MiB'."""
    scaled, step = float(num_bytes), 0
    while abs(scaled) >= 1024 and step < len(_IEC) - 1:
        scaled, step = scaled / 1024, step + 1
    if abs(scaled) >= 1024:
        return f"{num_bytes:.3e} B"
    if step == 0:
        return f"{int(num_bytes)} B" if float(num_bytes).is_integer() else f"{num_bytes:.2f} B"
    return f"{scaled:.2f} {_IEC[step]}"


def human(value: float, unit: Unit) -> str:
    """A value in its unit's human form: SI for counts and FLOPs, IEC for bytes."""
    if unit == "bytes":
        return iec(value)
    if unit in MEASURED_FORMATS:  # measured rates and times: already in their unit, shown to 3-4 figures
        return MEASURED_FORMATS[unit].format(value)
    return si(value, "FLOP" if unit == "flops" else "")
