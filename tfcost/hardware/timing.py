"""Summary statistics of repeated timings, as kernel benchmarks report them: the median with p10 and p90.

The median resists the occasional slow repetition (a clock change, a preempted thread) that would pull a mean;
p10..p90 shows how stable the runs were (triton.testing.do_bench reports quantiles the same way).
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(samples: Sequence[float], fraction: float) -> float:
    """The `fraction` quantile, interpolating linearly between the sorted samples (numpy's default method).

    Written as low + f * (high - low), clamped to [low, high], so that equal neighbours give exactly their value
    and the quantiles of one list never cross: p10 <= median <= p90."""
    if not samples:
        raise ValueError("no timing samples")
    ordered = sorted(samples)
    position = (len(ordered) - 1) * fraction
    below = math.floor(position)
    low, high = ordered[below], ordered[min(below + 1, len(ordered) - 1)]
    return min(max(low + (position - below) * (high - low), low), high)


def timing_summary(samples_ms: Sequence[float]) -> tuple[float, float, float]:
    """(median, p10, p90) of timings in milliseconds."""
    return percentile(samples_ms, 0.5), percentile(samples_ms, 0.1), percentile(samples_ms, 0.9)
