"""FLOPs: the 6N rule, the lesson's attention term, and the exact matmul count of a forward pass.

Convention (as the nanoGPT sizing notebook and torch's FlopCounterMode): FLOPs, not MACs, so an (m x k) @ (k x n)
matmul costs 2*m*k*n; only matmuls are counted (biases, norms, softmax and activations are left out).
Symbols: T tokens per sequence, L layers, H query heads, K key-value heads, Q head_dim, d d_model, F d_ff, V vocab,
W sliding window. An encoder-decoder model reads T tokens and produces T tokens.
"""

from __future__ import annotations

from functools import lru_cache

from tfcost.core.blocks import Block, blocks
from tfcost.core.layers import embedding_ops, head_ops, layer_ops
from tfcost.core.ops import (
    Form,
    Op,
    Span,
    attended_positions,
    collect,
    evaluate,
    op_flops,
    op_flops_per_unit,
    op_score_term_per_position,
    score_entries,
)
from tfcost.core.params import active_non_embedding_params
from tfcost.schema import ModelShape

__all__ = ["score_entries"]  # re-exported: it lives with the other multiplicities in tfcost.core.ops


def matmul_flops(m: int, k: int, n: int) -> int:
    """An (m x k) @ (k x n) matmul: m*n dot products of length k, each k multiplies and k adds."""
    return 2 * m * k * n


def attention_matmul_flops(batch: int, heads: int, entries: int, head_dim: int) -> int:
    """One of attention's two matmuls, QK^T or PV, over B sequences and H query heads: each computed score entry
    is a length-Q dot product (QK^T) or weights one length-Q value row (PV), so 2*B*H*entries*Q. Paid per query
    head, also under GQA/MQA (every source in formulas-and-specs.md §1.12 counts it so)."""
    return 2 * batch * heads * entries * head_dim


def attention_forward_flops(batch: int, heads: int, seq_len: int, head_dim: int, causal: bool) -> int:
    """One attention kernel's forward pass: QK^T and PV, 4*B*H*T^2*Q, as FlashAttention-2 counts it (Dao 2023,
    §4.1; benchmarks/benchmark_flash_attention.py). Causal: the exact T(T+1)/2 triangle, where FA halves T^2."""
    return 2 * attention_matmul_flops(batch, heads, score_entries(seq_len, causal), head_dim)


def attention_backward_flops(batch: int, heads: int, seq_len: int, head_dim: int, causal: bool) -> int:
    """The kernel's backward pass: 5 matmuls of the forward's size (QK^T recomputed, then dV, dP, dQ, dK), so
    2.5x forward, FlashAttention-2's convention (Dao 2023, §4.1: "2 matmuls in the forward pass and 5 matmuls in
    the backward pass, due to recomputation"), not the 2x of a whole model's backward."""
    return 5 * attention_matmul_flops(batch, heads, score_entries(seq_len, causal), head_dim)


def qk_head_dim(shape: ModelShape) -> int:
    """Width of one head's queries and keys: Q (under MLA, the non-rotary and rotary parts together)."""
    return shape.head_dim


def v_head_dim(shape: ModelShape) -> int:
    """Width of one head's values: Q, or MLA's v_head_dim."""
    return shape.mla.v_head_dim if shape.mla is not None else shape.head_dim


def flops_by_part(ops: tuple[Op, ...], tokens: int, source_tokens: int, causal: bool) -> dict[str, int]:
    """The FLOPs fold: each row's forward FLOPs over one sequence, summed by breakdown key, in row order."""
    parts: dict[str, int] = {}
    for op in ops:
        if op.flops_part:
            parts[op.flops_part] = parts.get(op.flops_part, 0) + op_flops(op, tokens, source_tokens, causal)
    return parts


def block_tokens(block: Block, seq_len: int, decoder_len: int | None) -> int:
    """Positions a block runs over: T, or an encoder-decoder decoder's own decoder_len (default T)."""
    return decoder_len if block.stack == "decoder" and decoder_len is not None else seq_len


def block_forward_flops(
    shape: ModelShape, block: Block, seq_len: int, causal: bool, decoder_len: int | None = None
) -> dict[str, int]:
    """One block over one sequence, by part: T tokens (a decoder's decoder_len) reading T source positions."""
    tokens = block_tokens(block, seq_len, decoder_len)
    return flops_by_part(layer_ops(shape, block), tokens, seq_len, causal)


def forward_flops_breakdown(
    shape: ModelShape, seq_len: int, causal: bool = False, decoder_len: int | None = None
) -> dict[str, int]:
    """`forward_flops_breakdown_of`, a fresh dict each call (the caller may change it) from a cached fold: the
    step-time prediction asks for the same (shape, T) at every layout `tfcost plan` tries."""
    return dict(forward_flops_breakdown_of(shape, seq_len, causal, decoder_len))


@lru_cache(maxsize=4096)
def forward_flops_breakdown_of(
    shape: ModelShape, seq_len: int, causal: bool = False, decoder_len: int | None = None
) -> dict[str, int]:
    """Matmul FLOPs of one forward pass over one sequence of T tokens, by part, summed over layers.

    As the nanoGPT sizing notebook (transformer_sizing.ipynb) counts them, generalised to GQA, gated MLPs, MoE,
    MLA and encoders: the projections, QK^T and AV over the score entries of every query head, the MLP, and the
    output head over all T positions. With `causal`, QK^T and AV cover only the entries the mask keeps. An
    encoder-decoder model reads T tokens and produces decoder_len (default T).
    """
    prefix = shape.architecture == "encoder-decoder"
    # Embedding rows are lookups (no FLOPs), but for a projection of the embeddings (Gemma 3n/4's per-layer inputs).
    parts = flops_by_part(embedding_ops(shape), seq_len, seq_len, causal)
    for block, count in blocks(shape):
        for key, value in block_forward_flops(shape, block, seq_len, causal, decoder_len).items():
            name = f"{block.stack}/{key}" if prefix else key
            parts[name] = parts.get(name, 0) + count * value
    head_tokens = decoder_len if prefix and decoder_len is not None else seq_len
    parts.update(flops_by_part(head_ops(shape), head_tokens, seq_len, causal))
    return parts


