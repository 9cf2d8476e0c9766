"""Crossovers: the sequence length T at which a cost that grows with T catches up with one that does not.

The lesson's three: the attention-score FLOPs per token (6*L*T*d) reach the 6N term (GPT-2 small:
6*85,056,000 / (6*12*768) = 9,229 1/6 tokens); the KV cache of B sequences reaches the weights; one layer's score
matrix outgrows the GPU's memory. Each is found exactly: the growing cost is an integer curve in T (tfcost.core.curves),
nondecreasing, so a binary search in integers finds the largest T at which it has not passed the fixed cost, and
where the curve is linear there the crossing itself is the fraction (level - c) / b.

Every T reported is that crossing rounded down: the largest whole T at which the growing cost is still at most
the fixed one (from T + 1 on it is larger). Sliding windows cap what they touch, so a model whose every layer is
windowed may never cross, and an encoder keeps no KV cache at all: then there is no crossover, and the reason says
why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from tfcost.core import flops, memory
from tfcost.core.curves import Curve, attention_term_curve, curve, kv_cache_curve
from tfcost.costs import serving
from tfcost.hardware import rates as hardware
from tfcost.schema import GpuSpec, ModelShape, WeightsDtype
from tfcost.units import MAX_SIZE, Dtype


@dataclass(frozen=True)
class Crossover:
    """One crossover of one model: `seq_len` is the crossing rounded down; None when there is none."""

    model: str
    name: str  # attention_vs_6n, kv_cache_vs_weights, score_matrix_vs_gpu
    label: str
    batch: int  # B: sequences, for the costs that depend on it
    seq_len: int | None  # the largest T at which the growing cost is at most the fixed one
    crossing: float | None  # the crossing itself, as a float (for charts)
    exact: str | None  # the crossing as an exact fraction "p/q" where the curve is linear there
    level: int  # the fixed cost: 6N FLOPs per token, weight bytes or GPU memory bytes
    reason: str | None  # why there is no crossover


def last_at_most(growing: Curve, level: int) -> int | None:
    """The largest T in 0..MAX_SIZE with growing(T) <= level (growing is nondecreasing; T = 0 costs nothing), or
    None when it never exceeds `level` up to MAX_SIZE."""
    if growing(MAX_SIZE) <= level:
        return None
    if growing(1) > level:
        return 0
    low, high = 1, 2  # growing(low) <= level < growing(high)
    while growing(high) <= level:
        low, high = high, min(2 * high, MAX_SIZE)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if growing(middle) <= level else (low, middle)
    return low


def crossing_point(growing: Curve, level: int, below: int) -> tuple[float, Fraction | None]:
    """Where growing(T) = level between `below` and below + 1: exactly, as a fraction, where the curve is linear
    there; a quadratic's root as a float; below + 1/2 where the curve has no closed form."""
    if not growing.is_closed_form or growing.chunked:  # no single polynomial across a chunk edge
        return below + 0.5, None
    piece = growing.pieces[max(i for i, p in enumerate(growing.pieces) if p.start <= below + 1)]
    a, b, c = piece.a, piece.b, piece.c - level * piece.den  # a*T^2 + b*T + c = 0
    if a == 0 and b:
        exact = Fraction(-c, b)
        if below <= exact <= below + 1:
            return float(exact), exact
    elif a > 0:
        root = (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)
        if below <= root <= below + 1:
            return root, None
    return below + 0.5, None


def crossover(
    shape: ModelShape, name: str, label: str, batch: int, growing: Curve, level: int, never: str
) -> Crossover:
    below = last_at_most(growing, level)
    point, exact = (None, None) if below is None else crossing_point(growing, level, below)
    return Crossover(
        model=shape.name,
        name=name,
        label=label,
        batch=batch,
        seq_len=below,
        crossing=point,
        exact=None if exact is None else f"{exact.numerator}/{exact.denominator}",
        level=level,
        reason=never if below is None else None,
    )


def attention_equals_six_n(shape: ModelShape) -> Crossover:
    """T at which the attention-score term 6*L*T*(H*Q) equals 6N per token (the lesson: 9,229 for GPT-2 small)."""
    return crossover(
        shape,
        "attention_vs_6n",
        "attention-score FLOPs per token = 6N",
        1,
        attention_term_curve(shape),
        flops.six_n_flops_per_token(shape),
        f"{capped_by(shape)} stop the attention term growing before it reaches 6N",
    )


def capped_by(shape: ModelShape) -> str:
    """What caps the positions a model's queries read: sliding windows, or top-k sparse attention's selection."""
    selected = any(span.topk is not None for span, _ in flops.score_term_form(shape))
    return "top-k sparse attention's selections" if selected else "sliding windows"


def kv_cache_equals_weights(
    shape: ModelShape, batch: int, kv_dtype: Dtype, weights_dtype: WeightsDtype | None = "bf16"
) -> Crossover:
    """T at which the KV cache of B sequences (at kv_dtype) equals the weights (at weights_dtype)."""
    never = (
        "an encoder keeps no KV cache"
        if memory.kv_cache_bytes_per_token(shape, kv_dtype) == 0
        else "sliding windows stop the KV cache growing before it reaches the weights"
    )
    return crossover(
        shape,
        "kv_cache_vs_weights",
        f"KV cache of {batch:,} sequence{'s' if batch > 1 else ''} ({kv_dtype}) = weights ({weights_dtype})",
        batch,
        kv_cache_curve(shape, batch, kv_dtype),
        serving.served_weight_bytes(shape, weights_dtype),
        never,
    )


def score_matrix_exceeds_memory(shape: ModelShape, batch: int, dtype: Dtype, gpu: GpuSpec) -> Crossover:
    """T beyond which one layer's materialized B*H*T^2 score matrix no longer fits in the GPU's memory."""
    return crossover(
        shape,
        "score_matrix_vs_gpu",
        f"one layer's score matrix, {batch:,} sequence{'s' if batch > 1 else ''} ({dtype}) = {gpu.name} memory",
        batch,
        curve(shape, lambda t: memory.score_matrix_bytes_per_layer(shape, t, batch, dtype)),
        hardware.memory_bytes(gpu),
        "the score matrix never outgrows the GPU",  # B*H*T^2 always does; kept for completeness
    )


def crossovers(
    shape: ModelShape, batch: int, dtype: Dtype, gpu: GpuSpec | None, weights_dtype: WeightsDtype | None = "bf16"
) -> list[Crossover]:
    """The lesson's crossovers for one model; the score matrix's only with a GPU."""
    found = [attention_equals_six_n(shape), kv_cache_equals_weights(shape, batch, dtype, weights_dtype)]
    if gpu is not None:
        found.append(score_matrix_exceeds_memory(shape, batch, dtype, gpu))
    return found
