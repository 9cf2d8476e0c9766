"""Units: bytes per dtype, and the one place numbers become human text.

Counts and FLOPs use SI (decimal) prefixes: 1 GFLOP = 10^9 FLOPs. Bytes use IEC (binary) prefixes:
1 MiB = 2^20 bytes. Both are labelled as such, never "GB" for 2^30.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

Dtype = Literal["fp32", "fp16", "bf16", "fp8", "int8"]
DTYPE_BYTES: dict[str, int] = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}

Unit = Literal[
    "count", "flops", "bytes", "flops_per_s", "bytes_per_s", "fraction", "days", "hours", "ms", "usd", "per_s", "text",
    "kernel_ms", "tflops_per_s", "gb_per_s", "ratio", "seconds", "usd_fine", "joules", "kwh", "whole",
]  # fmt: skip

# The largest size tfcost accepts (layers, widths, heads, vocabulary, tokens per sequence, batch): far beyond any
# model, 10^15 layers still answer, yet every product of a few sizes stays a number printed in an instant.
MAX_SIZE = 10**18
# A recurrent model has no maximum context of its own; this stands in for "unbounded" in `serve`'s report.
UNBOUNDED_CONTEXT = 1 << 20
GIB = 2**30  # bytes in a gibibyte
GIGA = 10**9  # measured bandwidth is shown in decimal GB/s
TERA = 10**12  # datasheets give FLOP/s and bytes/s in decimal tera
MS_PER_S = 1000  # milliseconds in a second

_SI = ["", "k", "M", "G", "T", "P", "E", "Z", "Y", "R", "Q"]
_IEC = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"]


def prefix_step(value: float, base: int, last: int) -> int:
    """How many times to divide by `base`: the most that leaves the mantissa, rounded to two decimals, at least 1,
    so 999,995 is '1.00 M' and not '1000.00 k'; `last` at most."""
    step = 0
    while step < last and round(abs(value) / base**step, 2) >= base:
        step += 1
    return step


def si(value: float, suffix: str = "") -> str:
    """124439808 -> '124.44 M'; 2.9e11 with suffix 'FLOP' -> '291.65 GFLOP'."""
    step = prefix_step(value, 1000, len(_SI) - 1)
    scaled = value / 1000**step
    if round(abs(scaled), 2) >= 1000:  # beyond quetta: say it in powers of ten rather than print a 40-digit mantissa
        return f"{value:.3e} {suffix}".rstrip()
    if step == 0 and float(value).is_integer():
        return f"{int(value)} {suffix}".rstrip()
    return f"{scaled:.2f} {_SI[step]}{suffix}".rstrip()


def iec(num_bytes: float) -> str:
    """37748736 -> '36.00 MiB'."""
    step = prefix_step(num_bytes, 1024, len(_IEC) - 1)
    scaled = num_bytes / 1024**step
    if round(abs(scaled), 2) >= 1024:
        return f"{num_bytes:.3e} B"
    if step == 0:
        return f"{int(num_bytes)} B" if float(num_bytes).is_integer() else f"{num_bytes:.2f} B"
    return f"{scaled:.2f} {_IEC[step]}"


def milliseconds(seconds: float) -> float:
    """A time in seconds as milliseconds, the unit prefill and decode times are printed in."""
    return seconds * MS_PER_S


def ceil_div(numerator: int, denominator: int) -> int:
    """Whole units per share, rounding up: a shard of bytes that does not divide evenly still needs its last byte."""
    return -(-numerator // denominator)


def three_figures(value: float) -> str:
    """A measured quantity to three significant figures, never in exponent form: 0.0524, 14.6, 2,432."""
    if value == 0 or abs(value) >= 100:
        return f"{value:,.0f}"
    digits = 2 - math.floor(math.log10(abs(value)))
    return f"{value:.{digits}f}"


def human(value: float | str | bool, unit: Unit) -> str:
    """A value in its unit's human form: SI for counts and FLOPs, IEC for bytes, decimal B/s for bandwidth
    (as datasheets give it), and plain forms for times, money and fractions."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if unit == "bytes":
        return iec(value)
    plain: dict[str, Callable[[float], str]] = {
        "flops_per_s": lambda v: si(v, "FLOP/s"),
        "bytes_per_s": lambda v: si(v, "B/s"),
        "fraction": lambda v: f"{v:.1%}",
        "days": lambda v: f"{v:,.2f} days",
        "hours": lambda v: f"{v:,.0f} h",
        "ms": lambda v: f"{v:,.2f} ms",
        "seconds": lambda v: f"{v:,.3f} s",
        "usd": lambda v: f"${v:,.0f}",
        "usd_fine": lambda v: f"${v:,.3f}",
        "joules": lambda v: f"{three_figures(v)} J",
        "kwh": lambda v: f"{three_figures(v)} kWh",
        "per_s": lambda v: f"{v:,.0f} /s",
        "text": str,
        # a token count or a batch, whole with separators (T = 4,096, not 4.10 k): one reads them as set
        "whole": lambda v: f"{int(v):,}" if float(v).is_integer() else f"{v:,}",
        # measure's table: bare numbers under a label that says the unit ("median ms", "TFLOP/s", "GB/s"), to
        # 3-4 figures since a kernel may take 0.05 ms; bandwidth in decimal GB/s as datasheets quote it
        "kernel_ms": lambda v: f"{v:.4g}",
        "tflops_per_s": lambda v: f"{v:.3g}",
        "gb_per_s": lambda v: f"{v:.1f}",
        "ratio": lambda v: f"{v:.2f}x",
    }
    if unit in plain:
        return plain[unit](value)
    return si(value, "FLOP" if unit == "flops" else "")


