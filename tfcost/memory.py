"""Memory of the KV cache and of a materialized attention score matrix.

Symbols: L layers, H query heads, K key-value heads, Q head_dim, T tokens, B batch, s bytes per element.
"""

from __future__ import annotations

from tfcost.schema import ModelShape
from tfcost.units import DTYPE_BYTES, Dtype


def kv_cache_bytes_per_token(shape: ModelShape, dtype: Dtype) -> int:
    """Keys and values of one token in every layer, 2*L*K*Q*s (the lesson's "Costs" section; with K < H,
    grouped-query attention, Ainslie et al. 2023)."""
    return 2 * shape.n_layers * shape.n_kv_heads * shape.head_dim * DTYPE_BYTES[dtype]


def kv_cache_bytes(shape: ModelShape, tokens: int, batch: int, dtype: Dtype) -> int:
    """The KV cache of B sequences of T tokens: linear in both."""
    return kv_cache_bytes_per_token(shape, dtype) * tokens * batch


def score_matrix_entries_per_head(seq_len: int) -> int:
    """One head's T x T score matrix in one layer (the lesson: 1,048,576 entries at T = 1,024). A causal mask
    hides entries but a materialized matrix still holds all T^2."""
    return seq_len * seq_len


def score_matrix_bytes_per_layer(shape: ModelShape, seq_len: int, batch: int, dtype: Dtype) -> int:
    """The B*H*T^2 scores of one layer, if materialized at `dtype` (what fused kernels avoid)."""
    return batch * shape.n_heads * score_matrix_entries_per_head(seq_len) * DTYPE_BYTES[dtype]


def score_matrix_bytes(shape: ModelShape, seq_len: int, batch: int, dtype: Dtype) -> int:
    """Score matrices of every layer, if all were materialized at once."""
    return shape.n_layers * score_matrix_bytes_per_layer(shape, seq_len, batch, dtype)
