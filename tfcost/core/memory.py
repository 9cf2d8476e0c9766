"""Memory of the KV cache and of a materialized attention score matrix.

Symbols: L layers, H query heads, K key-value heads, Q head_dim, T tokens, B batch, s bytes per element, W window.
"""

from __future__ import annotations

from functools import lru_cache

from tfcost.core.blocks import blocks
from tfcost.core.layers import layer_ops
from tfcost.core.ops import Form, Op, collect, evaluate, op_cache_per_position, op_state_elements, rate_multiplicity
from tfcost.schema import ModelShape
from tfcost.units import DTYPE_BYTES, Dtype


def kv_cache_elements(shape: ModelShape, tokens: int, encoder_tokens: int | None = None, tp: int = 1) -> int:
    """The cache fold: every cache row's elements for one sequence after T tokens, over all layers. Keys and
    values, 2*K*Q a position per layer (the lesson's "Costs" section; GQA K < H), or MLA's latent d_c + d_h^R;
    a sliding or chunked layer holds at most W (C) positions; an encoder-decoder's decoder also caches the
    encoder positions' cross-attention keys and values (encoder_tokens, default T). Encoders keep none.
    `tp`: what one of t tensor-parallel GPUs holds (`cache_form`)."""
    source = tokens if encoder_tokens is None else encoder_tokens
    return evaluate(cache_form(shape, tp), tokens, source, True)


