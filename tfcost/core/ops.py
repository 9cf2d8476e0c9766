"""The operation table: one row per piece of work that has a cost, and the folds that turn rows into numbers.

Every layer kind (tfcost.core.layers) and the embedding and head (tfcost.core.layers.model_ops) are lists of `Op` rows.
Parameters, forward FLOPs, KV cache, recurrent state and the attention-score term are each a sum over rows,
written once here (and training activations, tfcost.core.activations, over what each row saves, `Saved`):

    params(row)  = copies x weights of one copy        linear: in*out (+ out biases); norm: in*out; table: in*out
    flops(row)   = 2 * in * out * uses * rows(T)        linear, scores, values (FLOPs, not MACs: 2*m*k*n)
    cache(row)   = in elements x rows(T)                cache rows (per sequence)
    state(row)   = in elements                          state rows (per sequence, independent of T)

`rows(T)` is the row's multiplicity, an explicit function of the sequence (`multiplicity`): T tokens, the score
entries of a full, causal, windowed or chunked attention, the positions a cache holds. Every one is a polynomial
in T, piecewise at a window edge, or, where it steps at every chunk of C, a polynomial in the chunks before the
last and the last one's positions (rate_polynomial): what a closed form in T or an `--explain` is built from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from math import gcd
from typing import Literal, NamedTuple

from tfcost.units import Dtype

OpKind = Literal["linear", "scores", "values", "index", "norm", "table", "cache", "state"]
# The kind of work a row is, for the scenarios (training step time, serving, LoRA): a matmul over tokens, the
# grouped matmul of routed experts (each token through k of E copies), attention's scores and values over score
# entries (an indexer's scores too), an elementwise row (norms), a gather (embedding and other tables), or storage
# (cache and state rows: memory, no work).
Work = Literal["matmul", "grouped_matmul", "attention", "elementwise", "gather", "storage"]
# How tensor parallelism splits a linear row (Megatron-LM, Shoeybi et al. 2019 §3): column-parallel rows split their
# outputs (q, k, v, up, gate: fan_out / t each), row-parallel ones their inputs (the output projection and down: fan_in
# / t each), so each pair needs one all-reduce. Rows that read a whole tensor-parallel output are the row-parallel
# ones: their names end so (ROW_PARALLEL_ENDINGS).
TpSplit = Literal["column", "row", "replicated"]
ROW_PARALLEL_ENDINGS = ("/o", "/o_groups", "/down", "/out_proj", "/o_proj", "/projection")
# Rows no weight quantization touches (GPTQ/AWQ/fp8 checkpoints keep them 16-bit, as core/weights.part_kind): the
# router and a shared-expert gate; norms, tables and biases are not linear weights at all.
UNQUANTIZED_LINEAR = ("router", "shared_gate")

# What a row's multiplicity counts, per sequence:
#   token         the layer's own positions, T (a decoder's in an encoder-decoder model)
#   source_token  the positions keys and values are read from: T, or the encoder's for cross-attention
#   entry         score entries of one head, by the row's span (full T^2, causal triangle, window, chunk)
#   sequence      once per sequence (a pooler on the first token)
#   cached        positions a cache row holds after T tokens (capped at a window or chunk)
#   weights       no per-token work: parameters only (norms, tables)
# A chunked scan (Mamba-2's SSD, Dao and Gu 2024 §6) pads T up to c = ceil(T/C) whole chunks of the span's C:
#   chunk_token   c*C padded positions                       (causal: 0, a recurrent step builds no chunk state)
#   chunk_entry   c*C^2 position pairs within chunks          (causal: 0)
#   chunk_pair    (c+1)^2 pairs of chunk states, the initial one included (causal: 0)
#   chunk_readout c*C padded positions                       (causal: T, one state readout per token)
# The full count is what transformers' torch path runs (FlopCounterMode); the causal one is the recurrent form a
# decode step runs (transformers' selective_state_update), so forward(T) - forward(T - 1) is one step's work.
# Lightning attention (MiniMax-01) does not pad: its blocks are C positions and a last one of r = T mod C:
#   block_entry   whole blocks x C^2 + r^2 position pairs within blocks (causal: 0, as chunk_entry)
# Compressed attention (DeepSeek-V4, tfcost.core.layers.compressed_attention) folds every m positions (the span's
# `compress`) into one entry; the multiplicities step at every m-th token, each an O(1) floor expression:
#   compressed        floor(T/m) compressed entries made (and cached)
#   compressed_tail   T mod m positions not yet compressed (buffered in the cache until their window closes)
#   compressed_entry  query x compressed-entry pairs: T floor(T/m) in full; causal, query t (from 0) reads the
#                     floor((t+1)/m) entries closed by then, at most k under top-k selection (compressed_pairs)
Rate = Literal[
    "token",
    "source_token",
    "entry",
    "sequence",
    "cached",
    "weights",
    "chunk_token",
    "chunk_entry",
    "chunk_pair",
    "chunk_readout",
    "block_entry",
    "compressed",
    "compressed_tail",
    "compressed_entry",
]


@dataclass(frozen=True)
class Span:
    """Which positions one attention's queries see."""

    causal: bool = False  # masked to earlier positions
    window: int | None = None  # at most W positions, itself included (sliding window)
    chunk: int | None = None  # only its own C-position chunk (chunked attention)
    cross: bool = False  # the T_source positions of another sequence (cross-attention), no mask
    # Sparse attention (DeepSeek-V3.2's DSA): each query attends to at most k positions an indexer selects among the
    # earlier ones. Unlike a window, every position stays cached, as any may be selected later.
    topk: int | None = None
    # Compressed attention (DeepSeek-V4): every m positions are folded into one compressed entry.
    compress: int | None = None


