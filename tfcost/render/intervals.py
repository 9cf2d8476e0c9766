"""The error bars `train` and `serve` print under their table: each predicted figure with the range the validation
suite measured around predictions of its kind (tfcost.costs.intervals)."""

from __future__ import annotations

import sys
import textwrap
from typing import Any

from tfcost.render.layout import terminal_width
from tfcost.units import human

# The figures given a range, by their JSON path: a label and the unit they print in.
LABELS: dict[str, tuple[str, str]] = {
    "step.seconds.total": ("step", "seconds"),
    "time.days": ("wall clock", "days"),
    "memory_per_gpu.total_bytes": ("memory per GPU", "bytes"),
    "expected.ttft_ms": ("TTFT", "ms"),
    "expected.tpot_ms": ("TPOT", "ms"),
    "expected.inflight_tokens_per_s": ("in-flight tokens/s", "per_s"),
    "expected.max_kv_tokens": ("KV capacity", "tokens"),
}


def shown(value: float, unit: str) -> str:
    """A value as the table shows it; token counts as whole numbers with separators."""
    return f"{value:,.0f} tokens" if unit == "tokens" else human(value, unit)  # type: ignore[arg-type]


def value_at(result: Any, path: str) -> Any:
    value = result
    for key in path.split("."):
        value = value[key] if isinstance(value, dict) else getattr(value, key)
    return value


def interval_line(result: Any) -> str | None:
    """One sentence: each figure, its range and how many runs it rests on."""
    bars = getattr(result, "intervals", None)
    if not bars:
        return None
    parts = []
    for path, bar in bars.items():
        label, unit = LABELS.get(path, (path, "count"))
        value = value_at(result, path)
        parts.append(
            f"{label} {shown(value, unit)} ({shown(bar.low, unit)} to {shown(bar.high, unit)}, {bar.runs} runs)"
        )
    return (
        "Error bars, the 10th to 90th percentile of published runs of the kind against tfcost's predictions "
        f"(docs/validation.md): {'; '.join(parts)}."
    )


def print_interval_line(result: Any, output: str) -> None:
    line = interval_line(result)
    if line is not None and output in ("table", "markdown"):
        width = terminal_width() or 100
        sys.stdout.write(textwrap.fill(line, width=max(width, 40), break_on_hyphens=False) + "\n")
