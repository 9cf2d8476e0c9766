"""FLOPs: the 6N rule, the lesson's attention term, and the exact matmul count of a forward pass.

Convention (as the nanoGPT sizing notebook and torch's FlopCounterMode): FLOPs, not MACs, so an (m x k) @ (k x n)
matmul costs 2*m*k*n; only matmuls are counted (biases, norms, softmax and activations are left out).
Symbols: T tokens per sequence, L layers, H query heads, K key-value heads, Q head_dim, d d_model, F d_ff, V vocab.
"""

from __future__ import annotations

from tfcost.params import non_embedding_params
from tfcost.schema import ModelShape


def matmul_flops(m: int, k: int, n: int) -> int:
    """An (m x k) @ (k x n) matmul: m*n dot products of length k, each k multiplies and k adds."""
    return 2 * m * k * n


def score_entries(seq_len: int, causal: bool) -> int:
    """Entries of one head's T x T score matrix that are computed: all T^2, or the T(T+1)/2 on and below the
    diagonal when the causal mask is counted."""
    return seq_len * (seq_len + 1) // 2 if causal else seq_len * seq_len


def attention_matmul_flops(batch: int, heads: int, seq_len: int, head_dim: int, causal: bool) -> int:
    """One of attention's two matmuls, QK^T or PV, over B sequences and H query heads: each computed score entry
    is a length-Q dot product (QK^T) and weights one length-Q value row (PV), so 2*B*H*entries*Q. Paid per query
    head, also under GQA/MQA (every source in formulas-and-specs.md §1.12 counts it so)."""
    return 2 * batch * heads * score_entries(seq_len, causal) * head_dim


def attention_forward_flops(batch: int, heads: int, seq_len: int, head_dim: int, causal: bool) -> int:
    """One attention kernel's forward pass: QK^T and PV, 4*B*H*T^2*Q, as FlashAttention-2 counts it (Dao 2023,
    §4.1; benchmarks/benchmark_flash_attention.py). Causal: the exact T(T+1)/2 triangle, where FA halves T^2."""
    return 2 * attention_matmul_flops(batch, heads, seq_len, head_dim, causal)


def attention_backward_flops(batch: int, heads: int, seq_len: int, head_dim: int, causal: bool) -> int:
    """The kernel's backward pass: 5 matmuls of the forward's size (QK^T recomputed, then dV, dP, dQ, dK), so
    2.5x forward, FlashAttention-2's convention (Dao 2023, §4.1: "2 matmuls in the forward pass and 5 matmuls in
    the backward pass, due to recomputation"), not the 2x of a whole model's backward."""
    return 5 * attention_matmul_flops(batch, heads, seq_len, head_dim, causal)


def six_n_flops_per_token(shape: ModelShape) -> int:
    """Training FLOPs per token, 6N with N the non-embedding parameters: 2N forward + 4N backward
    (Kaplan et al. 2020, §2.1)."""
    return 6 * non_embedding_params(shape)


def attention_score_flops_per_token(shape: ModelShape, seq_len: int) -> int:
    """The lesson's attention-score training term per token, 6*L*T*(H*Q): Kaplan et al. 2020 Eq. 2.2's
    2*n_layer*n_ctx*d_attn forward, times 3 for forward + backward."""
    return 6 * shape.n_layers * seq_len * shape.n_heads * shape.head_dim


def forward_flops_breakdown(shape: ModelShape, seq_len: int, causal: bool = False) -> dict[str, int]:
    """Matmul FLOPs of one forward pass over one sequence of T tokens, by part, summed over layers.

    As the nanoGPT sizing notebook (transformer_sizing.ipynb) counts them, generalised to GQA and gated MLPs:
    the q/k/v/o projections, QK^T and AV over the score entries of every query head, the MLP, and the output
    head over all T positions. With `causal`, QK^T and AV cover only the T(T+1)/2 unmasked entries.
    """
    t, d, layers = seq_len, shape.d_model, shape.n_layers
    q_width, kv_width = shape.n_heads * shape.head_dim, shape.n_kv_heads * shape.head_dim
    per_score_matmul = attention_matmul_flops(1, shape.n_heads, t, shape.head_dim, causal)
    mlp_matrices = 3 if shape.mlp == "gated" else 2
    return {
        "attention/qkv": layers * matmul_flops(t, d, q_width + 2 * kv_width),
        "attention/scores": layers * per_score_matmul,
        "attention/values": layers * per_score_matmul,
        "attention/o": layers * matmul_flops(t, q_width, d),
        "mlp": layers * mlp_matrices * matmul_flops(t, d, shape.d_ff),
        "output_head": matmul_flops(t, d, shape.vocab_size),
    }


def forward_flops(shape: ModelShape, seq_len: int, causal: bool = False) -> int:
    """Exact matmul FLOPs of one forward pass over one T-token sequence."""
    return sum(forward_flops_breakdown(shape, seq_len, causal).values())


def training_flops(shape: ModelShape, seq_len: int, causal: bool = False) -> int:
    """Forward + backward of one sequence: the backward pass costs twice the forward (Kaplan et al. 2020, §2.1),
    so 3x forward."""
    return 3 * forward_flops(shape, seq_len, causal)