# When a saved tensor is held (Korthikanti et al. 2022 §4-5):
#   always           whatever the setup
#   dropout          a dropout mask (one byte per element), only when dropout is on
#   unfused          a score-entry tensor a non-fused kernel materialises (softmax output); none under flash or
#                    selective recomputation
#   unfused_dropout  a score-entry tensor of the attention dropout (its mask, its output)
#   fused            what a fused kernel (FlashAttention) keeps instead: one fp32 log-sum-exp per query row and head;
#                    none under selective recomputation
SavedWhen = Literal["always", "dropout", "unfused", "unfused_dropout", "fused"]
# Bytes of one element: the activation dtype (2 in 16-bit training, 4 in fp32), a one-byte mask, or fp32.
SavedStore = Literal["activation", "mask", "fp32"]
# Per token (T positions, or T_source for cross-attention's keys), per score entry a dense kernel materialises (all
# T x T_source of them, whatever the mask: Korthikanti et al. 2022's as^2b), or per chunk of `chunk` positions, one
# for each of the ceil(T / chunk) chunks a kernel cuts a sequence into (a scan's chunk states). Compressed attention
# (DeepSeek-V4) folds every m = `compress` positions into one entry: per compressed entry, floor(T/m) of them, and
# per query x compressed-entry pair a dense kernel materialises, T floor(T/m) whatever the mask or top-k.
SavedRate = Literal["token", "entry", "chunk", "compressed", "compressed_entry"]


@dataclass(frozen=True)
class Saved:
    """One tensor a row keeps for the backward pass: `width` elements per unit of `per` (token: T positions; entry:
    the T x T score entries a kernel materialises, width = heads; chunk: each of the ceil(T / chunk) chunks;
    compressed: each of the floor(T / compress) compressed entries; compressed_entry: the T floor(T / compress)
    query x compressed-entry pairs, width = heads).
    `split`: inside the tensor-parallel region, so t ranks hold 1/t each; otherwise a d-wide tensor of the residual
    stream, split only by sequence parallelism."""

    what: str
    width: int
    per: SavedRate = "token"
    store: SavedStore = "activation"
    split: bool = True
    when: SavedWhen = "always"
    chunk: int = 0  # positions per chunk, for per="chunk"
    compress: int = 0  # positions per compressed entry m, for per="compressed" and "compressed_entry"


