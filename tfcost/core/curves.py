"""Costs as exact closed forms in T, so that a sweep pays O(1) per point whatever the model.

Every cost the core computes for one sequence length T (FLOPs, KV cache, score matrix) is a sum over operation
rows of a coefficient times the row's multiplicity, and each multiplicity is a polynomial in T of degree at most
2, piecewise where a sliding window fills (tfcost.core.ops.rate_polynomial): the projections and MLP grow as T, the
score entries as T(T+1)/2 or T^2, and past a window W as W(W+1)/2 + (T - W)W. The counts that step at every chunk
of C (a chunked scan padding T to whole chunks, lightning attention's blocks, a chunked causal attention's
entries) are quadratics in m = (T - 1) // C and s = T - m*C instead: a chunked term (ChunkTerm), added at every T.

So the folds themselves are taken straight from the rows' closed forms (`form_curve`, tfcost.core.ops.form_polynomial),
with no sampling: forward FLOPs, the attention term, the KV cache (times B x s, memory.cached_element_bytes) and
training FLOPs (times flops.TRAINING_PER_FORWARD). A quantity the core composes in other ways (a score matrix of
B*H*T^2 entries, a GPU's share with its floor division, a prefill without most of the head, a decode step as the
difference of two forwards) is a polynomial on the same pieces, whose edges the rows give (`edges`); it is built
by evaluating the core's own function at three points of each piece and interpolating (Newton's forward
differences, exact in integers), then checked at further points, far ones among them, so that each composition
stays in the core, once. Where the model has chunks and that fails (a chunked attention's prefill or decode step),
the pieces and one chunked term per chunk size are solved for exactly from more points (`fit_chunked`) and
checked the same way. A function that fails every check (a floor division that does not divide) is evaluated
directly at every point instead: slower, never wrong.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache
from itertools import islice
from math import gcd, lcm
from operator import le

from tfcost.core import flops, memory
from tfcost.core.blocks import blocks
from tfcost.core.layers import layer_ops
from tfcost.core.ops import Form, Span, form_polynomial
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

    def numerator(self, factor: int) -> Piece:
        """factor x the numerator, as a piece over 1 (to be divided by factor x den by the caller)."""
        return Piece(self.start, factor * self.a, factor * self.b, factor * self.c, 1)

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


@dataclass(frozen=True)
class ChunkTerm:
    """value(T) = (a*m^2 + b*m + c*s^2 + d*s + e) // den at every T >= 1, with m = (T - 1) // C whole chunks
    before the last and s = T - m*C (1..C) positions in the last (tfcost.core.ops.ChunkPoly): a chunked count, which
    steps at every chunk, in O(1) per T."""

    chunk: int
    a: int
    b: int
    c: int
    d: int
    e: int
    den: int

    def value(self, t: int) -> int:
        m = (t - 1) // self.chunk
        s = t - m * self.chunk
        return ((self.a * m + self.b) * m + (self.c * s + self.d) * s + self.e) // self.den

    def numerator(self, factor: int) -> ChunkTerm:
        """factor x the numerator, as a term over 1 (to be divided by factor x den by the caller)."""
        a, b, c, d, e = (factor * x for x in (self.a, self.b, self.c, self.d, self.e))
        return ChunkTerm(self.chunk, a, b, c, d, e, 1)

    def scaled(self, factor: int) -> ChunkTerm:
        a, b, c, d, e = (factor * x for x in (self.a, self.b, self.c, self.d, self.e))
        common = gcd(a, b, c, d, e, self.den)
        return ChunkTerm(
            self.chunk, a // common, b // common, c // common, d // common, e // common, self.den // common
        )

    def values(self, seq_lens: Sequence[int]) -> list[int]:
        chunk, a, b, c, d, e, den = self.chunk, self.a, self.b, self.c, self.d, self.e, self.den
        # divmod(T - 1, C) is (m, s - 1)
        out = [(a * m + b) * m + (c * (r + 1) + d) * (r + 1) + e for m, r in (divmod(t - 1, chunk) for t in seq_lens)]
        return out if den == 1 else [v // den for v in out]


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
    """One quantity as a function of T: exact polynomial pieces plus chunked terms, or the core function itself
    where it has no closed form."""

    pieces: tuple[Piece, ...]
    chunked: tuple[ChunkTerm, ...] = ()  # added at every T: the steps of a chunked scan or chunked attention
    direct: Callable[[int], int] | None = None  # set when some piece would not fit: evaluate the core directly

    def __call__(self, seq_len: int) -> int:
        if self.direct is not None:
            return self.direct(seq_len)
        if self.chunked:
            return self.values([seq_len])[0]
        pieces = self.pieces
        piece = pieces[0] if len(pieces) == 1 else pieces[bisect_right(self.starts, seq_len) - 1]
        return piece.value(seq_len)

    def scaled(self, factor: int) -> Curve:
        """factor x the curve (a closed form stays one; a direct function is wrapped)."""
        if self.direct is not None:
            direct = self.direct
            return Curve((), direct=lambda t: factor * direct(t))
        return Curve(
            tuple(piece.scaled(factor) for piece in self.pieces), tuple(term.scaled(factor) for term in self.chunked)
        )

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
        if not self.chunked:
            return piece_values(self.pieces, seq_lens)
        # Each part's numerator over the curve's common denominator, summed, then divided once: the sum is a whole
        # number at every T, its parts need not be.
        den, pieces, terms = self.over_common_denominator
        out = piece_values(pieces, seq_lens)
        for term in terms:
            out = [value + step for value, step in zip(out, term.values(seq_lens), strict=True)]
        return out if den == 1 else [value // den for value in out]

    @cached_property
    def over_common_denominator(self) -> tuple[int, tuple[Piece, ...], tuple[ChunkTerm, ...]]:
        """(D, the pieces' and chunked terms' numerators over D, each as a part with denominator 1)."""
        den = lcm(*(piece.den for piece in self.pieces), *(term.den for term in self.chunked))
        pieces = tuple(p.numerator(den // p.den) for p in self.pieces)
        return den, pieces, tuple(t.numerator(den // t.den) for t in self.chunked)


def piece_values(pieces: Sequence[Piece], seq_lens: Sequence[int]) -> list[int]:
    """Polynomial pieces (each from its start to the next one's) at every T of `seq_lens`, in order."""
    if len(pieces) == 1:
        return pieces[0].values(seq_lens)
    starts = [piece.start for piece in pieces]
    if all(map(le, seq_lens, islice(seq_lens, 1, None))):
        # Sorted (a sweep's T values): each piece takes one contiguous run.
        out: list[int] = []
        for index, piece in enumerate(pieces):
            low = bisect_right(seq_lens, piece.start - 1)
            high = len(seq_lens) if index + 1 == len(starts) else bisect_right(seq_lens, starts[index + 1] - 1)
            out.extend(piece.values(seq_lens[low:high]))
        return out
    return [pieces[bisect_right(starts, t) - 1].value(t) for t in seq_lens]


def fit(f: Callable[[int], int], edges: Sequence[int] = (), chunks: Sequence[int] = ()) -> Curve:
    """f as exact polynomial pieces starting at T = 1 and at each edge; failing that, with a chunked term for each
    chunk size in `chunks` (fit_chunked); f itself if neither fits."""
    starts = sorted({1, *(edge for edge in edges if edge > 1)})
    pieces = []
    for index, start in enumerate(starts):
        end = starts[index + 1] - 1 if index + 1 < len(starts) else None
        piece = fit_piece(f, start, end)
        if piece is None:
            return (fit_chunked(f, starts, sorted(set(chunks))) if chunks else None) or Curve((), direct=f)
        pieces.append(piece)
    return Curve(tuple(pieces))


# Beyond its first positions, where a chunked term is fitted and checked in each piece: a few chunks in, then far
# out, at each chunk's first, second and last positions.
CHUNK_SAMPLES = (1, 2, 3)
CHUNK_CHECKS = (4, 5, 1_000, 1_000_003, 10**9 + 7)


def fit_chunked(f: Callable[[int], int], starts: Sequence[int], chunks: Sequence[int]) -> Curve | None:
    """f as a polynomial of degree <= 2 in T on each piece (from each of `starts` to the next) plus, for each
    chunk size C, a*m^2 + b*m + c*s^2 in its chunk variables (ChunkTerm; with T = m*C + s these span every
    quadratic in m and s): the exact rational solution through points in every piece and several chunks, checked
    at further points, chunk edges far out among them; None where there is none."""

    def point_row(t: int) -> list[int]:
        row = [0] * (3 * len(starts))
        piece = bisect_right(starts, t) - 1
        row[3 * piece : 3 * piece + 3] = [t * t, t, 1]
        for chunk in chunks:
            m = (t - 1) // chunk
            s = t - m * chunk
            row += [m * m, m, s * s]
        return row

    def inside(offsets: Sequence[int]) -> list[int]:
        points = {
            start + offset
            for index, start in enumerate(starts)
            for offset in offsets
            if index + 1 == len(starts) or start + offset < starts[index + 1]
        }
        return sorted(points)

    chunk_offsets = [k * chunk + i for chunk in chunks for k in CHUNK_SAMPLES for i in (0, 1, chunk - 1)]
    samples = inside([0, 1, 2, 3, *chunk_offsets])
    solution = solve_exact([point_row(t) for t in samples], [f(t) for t in samples])
    if solution is None:
        return None
    den = lcm(*(x.denominator for x in solution))
    numerators = [int(x * den) for x in solution]

    def three(index: int) -> tuple[int, int, int]:  # the index-th group of three unknowns
        return numerators[3 * index], numerators[3 * index + 1], numerators[3 * index + 2]

    fitted = Curve(
        tuple(Piece(start, *three(i), den) for i, start in enumerate(starts)),
        tuple(ChunkTerm(chunk, *three(len(starts) + j), 0, 0, den) for j, chunk in enumerate(chunks)),
    )
    checks = inside(
        [*FAR_CHECKS, *(k * chunk + i for chunk in chunks for k in CHUNK_CHECKS for i in (0, 1, chunk - 1))]
    )
    return fitted if fitted.values(checks) == [f(t) for t in checks] else None


def solve_exact(rows: list[list[int]], values: list[int]) -> list[Fraction] | None:
    """A rational solution of rows . x = values (Gauss-Jordan elimination; unknowns left free are 0), or None when
    the equations contradict each other."""
    system = [[Fraction(x) for x in row] + [Fraction(value)] for row, value in zip(rows, values, strict=True)]
    pivots: list[int] = []
    for column in range(len(rows[0])):
        found = next((i for i in range(len(pivots), len(system)) if system[i][column]), None)
        if found is None:
            continue
        rank = len(pivots)
        system[rank], system[found] = system[found], system[rank]
        lead = system[rank][column]
        system[rank] = [x / lead for x in system[rank]]
        for i, row in enumerate(system):
            if i != rank and row[column]:
                factor = row[column]
                system[i] = [x - factor * y for x, y in zip(row, system[rank], strict=True)]
        pivots.append(column)
    if any(row[-1] for row in system[len(pivots) :]):
        return None
    solution = [Fraction(0)] * len(rows[0])
    for rank, column in enumerate(pivots):
        solution[column] = system[rank][-1]
    return solution


def form_curve(form: Form, causal: bool, direct: Callable[[int], int]) -> Curve:
    """A fold collected from operation rows (tfcost.core.ops.collect) as its exact closed form, or, where a row has none
    (compressed attention steps every m positions), `direct`: the core function, O(1) at each T."""
    closed = form_polynomial(form, causal)
    if closed is None:
        return Curve((), direct=direct)
    return Curve(tuple(Piece(*piece) for piece in closed.pieces), tuple(ChunkTerm(*term) for term in closed.chunked))


def attention_term_curve(shape: ModelShape) -> Curve:
    """flops.attention_score_flops_per_token in T, from its rows: each span's coefficient times the positions a
    query reads (tfcost.core.ops.attended_positions): T capped at W, as the 'cached' rate counts, and at k under top-k
    sparse attention."""
    form: Form = tuple(("cached", attended_span(span), value) for span, value in flops.score_term_form(shape))
    return form_curve(form, True, lambda tokens: flops.attention_score_flops_per_token(shape, tokens))


def attended_span(span: Span) -> Span:
    """A span whose visible positions (the 'cached' rate) are the positions `span` attends to: top-k selection
    caps them as a window of k does (curves take T_source = T, so cross-attention reads T positions too)."""
    if span.topk is None:
        return span
    limit = None if span.cross else span.window or span.chunk
    return Span(causal=span.causal, window=span.topk if limit is None else min(limit, span.topk))


def forward_curve(shape: ModelShape, causal: bool) -> Curve:
    """flops.forward_flops in T, from its rows (flops.forward_form)."""
    return form_curve(flops.forward_form(shape), causal, lambda tokens: flops.forward_flops(shape, tokens, causal))


def training_curve(shape: ModelShape, causal: bool) -> Curve:
    """flops.training_flops in T: the forward's closed form times flops.TRAINING_PER_FORWARD."""
    return forward_curve(shape, causal).scaled(flops.TRAINING_PER_FORWARD)


def kv_cache_curve(shape: ModelShape, batch: int, dtype: Dtype) -> Curve:
    """memory.kv_cache_bytes in T: the cache rows' closed form (memory.cache_form) times B x s; a cache that steps
    every m positions (compressed attention) has none, and is its floor expressions at each T (O(1) a point)."""
    elements = form_curve(memory.cache_form(shape), True, lambda tokens: memory.kv_cache_elements(shape, tokens))
    return elements.scaled(memory.cached_element_bytes(batch, dtype))


@lru_cache(maxsize=4096)  # asked again for every quantity and batch size a sweep fits
def span_limits(shape: ModelShape) -> tuple[frozenset[int], frozenset[int]]:
    """The sizes of a model's sliding windows and top-k selections, and of its chunks, read from its rows."""
    spans = {op.span for block, _ in blocks(shape) for op in layer_ops(shape, block)}
    windows = frozenset(limit for span in spans for limit in (span.window, span.topk) if limit is not None)
    return windows, frozenset(span.chunk for span in spans if span.chunk is not None)


def edges(shape: ModelShape) -> tuple[int, ...]:
    """Where a model's costs may change formula, read from its rows' spans: a sliding window (or chunk, or top-k
    selection) of W fills at T = W, and a decode step (the difference of T and T - 1) changes one token later, so
    pieces start at W + 1 and W + 2. An edge missed here is still caught: the piece across it fails its check and
    the function is evaluated directly."""
    windows, chunks = span_limits(shape)
    limits = windows | chunks
    return tuple(sorted(edge for limit in limits for edge in (limit + 1, limit + 2)))


# Fitting evaluates f a dozen times a piece, and f itself sums every row group: for a stack of W distinct windows
# (2W pieces, about W groups) that is O(W^2). Past this many pieces f is evaluated at each T asked instead, O(W) a
# point: a sweep asks for far fewer points than such a stack has pieces.
MAX_FITTED_PIECES = 256


def curve(shape: ModelShape, f: Callable[[int], int]) -> Curve:
    """f(T), a cost of `shape` at sequence length T, as a curve (f itself past MAX_FITTED_PIECES pieces)."""
    starts = edges(shape)
    if len(starts) + 1 > MAX_FITTED_PIECES:
        return Curve((), direct=f)
    return fit(f, starts, sorted(span_limits(shape)[1]))
