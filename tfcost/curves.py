"""Costs as exact closed forms in T, so that a sweep pays O(1) per point whatever the model.

Every cost the core computes for one sequence length T (FLOPs, KV cache, score matrix) is a sum over operation
rows of a coefficient times the row's multiplicity, and each multiplicity is a polynomial in T of degree at most
2, piecewise where a sliding window fills (tfcost.ops.rate_polynomial): the projections and MLP grow as T, the
score entries as T(T+1)/2 or T^2, and past a window W as W(W+1)/2 + (T - W)W.

So the folds themselves are taken straight from the rows' closed forms (`form_curve`, tfcost.ops.form_polynomial),
with no sampling: forward FLOPs, the attention term, the KV cache (times B x s, memory.cached_element_bytes) and
training FLOPs (times flops.TRAINING_PER_FORWARD). A quantity the core composes in other ways (a score matrix of
B*H*T^2 entries, a GPU's share with its floor division, a prefill without most of the head, a decode step as the
difference of two forwards) is a polynomial on the same pieces, whose edges the rows give (`edges`); it is built
by evaluating the core's own function at three points of each piece and interpolating (Newton's forward
differences, exact in integers), then checked at further points, far ones among them, so that each composition
stays in the core, once. A function that fails the check (a chunked attention's entries, a floor division that
does not divide) is evaluated directly at every point instead: slower, never wrong.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from math import gcd

from tfcost import flops, memory
from tfcost.blocks import blocks
from tfcost.layers import layer_ops
from tfcost.ops import Form, form_polynomial
from tfcost.schema import ModelShape
from tfcost.units import Dtype

# Points beyond a piece's first three at which a fitted polynomial must still match the core: neighbours, then
# far out, where a wrong quadratic term would show. An unbounded piece is checked up to T = 10^12.
FAR_CHECKS = (3, 4, 7, 100, 1_000, 65_537, 1_000_003, 10**9 + 7, 10**12)


@dataclass(frozen=True)
class Piece:
    """value(T) = (a*T^2 + b*T + c) // den for T from `start` on: integer coefficients over a common
    denominator, so evaluation is integer arithmetic only (the division is exact: the values are integers)."""

    start: int
    a: int
    b: int
    c: int
    den: int

    def value(self, t: int) -> int:
        return (self.a * t * t + self.b * t + self.c) // self.den

    def scaled(self, factor: int) -> Piece:
        a, b, c = factor * self.a, factor * self.b, factor * self.c
        common = gcd(a, b, c, self.den)
        return Piece(self.start, a // common, b // common, c // common, self.den // common)

    def values(self, seq_lens: Sequence[int]) -> list[int]:
        # One comprehension per case: the common ones (linear, no denominator) skip the work they do not need.
        a, b, c, den = self.a, self.b, self.c, self.den
        if den != 1:
            return [((a * t + b) * t + c) // den for t in seq_lens]
        if a == 0:  # linear: FLOPs per token, a KV cache
            return [b * t for t in seq_lens] if c == 0 else [b * t + c for t in seq_lens]
        if c == 0:  # a forward pass (no constant term), a score matrix (T^2 only)
            return [a * t * t for t in seq_lens] if b == 0 else [(a * t + b) * t for t in seq_lens]
        return [(a * t + b) * t + c for t in seq_lens]


def fit_piece(f: Callable[[int], int], start: int, end: int | None) -> Piece | None:
    """The polynomial of degree <= 2 through f at start, start+1, start+2 (fewer where the piece is shorter),
    or None when f leaves it anywhere it is checked inside [start, end]."""
    xs = [x for x in (start, start + 1, start + 2) if end is None or x <= end]
    y0, y1, y2 = ([f(x) for x in xs] + [0, 0])[:3]
    first = y1 - y0 if len(xs) > 1 else 0
    second = y2 - 2 * y1 + y0 if len(xs) > 2 else 0
    # Newton's form in u = T - start, doubled to stay in integers: 2*value = 2*y0 + 2*u*first + u(u-1)*second,
    # expanded in T; then the common factor is divided out.
    a = second
    b = 2 * first - second * (2 * start + 1)
    c = 2 * y0 - 2 * start * first + second * start * (start + 1)
    common = gcd(a, b, c, 2)
    piece = Piece(start, a // common, b // common, c // common, 2 // common)
    den = piece.den
    for offset in FAR_CHECKS:
        x = start + offset
        if end is not None and x > end:
            continue
        exact = piece.a * x * x + piece.b * x + piece.c
        if exact % den or exact // den != f(x):
            return None
    return piece


@dataclass(frozen=True)
class Curve:
    """One quantity as a function of T: exact polynomial pieces, or the core function itself where it has none."""

    pieces: tuple[Piece, ...]
    direct: Callable[[int], int] | None = None  # set when some piece would not fit: evaluate the core directly

    def __call__(self, seq_len: int) -> int:
        if self.direct is not None:
            return self.direct(seq_len)
        pieces = self.pieces
        piece = pieces[0] if len(pieces) == 1 else pieces[bisect_right(self.starts, seq_len) - 1]
        return piece.value(seq_len)

    def scaled(self, factor: int) -> Curve:
        """factor x the curve (a closed form stays one; a direct function is wrapped)."""
        if self.direct is not None:
            direct = self.direct
            return Curve((), direct=lambda t: factor * direct(t))
        return Curve(tuple(piece.scaled(factor) for piece in self.pieces))

    @property
    def starts(self) -> list[int]:
        return [piece.start for piece in self.pieces]

    @property
    def is_closed_form(self) -> bool:
        return self.direct is None

    def values(self, seq_lens: Sequence[int]) -> list[int]:
        """The curve at every T of `seq_lens` (each >= 1), in order."""
        if self.direct is not None:
            return [self.direct(t) for t in seq_lens]
        if len(self.pieces) == 1:
            return self.pieces[0].values(seq_lens)
        starts = self.starts
        if all(earlier <= later for earlier, later in pairwise(seq_lens)):
            # Sorted (a sweep's T values): each piece takes one contiguous run.
            out: list[int] = []
            for index, piece in enumerate(self.pieces):
                low = bisect_right(seq_lens, piece.start - 1)
                high = len(seq_lens) if index + 1 == len(starts) else bisect_right(seq_lens, starts[index + 1] - 1)
                out.extend(piece.values(seq_lens[low:high]))
            return out
        return [self(t) for t in seq_lens]


def fit(f: Callable[[int], int], edges: Sequence[int] = ()) -> Curve:
    """f as exact polynomial pieces starting at T = 1 and at each edge; f itself if any piece does not fit."""
    starts = sorted({1, *(edge for edge in edges if edge > 1)})
    pieces = []
    for index, start in enumerate(starts):
        end = starts[index + 1] - 1 if index + 1 < len(starts) else None
        piece = fit_piece(f, start, end)
        if piece is None:
            return Curve((), direct=f)
        pieces.append(piece)
    return Curve(tuple(pieces))


def form_curve(form: Form, causal: bool) -> Curve | None:
    """A fold collected from operation rows (tfcost.ops.collect) as its exact closed form; None where a row has
    none (a chunked attention's causal entries)."""
    pieces = form_polynomial(form, causal)
    return None if pieces is None else Curve(tuple(Piece(*piece) for piece in pieces))


def attention_term_curve(shape: ModelShape) -> Curve:
    """flops.attention_score_flops_per_token in T, from its rows: each span's coefficient times the positions a
    query reads, T capped at W (the 'cached' rate)."""
    form: Form = tuple(("cached", span, value) for span, value in flops.score_term_form(shape))
    closed = form_curve(form, True)
    if closed is None:  # compressed entries (floor(T/m) read by the last query): the function at each T
        return Curve((), direct=lambda tokens: flops.attention_score_flops_per_token(shape, tokens))
    return closed


def forward_curve(shape: ModelShape, causal: bool) -> Curve | None:
    """flops.forward_flops in T, from its rows (flops.forward_form); None for a causal chunked attention."""
    return form_curve(flops.forward_form(shape), causal)


def training_curve(shape: ModelShape, causal: bool) -> Curve | None:
    """flops.training_flops in T: the forward's closed form times flops.TRAINING_PER_FORWARD."""
    forward = forward_curve(shape, causal)
    return None if forward is None else forward.scaled(flops.TRAINING_PER_FORWARD)


def kv_cache_curve(shape: ModelShape, batch: int, dtype: Dtype) -> Curve:
    """memory.kv_cache_bytes in T: the cache rows' closed form (memory.cache_form) times B x s; a cache that steps
    every m positions (compressed attention) has none, and is its floor expressions at each T (O(1) a point)."""
    closed = form_curve(memory.cache_form(shape), True)
    if closed is None:
        return Curve((), direct=lambda tokens: memory.kv_cache_bytes(shape, tokens, batch, dtype))
    return closed.scaled(memory.cached_element_bytes(batch, dtype))


def edges(shape: ModelShape) -> tuple[int, ...]:
    """Where a model's costs may change formula, read from its rows' spans: a sliding window (or chunk) of W fills
    at T = W, and a decode step (the difference of T and T - 1) changes one token later, so pieces start at W + 1
    and W + 2. An edge missed here is still caught: the piece across it fails its check and the function is
    evaluated directly."""
    limits = {
        limit
        for block, _ in blocks(shape)
        for op in layer_ops(shape, block)
        for limit in (op.span.window, op.span.chunk)
        if limit is not None
    }
    return tuple(sorted(edge for limit in limits for edge in (limit + 1, limit + 2)))


def curve(shape: ModelShape, f: Callable[[int], int]) -> Curve:
    """f(T), a cost of `shape` at sequence length T, as a curve."""
    return fit(f, edges(shape))