MAX_COUNT = 10**30  # far beyond any training run, small enough to stay instant
_COUNT_SUFFIXES = {"k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}


def parse_count(text: str) -> int:
    """A positive whole count as people write it: 300000000000, 300_000_000_000, 3e11, 300B, 1.4T, 160.6b.

    Raises ValueError naming the text when it is not a positive whole number.
    """
    import re
    from decimal import Decimal, InvalidOperation

    stripped = text.strip()
    # A comma only groups thousands of a plain integer (300,000,000,000): in 1,5T it is a decimal comma, and
    # dropping it would read fifteen trillion.
    if "," in stripped and not re.fullmatch(r"[0-9]{1,3}(,[0-9]{3})+", stripped):
        raise ValueError(f"'{text}': a comma may only group thousands (300,000,000,000); write decimals with a point")
    cleaned = stripped.replace("_", "").replace(",", "")
    scale = _COUNT_SUFFIXES.get(cleaned[-1:].lower(), 1) if cleaned[-1:].isalpha() else 1
    digits = cleaned[:-1] if scale != 1 else cleaned
    try:
        value = Decimal(digits) * scale
    except InvalidOperation:
        raise ValueError(f"'{text}' is not a count (try 300000000000, 3e11 or 300B)") from None
    except ArithmeticError:  # decimal.Overflow: an exponent beyond any count
        raise ValueError(f"'{text}' is larger than {MAX_COUNT:.0e}") from None
    if not value.is_finite() or value <= 0:
        raise ValueError(f"'{text}' is not a positive whole number")
    if value > MAX_COUNT:  # checked before int() so that 1e999999 cannot build a million-digit integer
        raise ValueError(f"'{text}' is larger than {MAX_COUNT:.0e}")
    if value != value.to_integral_value():
        raise ValueError(f"'{text}' is not a whole number")
    return int(value)


# Sequence lengths are quoted in binary thousands: "4k" is 4,096 tokens, "128K" 131,072 (Llama 3.1's context:
# max_position_embeddings 131072 in its config.json, presets/models/llama-3.1-8b.yaml), "1M" 1,048,576.
_LENGTH_SUFFIXES = {"k": 2**10, "m": 2**20}


def parse_length(text: str) -> int:
    """A sequence length as people write it: 4096, 4_096, 4,096, 4k (4,096), 32K (32,768), 1M (1,048,576).

    k and M are binary here, as context lengths are quoted; a training token count (parse_count) is decimal.
    Raises ValueError naming the text when it is not a positive whole number of tokens up to MAX_SIZE.
    """
    from decimal import Decimal, InvalidOperation

    stripped = text.strip()
    if not stripped.isascii():  # "²" or a fullwidth digit is no length a user meant
        raise ValueError(f"'{text}' is not a number of tokens (try 4096, 4k or 1M)")
    suffix = stripped[-1:].lower()
    scale = _LENGTH_SUFFIXES.get(suffix, 1)
    digits = (stripped[:-1] if suffix in _LENGTH_SUFFIXES else stripped).replace("_", "")
    if "," in digits and not all(part.isdigit() and len(part) == 3 for part in digits.split(",")[1:]):
        raise ValueError(f"'{text}': a comma may only group thousands (4,096)")
    try:
        value = Decimal(digits.replace(",", "")) * scale
    except (InvalidOperation, ArithmeticError):
        raise ValueError(f"'{text}' is not a number of tokens (try 4096, 4k or 1M)") from None
    if not value.is_finite() or value <= 0 or value != value.to_integral_value():
        raise ValueError(f"'{text}' is not a positive whole number of tokens")
    if value > MAX_SIZE:
        raise ValueError(f"'{text}' is larger than {MAX_SIZE:.0e}")
    return int(value)