def flops_by_layer_kind(shape: ModelShape, seq_len: int, causal: bool = False) -> dict[str, int]:
    """Forward FLOPs of all layers of each kind over one sequence, keyed by the kind's name."""
    return {
        block.name: count * sum(block_forward_flops(shape, block, seq_len, causal).values())
        for block, count in blocks(shape)
    }


@lru_cache(maxsize=4096)
def forward_form(shape: ModelShape) -> Form:
    """The forward-FLOPs fold of every layer, the embeddings and the head, collected by rate and span."""
    rows = [(count, op) for block, count in blocks(shape) for op in layer_ops(shape, block)]
    outside = (*embedding_ops(shape), *head_ops(shape))
    return collect([*rows, *((1, op) for op in outside)], op_flops_per_unit)


@lru_cache(maxsize=4096)  # a sweep over batch sizes asks again for every (shape, T)
def forward_flops(shape: ModelShape, seq_len: int, causal: bool = False, decoder_len: int | None = None) -> int:
    """Exact matmul FLOPs of one forward pass over one T-token sequence (the sum of forward_flops_breakdown)."""
    if decoder_len is None:  # every row sees T positions
        return evaluate(forward_form(shape), seq_len, seq_len, causal)
    return sum(forward_flops_breakdown(shape, seq_len, causal, decoder_len).values())


TRAINING_PER_FORWARD = 3  # forward + backward, the backward pass costing twice the forward (Kaplan et al. 2020, §2.1)


def training_flops_from_forward(forward: int) -> int:
    """Forward + backward of one sequence from its forward FLOPs: TRAINING_PER_FORWARD x forward."""
    return TRAINING_PER_FORWARD * forward


def training_flops(shape: ModelShape, seq_len: int, causal: bool = False) -> int:
    """Forward + backward of one sequence, 3x forward (training_flops_from_forward)."""
    return training_flops_from_forward(forward_flops(shape, seq_len, causal))


# The one meaning of "6N" in tfcost: estimate, compare, train's 6ND, --explain, sweep's six_n and the Python API all
# price it through six_n_params, and every label names it with SIX_N_MEANING. Kaplan et al. 2020, §2.1: "N ...
# excluding all vocabulary and positional embeddings", and "C ≈ 6N floating point operators per training token".
# (Hoffmann et al. 2022 and the nanoGPT sizing notebook size runs with every parameter instead; tfcost keeps
# Kaplan's, the rule's own source, and the exact model FLOPs beside it count the embeddings' matmuls.)
SIX_N_MEANING = "N: non-embedding, Kaplan"


def six_n_params(shape: ModelShape) -> int:
    """The N of 6N: the non-embedding parameters (Kaplan et al. 2020, §2.1), a token's active ones for MoE
    (torchtitan, Megatron-LM count an MoE model's 6N over the experts a token uses)."""
    return active_non_embedding_params(shape)


def six_n_flops_per_token(shape: ModelShape) -> int:
    """Training FLOPs per token, 6N: 2N forward + 4N backward (Kaplan et al. 2020, §2.1), N = six_n_params."""
    return 6 * six_n_params(shape)


def six_nd_flops(shape: ModelShape, tokens: int) -> int:
    """Training FLOPs of D tokens by the 6N rule, 6N x D (Kaplan et al. 2020, §2.1: C = 6N per token), N the same
    six_n_params as everywhere else. The exact count is `costs.training.model_training_flops`."""
    return six_n_flops_per_token(shape) * tokens


def attention_score_flops_per_token(shape: ModelShape, seq_len: int) -> int:
    """The lesson's attention-score training term per token, 6*L*T*(H*Q): Kaplan et al. 2020 Eq. 2.2's
    2*n_layer*n_ctx*d_attn forward, times 3 for forward + backward. Summed per attention, with T capped at W for a
    sliding-window layer (nanochat's estimate_flops), at k under top-k sparse attention (DSA), and (Q_qk + Q_v)/2
    for Q when they differ (MLA)."""
    return sum(value * attended_positions(span, seq_len, seq_len) for span, value in score_term_form(shape))


@lru_cache(maxsize=4096)
def score_term_form(shape: ModelShape) -> tuple[tuple[Span, int], ...]:
    """The attention-score term per key position, collected by span."""
    rows = [(count, op) for block, count in blocks(shape) for op in layer_ops(shape, block)]
    return tuple((span, value) for _, span, value in collect(rows, op_score_term_per_position))


def training_flops_per_token(six_n: int, attention_term: int) -> int:
    """Training FLOPs per token with the context term: 6N + 6*L*T*(H*Q), Kaplan et al. 2020 Eq. 2.2's
    C_forward = 2N + 2*n_layer*n_ctx*d_attn, times 3 for forward + backward (docs/formulas.md, FLOPs). Takes the
    two terms (six_n_flops_per_token, attention_score_flops_per_token) so a sweep can pass its curves' values."""
    return six_n + attention_term


def attention_share(six_n: int, attention_term: int) -> float:
    """The attention-score term's share of the training FLOPs per token, 6*L*T*d / (6N + 6*L*T*d): one half at
    the lesson's crossover T = N / (L*d) (GPT-2 small: 9,229 1/6 tokens)."""
    return attention_term / training_flops_per_token(six_n, attention_term)