@dataclass(frozen=True)
class ExpertGroup:
    """The routed experts a row belongs to: E experts, k of them per token, beside `shared` always-used ones
    (DeepSeekMoE, Dai et al. 2024). Under uniform routing B tokens touch E (1 - (1 - k/E)^B) distinct experts in
    expectation (`distinct_experts`)."""

    experts: int
    active: int
    shared: int = 0
    zero: int = 0  # identity experts the router may also pick (LongCat-Flash): they hold no weights

    def distinct_experts(self, tokens: float) -> float:
        """Expected distinct experts B tokens route to, each picking k of E without replacement, uniformly: an
        expert is missed by one token with probability 1 - k/E, by all B independently with (1 - k/E)^B. With Z
        identity experts among the choices, a weighted expert is picked with probability k/(E + Z)."""
        if tokens <= 0:
            return 0.0
        return self.experts * (1 - (1 - self.active / (self.experts + self.zero)) ** tokens)


@dataclass(frozen=True)
class Op:
    """One row of an operation table.

    name: the row, e.g. "attention/q" or "moe/experts/up"; part: the parameter breakdown key it adds to (default
    name); flops_part: the forward-FLOPs breakdown key ("" when it has no FLOPs key).
    fan_in, fan_out: for linear, in and out width; scores/values: head width Q and query heads H; index (an
    indexer's scores over score entries, DSA: it selects, it is no attention): width and heads; norm: width and
    vectors per channel (2 for LayerNorm's scale and shift, 1 for RMSNorm); table: rows and columns; cache/state:
    elements per position (cache) or per sequence (state), and the heads they split over under tensor parallelism.
    copies: weight copies held (E routed experts; 0 for a head tied to the embedding); uses: how many of them each
    unit of `per` passes through (k of E).
    """

    name: str
    kind: OpKind
    fan_in: int
    fan_out: int
    per: Rate
    bias: bool = False
    copies: int = 1
    uses: int = 1
    part: str = ""
    flops_part: str = ""
    span: Span = Span()
    dtype: Dtype | None = None  # a state row kept at a fixed dtype (fp32 recurrent states); None: the asked dtype
    saves: tuple[Saved, ...] = ()  # what it keeps for the backward pass (training activations, tfcost.core.activations)
    experts: ExpertGroup | None = None  # a routed expert row's group (tfcost.core.layers.moe)

    @property
    def params_key(self) -> str:
        return self.part or self.name

    @property
    def work(self) -> Work:
        """The kind of work the row is (see Work)."""
        match self.kind:
            case "linear":
                return "grouped_matmul" if self.experts is not None else "matmul"
            case "scores" | "values" | "index":
                return "attention"
            case "norm":
                return "elementwise"
            case "table":
                return "gather"
            case _:
                return "storage"

    @property
    def quantizable(self) -> bool:
        """Whether a weight quantization stores this row's weights below 16 bits: a linear row's, but a router's
        or a shared-expert gate's (see UNQUANTIZED_LINEAR)."""
        return self.kind == "linear" and not any(word in self.name for word in UNQUANTIZED_LINEAR)

    @property
    def tp_split(self) -> TpSplit:
        """How tensor parallelism splits the row (see TpSplit): linear rows by column or by row, attention over its
        heads (column-like: each GPU its fan_out / t heads), everything else replicated. A cache or state row's heads
        are `fan_out`: each GPU holds max(fan_out / t, 1) of them (`tp_share`)."""
        if self.kind == "linear":
            return "row" if self.name.endswith(ROW_PARALLEL_ENDINGS) else "column"
        if self.kind in ("scores", "values", "index"):
            return "column"
        return "replicated"

    def tp_share(self, tp: int) -> float:
        """The share of a cache or state row one of t GPUs holds: its heads split over t, at least one each (a head
        is replicated when t > heads: vLLM, llm-analysis); a row of one head (MLA's latent) is held whole."""
        heads = max(self.fan_out, 1)
        return max(heads // tp, 1) / heads


def score_entries(
    seq_len: int, causal: bool, window: int | None = None, chunk: int | None = None, topk: int | None = None
) -> int:
    """Entries of one head's T x T score matrix that are counted.

    Full: all T^2, what a dense kernel computes whatever the mask (and what FlopCounterMode counts). Causal: only
    the entries the mask keeps, the T(T+1)/2 on and below the diagonal; within a sliding window of W, where
    query i sees min(i + 1, W) keys: W(W+1)/2 + (T - W)*W once T > W (nanochat's estimate_prefill_flops); in
    chunks of C, each whole chunk C(C+1)/2 and the last r = T mod C positions r(r+1)/2 (Llama 4's chunked mask).
    Top-k sparse attention (DeepSeek Sparse Attention, DeepSeek-V3.2, arXiv:2512.02556, Eq. 1-2): query i
    attends to the min(i + 1, k) positions its indexer selects, the window's count with W = k.
    """
    if not causal:
        return seq_len * seq_len
    if chunk is not None:
        whole, rest = divmod(seq_len, chunk)
        return whole * chunk * (chunk + 1) // 2 + rest * (rest + 1) // 2
    if topk is not None:
        window = topk if window is None else min(window, topk)
    if window is None or seq_len <= window:
        return seq_len * (seq_len + 1) // 2
    return window * (window + 1) // 2 + (seq_len - window) * window


def visible_positions(span: Span, tokens: int, source_tokens: int) -> int:
    """Positions the last query sees (and a cache must hold): T, capped at W or C; T_source for cross-attention.
    A sliding layer's older keys can never be attended to again (Mistral's rolling buffer, Jiang et al. 2023 §2)."""
    if span.cross:
        return source_tokens
    limit = span.window or span.chunk
    return tokens if limit is None else min(tokens, limit)


def attended_positions(span: Span, tokens: int, source_tokens: int) -> int:
    """Positions the last query attends to: those it sees, and of them at most k under top-k sparse attention; of
    a compressed span, the floor(T/m) entries closed so far (at most k)."""
    visible = tokens // span.compress if span.compress else visible_positions(span, tokens, source_tokens)
    return visible if span.topk is None else min(visible, span.topk)


def rate_multiplicity(per: Rate, span: Span, tokens: int, source_tokens: int, causal: bool) -> int:
    """How many times a row of rate `per` and span `span` is done over one sequence of T tokens (T_source keys
    for cross-attention); `causal` counts only the score entries the mask keeps."""
    match per:
        case "token":
            return tokens
        case "source_token":
            return source_tokens
        case "entry":
            if span.cross:
                return tokens * source_tokens
            return score_entries(tokens, causal and span.causal, span.window, span.chunk, span.topk)
        case "sequence":
            return 1
        case "cached":
            return visible_positions(span, tokens, source_tokens)
        case "weights":
            return 0
        case "chunk_token" | "chunk_entry" | "chunk_pair" | "chunk_readout":
            return chunk_multiplicity(per, span.chunk or 1, tokens, causal)
        case "block_entry":
            whole, rest = divmod(tokens, span.chunk or 1)
            return 0 if causal else whole * (span.chunk or 1) ** 2 + rest * rest
        case "compressed":
            return tokens // (span.compress or 1)
        case "compressed_tail":
            return tokens % (span.compress or 1)
        case "compressed_entry":
            if not (causal and span.causal):
                return tokens * (tokens // (span.compress or 1))
            return compressed_pairs(tokens, span.compress or 1, span.topk)


def chunk_multiplicity(per: Rate, chunk: int, tokens: int, causal: bool) -> int:
    """The chunked scan's rates (see Rate) over T tokens in chunks of C."""
    if causal:
        return tokens if per == "chunk_readout" else 0
    chunks = -(-tokens // chunk)
    if per == "chunk_entry":
        return chunks * chunk * chunk
    if per == "chunk_pair":
        return (chunks + 1) * (chunks + 1)
    return chunks * chunk


def closed_entries(tokens: int, rate: int) -> int:
    """sum over t = 1..T of floor(t/m): with q = floor(T/m), r = T mod m, m q(q-1)/2 + q(r+1) (each whole window
    of m adds m x the entries closed before it, the last q entries are read by the r + 1 positions from q m on)."""
    whole, rest = divmod(tokens, rate)
    return rate * whole * (whole - 1) // 2 + whole * (rest + 1)


def compressed_pairs(tokens: int, rate: int, topk: int | None) -> int:
    """Query x compressed-entry pairs kept causally: query t (from 0) reads the floor((t+1)/m) entries whose window
    has closed by then (transformers' DeepseekV4HCACompressor causal_threshold), at most k of them under top-k
    selection (DeepseekV4Indexer): sum over t = 1..T of min(floor(t/m), k). From t = k m on every query reads k."""
    if topk is None or tokens < topk * rate:
        return closed_entries(tokens, rate)
    return closed_entries(topk * rate - 1, rate) + topk * (tokens - topk * rate + 1)


def multiplicity(op: Op, tokens: int, source_tokens: int, causal: bool) -> int:
    """How many times the row's work is done over one sequence (see rate_multiplicity)."""
    return rate_multiplicity(op.per, op.span, tokens, source_tokens, causal)


# A fold over many rows, collected by (rate, span): sum of coefficient x multiplicity(T). A model's rows fall into a
# handful of groups (tokens, one span's entries, ...), so a fold at a new T costs a few multiplications whatever
# the number of layers and rows: the form in T that sweeps and --explain build on.
Form = tuple[tuple[Rate, Span, int], ...]


def collect(rows: Iterable[tuple[int, Op]], weight: Callable[[Op], int]) -> Form:
    """The form of a fold: each (count, row) adds count x weight(row) to its (rate, span) group."""
    groups: dict[tuple[Rate, Span], int] = {}
    for count, op in rows:
        value = count * weight(op)
        if value:
            groups[(op.per, op.span)] = groups.get((op.per, op.span), 0) + value
    return tuple((per, span, value) for (per, span), value in groups.items())


def evaluate(form: Form, tokens: int, source_tokens: int, causal: bool) -> int:
    """A collected fold at one T."""
    return sum(value * rate_multiplicity(per, span, tokens, source_tokens, causal) for per, span, value in form)


def op_params(op: Op) -> int:
    """Parameters a row holds: its copies of an in x out matrix (and out biases), norm vectors or table."""
    if op.kind == "linear":
        return op.copies * (op.fan_in * op.fan_out + (op.fan_out if op.bias else 0))
    if op.kind in ("norm", "table"):
        return op.copies * op.fan_in * op.fan_out
    return 0


def tied(ops: Iterable[Op]) -> list[Op]:
    """The same rows with their weights held by another layer: every use still does its matmuls and keeps its cache
    and state, but holds no copy of the weights (copies 0, as a head tied to the embedding), so the parameter fold
    counts them once, at the layer that holds them. Weights shared across depth: Zamba's shared attention block
    (Glorioso et al. 2024, arXiv:2405.16712 §2) and Zamba2's num_mem_blocks shared transformer blocks
    (arXiv:2411.15242 §2), which transformers ties to their first uses (Zamba2Model.get_layers)."""
    return [replace(op, copies=0) for op in ops]


def op_inactive_params(op: Op) -> int:
    """Parameters of the copies a token does not use: the E - k routed experts it is not sent to."""
    if op.kind != "linear" or op.copies <= op.uses:
        return 0
    return op_params(op) // op.copies * (op.copies - op.uses)


def op_flops_per_unit(op: Op) -> int:
    """Forward matmul FLOPs of one unit of a row's rate: 2 * in * out per use (biases, norms, softmax and
    activations left out, as the nanoGPT notebook and FlopCounterMode count)."""
    return 2 * op.fan_in * op.fan_out * op.uses if op.kind in ("linear", "scores", "values", "index") else 0


def op_flops(op: Op, tokens: int, source_tokens: int, causal: bool) -> int:
    """Forward matmul FLOPs of a row over one sequence."""
    return op_flops_per_unit(op) * multiplicity(op, tokens, source_tokens, causal)


def op_cache_per_position(op: Op) -> int:
    """Cached elements per position a cache row holds."""
    return op.fan_in if op.kind == "cache" else 0


def op_cache_elements(op: Op, tokens: int, source_tokens: int) -> int:
    """Cached elements of one sequence after T tokens (cache rows only)."""
    return op_cache_per_position(op) * multiplicity(op, tokens, source_tokens, True)


def op_state_elements(op: Op) -> int:
    """Fixed-size state elements of one sequence (state rows only: recurrent and linear-attention mixers)."""
    return op.fan_in if op.kind == "state" else 0


def op_score_term_per_position(op: Op) -> int:
    """The lesson's attention-score training term of a scores or values row per key position a query reads:
    3 * Q * H (Kaplan et al. 2020 Eq. 2.2's 2 * d_attn per position forward, x 3 with the backward pass)."""
    return 3 * op.fan_in * op.fan_out if op.kind in ("scores", "values") else 0


def op_costs(op: Op, tokens: int) -> dict[str, int]:
    """Every fold's value for one row over one T-token sequence: what `--explain` and the README print."""
    return {
        "params": op_params(op),
        "flops": op_flops(op, tokens, tokens, False),
        "flops_causal": op_flops(op, tokens, tokens, True),
        "cache_elements": op_cache_elements(op, tokens, tokens),
        "state_elements": op_state_elements(op),
    }


# Closed forms in T. A piece (start, a, b, c, den) is (a*T^2 + b*T + c) / den for T from `start` on, with
# T_source = T. A chunked scan's counts take a step at every chunk, so they are written in two variables instead:
# with m = (T - 1) // C the whole chunks before the last one and s = T - m*C its 1..C positions, a chunked term
# (C, a, b, c, d, e, den) is (a*m^2 + b*m + c*s^2 + d*s + e) / den at every T >= 1. (The last chunk is counted
# as 1..C rather than divmod(T, C)'s 0..C-1 so that the padded count ceil(T/C) = m + 1 is a polynomial too.)
# Every division is exact: multiplicities are whole numbers.
Poly = tuple[int, int, int, int, int]
ChunkPoly = tuple[int, int, int, int, int, int, int]


class ClosedForm(NamedTuple):
    """A multiplicity or fold in T: the value of its piece at T plus each chunked term's at T."""

    pieces: tuple[Poly, ...]
    chunked: tuple[ChunkPoly, ...] = ()


LINEAR: Poly = (1, 0, 1, 0, 1)
ZERO: Poly = (1, 0, 0, 0, 1)


def chunk_polynomial(per: Rate, chunk: int, causal: bool) -> ClosedForm:
    """A chunked scan's rates and a chunked causal attention's entries in m and s (see above), from their
    definitions (Rate, score_entries) with ceil(T/C) = m + 1 and divmod(T, C)'s whole chunks and rest giving
    m*C^2 + s^2 and m*C(C+1)/2 + s(s+1)/2 (at s = C both count m + 1 whole chunks and an empty rest):
        chunk_token, chunk_readout   (m + 1)*C          chunk_entry   (m + 1)*C^2
        chunk_pair                   (m + 2)^2          block_entry   m*C^2 + s^2
        entry (causal, chunked)      (m*C(C+1) + s^2 + s) / 2
    The causal convention of the scan's rates is a polynomial in T: T readouts, nothing else."""
    if per == "entry":
        return ClosedForm((), ((chunk, 0, chunk * (chunk + 1), 1, 1, 0, 2),))
    if causal:
        return ClosedForm((LINEAR,) if per == "chunk_readout" else (ZERO,))
    terms: dict[Rate, ChunkPoly] = {
        "chunk_token": (chunk, 0, chunk, 0, 0, chunk, 1),
        "chunk_readout": (chunk, 0, chunk, 0, 0, chunk, 1),
        "chunk_entry": (chunk, 0, chunk * chunk, 0, 0, chunk * chunk, 1),
        "chunk_pair": (chunk, 1, 4, 0, 0, 4, 1),
        "block_entry": (chunk, 0, chunk * chunk, 1, 0, 0, 1),
    }
    return ClosedForm((), (terms[per],))


def rate_polynomial(per: Rate, span: Span, causal: bool) -> ClosedForm | None:
    """rate_multiplicity(per, span, T, T, causal) as an exact closed form from T = 1 (tested against it):
    T tokens; T^2 or T(T+1)/2 score entries, and past a window W, W(W+1)/2 + (T - W)W = (2WT + W - W^2)/2;
    T cached positions, capped at W (or C) from W + 1 on; top-k sparse attention as a window of k; and the
    chunked counts (a causal chunked attention's entries, a chunked scan's or lightning attention's blocks) as
    terms in the chunk variables (chunk_polynomial). None for compressed attention's rates, which step at every
    m-th token (their floor expressions in rate_multiplicity are O(1) at any T: curves evaluate them directly)."""
    match per:
        case "token" | "source_token":
            return ClosedForm((LINEAR,))
        case "sequence":
            return ClosedForm(((1, 0, 0, 1, 1),))
        case "weights":
            return ClosedForm((ZERO,))
        case "entry":
            if span.cross or not (causal and span.causal):
                return ClosedForm(((1, 1, 0, 0, 1),))
            if span.chunk is not None:
                return chunk_polynomial(per, span.chunk, causal)
            triangle: Poly = (1, 1, 1, 0, 2)
            limits = [limit for limit in (span.window, span.topk) if limit is not None]
            if not limits:
                return ClosedForm((triangle,))
            w = min(limits)  # top-k attention counts as a window of k (score_entries)
            return ClosedForm((triangle, (w + 1, 0, 2 * w, w - w * w, 2)))
        case "cached":
            if span.compress is not None:  # compressed entries read: floor(T/m), a step every m positions
                return None
            limit = None if span.cross else span.window or span.chunk
            return ClosedForm((LINEAR,) if limit is None else (LINEAR, (limit + 1, 0, 0, limit, 1)))
        case "compressed" | "compressed_tail" | "compressed_entry":  # a step at every m positions
            return None
        case _:  # a chunked scan or lightning blocks (rate_multiplicity counts a missing chunk as C = 1)
            return chunk_polynomial(per, span.chunk or 1, causal)


def form_polynomial(form: Form, causal: bool) -> ClosedForm | None:
    """A collected fold (collect) as an exact closed form: the sum of each group's coefficient times its rate's
    closed form, a new piece wherever any group's starts, one chunked term per chunk size; None where a rate has
    none (compressed attention)."""
    groups: list[tuple[int, tuple[Poly, ...]]] = []
    chunked: dict[int, list[int]] = {}  # chunk size -> a, b, c, d, e over the common denominator 2
    for per, span, value in form:
        closed = rate_polynomial(per, span, causal)
        if closed is None:
            return None
        pieces, terms = closed
        if pieces:
            groups.append((value, pieces))
        for chunk, *coefficients, den in terms:
            scale = value * (2 // den)
            sums = chunked.setdefault(chunk, [0] * 5)
            chunked[chunk] = [
                total + scale * coefficient for total, coefficient in zip(sums, coefficients, strict=True)
            ]
    # Each group's pieces as changes at their starts (a piece replaces the one before it), summed at each start in
    # one pass over the sorted starts: linear in the pieces, where summing every group at every start was quadratic
    # in a stack's distinct windows.
    changes: dict[int, list[int]] = {1: [0, 0, 0]}
    for value, pieces in groups:
        before = (0, 0, 0)
        for start, pa, pb, pc, den in sorted(pieces):
            scale = value * (2 // den)  # every piece over the common denominator 2
            now = (scale * pa, scale * pb, scale * pc)
            change = changes.setdefault(start, [0, 0, 0])
            for index in range(3):
                change[index] += now[index] - before[index]
            before = now
    out: list[Poly] = []
    a = b = c = 0
    for start in sorted(changes):
        da, db, dc = changes[start]
        a, b, c = a + da, b + db, c + dc
        common = gcd(a, b, c, 2)
        out.append((start, a // common, b // common, c // common, 2 // common))
    terms_out: list[ChunkPoly] = []
    for chunk, sums in sorted(chunked.items()):
        common = gcd(*sums, 2)
        if any(sums):
            ca, cb, cc, cd, ce = (total // common for total in sums)
            terms_out.append((chunk, ca, cb, cc, cd, ce, 2 // common))
    return ClosedForm(tuple(out), tuple(terms_out))
