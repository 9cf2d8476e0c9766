"""Every approximate figure with its error bar: what the validation suite measured around predictions of its kind.

A prediction P of a time, a memory or a capacity in a category whose published runs gave predicted / measured
ratios r (10th percentile r10, 90th r90) was, in 80% of those runs, within a factor of what was measured: the
measured value lay between P / r90 and P / r10. A rate (tokens/s) is the inverse of a time, so its range is
P x r10 to P x r90. The framework's own runs give the ratios where it has enough of them
(benchmarks/validate.py's MIN_RUNS), else the category's. No tool in this field publishes such a range; these are
tfcost's own, regenerated with the validation suite, and they say nothing about setups unlike its cases.
"""

from __future__ import annotations

from tfcost.readers.validation_errors import validation_errors
from tfcost.schema import Interval


def interval(value: float | None, category: str, framework: str | None, rate: bool = False) -> Interval | None:
    """The error bar of a predicted `value` (None: the factors alone, as `plan` gives them for every layout) in
    `category`, from `framework`'s own runs where there are enough; None where the category has too few runs."""
    entry = validation_errors().get(category)
    if not isinstance(entry, dict):
        return None
    own = entry.get("by_framework", {}).get(framework) if framework is not None else None
    chosen = own if isinstance(own, dict) else entry
    ratio_low, ratio_high = float(chosen["ratio_p10"]), float(chosen["ratio_p90"])
    low_factor, high_factor = (ratio_low, ratio_high) if rate else (1 / ratio_high, 1 / ratio_low)
    return Interval(
        category=category,
        framework=framework if own is not None else None,
        runs=int(chosen["runs"]),
        held_out_runs=int(chosen["held_out_runs"]),
        geo_mean_error=float(chosen["geo_mean_error"]),
        low_factor=low_factor,
        high_factor=high_factor,
        low=None if value is None else value * low_factor,
        high=None if value is None else value * high_factor,
    )


def train_intervals(
    step_seconds: float | None, days: float, memory_bytes: int, framework: str | None
) -> dict[str, Interval]:
    """`train`'s predicted step time, days and memory per GPU, each with its category's range."""
    bars = {
        "step.seconds.total": interval(step_seconds, "step_time", framework) if step_seconds is not None else None,
        "time.days": interval(days, "step_time", framework) if step_seconds is not None else None,
        "memory_per_gpu.total_bytes": interval(memory_bytes, "training_memory", framework),
    }
    return {key: bar for key, bar in bars.items() if bar is not None}


def serve_intervals(
    ttft_ms: float, tpot_ms: float, tokens_per_s: float, max_kv_tokens: int, framework: str | None
) -> dict[str, Interval]:
    """`serve`'s expected TTFT, TPOT, in-flight tokens/s and KV capacity, each with its category's range."""
    bars = {
        "expected.ttft_ms": interval(ttft_ms, "serving", framework),
        "expected.tpot_ms": interval(tpot_ms, "serving", framework),
        "expected.inflight_tokens_per_s": interval(tokens_per_s, "serving", framework, rate=True),
        "expected.max_kv_tokens": interval(max_kv_tokens, "kv_capacity", framework),
    }
    return {key: bar for key, bar in bars.items() if bar is not None}