def cache_per_position_on_gpu(op: Op, tp: int) -> int:
    """A cache row's elements per position on one of t GPUs: its fan_out heads split over t, at least one each (a
    head is replicated when t > heads: vLLM, llm-analysis), so fan_in x max(heads / t, 1) / heads; a row of one head
    (MLA's latent, an indexer's key, compressed attention's shared entry) is held whole on every GPU
    (NVIDIA/TensorRT-LLM#15162)."""
    heads = max(op.fan_out, 1)
    return op_cache_per_position(op) * max(heads // tp, 1) // heads


@lru_cache(maxsize=4096)
def cache_form(shape: ModelShape, tp: int = 1) -> Form:
    """The cache fold of every layer, collected by span: the whole cache, or one of t GPUs' share of it."""
    return collect(
        [(count, op) for block, count in blocks(shape) for op in layer_ops(shape, block)],
        lambda op: cache_per_position_on_gpu(op, tp),
    )


# Cache rows whose positions step with T rather than grow by one a token (compressed attention, DeepSeek-V4).
STEPPED_RATES = ("compressed", "compressed_tail")


@lru_cache(maxsize=4096)
def cache_steps(shape: ModelShape) -> tuple[int, ...]:
    """The m of every cache row that steps every m positions (compressed entries and the tail of an unclosed
    window): empty for a cache that grows by a fixed amount per token until its windows fill. A stepped cache has
    no fixed bytes per token; what it holds is the cache at T (kv_cache_bytes) plus its fixed state."""
    return tuple(sorted({span.compress or 1 for per, span, _ in cache_form(shape) if per in STEPPED_RATES}))


def kv_cache_ceiling_bytes(shape: ModelShape, tokens: int, batch: int, dtype: Dtype, tp: int = 1) -> int:
    """A bound of the cache at every length up to T, nondecreasing in T: kv_cache_bytes with each unclosed window
    counted full, min(T, m - 1) positions where the cache holds T mod m (its other rows never shrink). Equal to
    kv_cache_bytes for a cache that does not step."""
    elements = 0
    for per, span, value in cache_form(shape, tp):
        if per == "compressed_tail":
            elements += value * min(tokens, (span.compress or 1) - 1)
        else:
            elements += value * rate_multiplicity(per, span, tokens, tokens, True)
    return elements * cached_element_bytes(batch, dtype)


def kv_cache_bytes_per_token(shape: ModelShape, dtype: Dtype) -> int:
    """Keys and values of one token in every layer, 2*L*K*Q*s for a plain decoder; an encoder-decoder model's
    decoder adds one encoder token's cross-attention keys and values. Before any sliding window fills."""
    return kv_cache_elements(shape, 1) * DTYPE_BYTES[dtype]


def kv_cache_bytes(
    shape: ModelShape, tokens: int, batch: int, dtype: Dtype, encoder_tokens: int | None = None, tp: int = 1
) -> int:
    """The KV cache of B sequences of T tokens: linear in both, except that a sliding-window layer holds at most
    W tokens. An encoder-decoder model caches T decoder tokens and the encoder tokens' cross keys and values.
    `tp`: what one of t tensor-parallel GPUs holds."""
    return kv_cache_elements(shape, tokens, encoder_tokens, tp) * cached_element_bytes(batch, dtype)


def sliding_windows_full(shape: ModelShape, tokens: int) -> bool:
    """Whether some sliding-window layer's cache, as transformers keeps it (W - 1 positions), stops growing from T to
    T + 1 tokens: T >= W - 1."""
    return any(
        span.window is not None and tokens >= span.window - 1
        for per, span, _ in cache_form(shape)
        if per == "cached" and not span.cross
    )


def kv_cache_held_between_steps_bytes(shape: ModelShape, tokens: int, batch: int, dtype: Dtype) -> int:
    """The cache transformers holds between two forward passes: kv_cache_bytes with a sliding layer at
    min(T, W - 1) positions, not min(T, W). Both are right about different moments. Its mask lets a query see W
    keys, itself included (masking_utils.sliding_window_overlay: `kv_idx > q_idx - sliding_window`, transformers
    5.24), so a step reads W, which kv_cache_bytes counts (Mistral's rolling buffer of W, Jiang et al. 2023 §2);
    but DynamicSlidingWindowLayer.update keeps only the last W - 1 of them after the step (cache_utils.py: "Only
    cache the last `self.sliding_window - 1` tokens"), the W-th being the next token's own key, appended during its
    step. `tfcost check` compares this with the cache transformers returns."""
    elements = 0
    for per, span, value in cache_form(shape):
        if per == "cached" and not span.cross and span.window is not None:
            elements += value * min(tokens, span.window - 1)
        else:
            elements += value * rate_multiplicity(per, span, tokens, tokens, True)
    return elements * cached_element_bytes(batch, dtype)


def cached_element_bytes(batch: int, dtype: Dtype) -> int:
    """Bytes one cached element takes over B sequences stored at `dtype`: B x s."""
    return batch * DTYPE_BYTES[dtype]


def measured_cache_bytes(bytes_per_token: int, tokens: int, batch: int) -> int:
    """A measured cache (the transformers engine's) over B sequences of `tokens` tokens: B x tokens x bytes per
    token."""
    return batch * tokens * bytes_per_token


def measured_state_bytes(bytes_per_sequence: int, batch: int) -> int:
    """A measured fixed-size state over B sequences: B x its bytes for one."""
    return batch * bytes_per_sequence


def state_bytes(shape: ModelShape, batch: int, dtype: Dtype) -> int:
    """The fixed-size state of recurrent and linear-attention layers for B sequences, independent of T (the
    `state` rows): each at `dtype`, or at its own (transformers keeps Mamba's recurrent states in fp32 whatever
    the model's dtype; conv states in the model's); 0 for a model of attention layers only."""
    per_sequence = sum(
        count * op_state_elements(op) * DTYPE_BYTES[op.dtype or dtype]
        for block, count in blocks(shape)
        for op in layer_ops(shape, block)
    )
    return per_sequence * batch


def score_matrix_entries_per_head(seq_len: int) -> int:
    """One head's T x T score matrix in one layer (the lesson: 1,048,576 entries at T = 1,024). A causal mask
    or a sliding window hides entries but a materialized matrix still holds all T^2."""
    return seq_len * seq_len


def attention_scores_bytes(batch: int, heads: int, seq_len: int, dtype: Dtype) -> int:
    """One attention call's B*H*T^2 scores, if materialized at `dtype` (the non-fused, math path)."""
    return batch * heads * score_matrix_entries_per_head(seq_len) * DTYPE_BYTES[dtype]


def score_matrix_bytes_per_layer(shape: ModelShape, seq_len: int, batch: int, dtype: Dtype) -> int:
    """The B*H*T^2 scores of one layer, if materialized at `dtype` (what fused kernels avoid)."""
    return attention_scores_bytes(batch, shape.n_heads, seq_len, dtype)


@lru_cache(maxsize=4096)
def attention_count(shape: ModelShape) -> int:
    """Attentions in the model: its score rows over T x T entries, one per block, two in a decoder block with
    cross-attention (a compressed-attention layer's scores over its compressed entries are more columns of the
    same softmax, not another attention, and are not in the T^2 figure)."""
    return sum(
        count * sum(op.kind == "scores" and op.per == "entry" for op in layer_ops(shape, block))
        for block, count in blocks(shape)
    )


def score_matrix_bytes(shape: ModelShape, seq_len: int, batch: int, dtype: Dtype) -> int:
    """Score matrices of every attention, if all were materialized at once."""
    return attention_count(shape) * score_matrix_bytes_per_layer(shape, seq_len, batch, dtype)


def attention_tensor_bytes(batch: int, heads: int, seq_len: int, head_dim: int, dtype: Dtype) -> int:
    """One (B, heads, T, Q) attention input or output at `dtype`: Q and O have H heads, K and V have K heads."""
    return batch * heads * seq_len * head_dim * DTYPE_BYTES[dtype]


def attention_io_bytes(
    batch: int, heads: int, kv_heads: int, seq_len: int, head_dim: int, dtype: Dtype, backward: bool
) -> int:
    """The least an attention kernel can move to and from device memory, every tensor touched once (the roofline
    model's compulsory traffic, Williams et al. 2009): the forward reads Q, K, V and writes O; the backward
    also reads dO and writes dQ, dK, dV, so forward+backward moves twice the forward. Under GQA, K, V, dK and dV
    have K heads. Left out: the fp32 log-sum-exp fused kernels keep (B*H*T*4 bytes) and the re-reads of
    Q, K, V, O that a separate backward kernel makes (FlashAttention-2 §3.1.2, Dao 2023)."""
    q_bytes = attention_tensor_bytes(batch, heads, seq_len, head_dim, dtype)
    kv_bytes = attention_tensor_bytes(batch, kv_heads, seq_len, head_dim, dtype)
    forward = 2 * q_bytes + 2 * kv_bytes
    return 2 * forward if backward else forward


def attention_peak_memory_bytes(
    batch: int,
    heads: int,
    kv_heads: int,
    seq_len: int,
    head_dim: int,
    dtype: Dtype,
    materialized: bool,
    backward: bool,
) -> int:
    """A lower-bound estimate of what one attention call allocates on top of its inputs Q, K, V: the output O
    (and dQ, dK, dV with the backward pass), plus
    - materialized (the math backend): the B*H*T^2 scores at `dtype`, quadratic in T (and the same again for
      their gradient dP in backward);
    - fused (flash, memory-efficient, cuDNN): one fp32 log-sum-exp per query row, B*H*T*4 bytes, linear in T
      (FlashAttention-2, Algorithm 1, Dao 2023).
    The math path's temporaries (softmax copy, an upcast, the mask) come on top, so it allocates more."""
    o_bytes = attention_tensor_bytes(batch, heads, seq_len, head_dim, dtype)
    kv_bytes = attention_tensor_bytes(batch, kv_heads, seq_len, head_dim, dtype)
    outputs = o_bytes + (o_bytes + 2 * kv_bytes if backward else 0)  # O; then dQ (like O), dK, dV
    if materialized:
        scores = attention_scores_bytes(batch, heads, seq_len, dtype)
        return outputs + (2 * scores if backward else scores)
    log_sum_exp = attention_tensor_bytes(batch, heads, seq_len, 1, "fp32")
    return outputs + log_sum_exp
