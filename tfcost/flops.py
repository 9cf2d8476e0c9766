"""FLOPs: the 6N rule, the lesson's attention term, and the exact matmul count of a forward pass.

Convention (as the nanoGPT sizing notebook and torch's FlopCounterMode): FLOPs, not MACs, so an (m x k) @ (k x n)
matmul costs 2*m*k*n; only matmuls are counted (biases, norms, softmax and activations are left out).
Symbols: T tokens per sequence, L layers, H query heads, K key-value heads, Q head_dim, d d_model, F d_ff, V vocab,
W sliding window. An encoder-decoder model reads T tokens and produces T tokens.
"""

from __future__ import annotations

from functools import lru_cache

from tfcost.blocks import Block, blocks
from tfcost.params import active_non_embedding_params
from tfcost.schema import ModelShape


def matmul_flops(m: int, k: int, n: int) -> int:
    """An (m x k) @ (k x n) matmul: m*n dot products of length k, each k multiplies and k adds."""
    return 2 * m * k * n


def score_entries(seq_len: int, causal: bool, window: int | None = None) -> int:
    """Entries of one head's T x T score matrix that are counted.

    Full: all T^2, what a dense kernel computes whatever the mask (and what FlopCounterMode counts). Causal: only
    the entries the mask keeps, the T(T+1)/2 on and below the diagonal, or within a sliding window of W, where
    query i sees min(i + 1, W) keys: W(W+1)/2 + (T - W)*W once T > W (nanochat's estimate_prefill_flops).
    """
    if not causal:
        return seq_len * seq_len
    if window is None or seq_len <= window:
        return seq_len * (seq_len + 1) // 2
    return window * (window + 1) // 2 + (seq_len - window) * window


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


def projection_flops(shape: ModelShape, queries: int, keys: int) -> dict[str, int]:
    """The q/k/v and output projections of one attention over `queries` query and `keys` key positions."""
    d, heads = shape.d_model, shape.n_heads
    if shape.mla is not None:  # low-rank queries, the shared latent and rotary key, then per-head keys and values
        m = shape.mla
        q_width = heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
        if m.q_lora_rank is None:
            q = matmul_flops(queries, d, q_width)
        else:
            q = matmul_flops(queries, d, m.q_lora_rank) + matmul_flops(queries, m.q_lora_rank, q_width)
        kv = matmul_flops(keys, d, m.kv_lora_rank + m.qk_rope_head_dim) + matmul_flops(
            keys, m.kv_lora_rank, heads * (m.qk_nope_head_dim + m.v_head_dim)
        )
        return {"qkv": q + kv, "o": matmul_flops(queries, heads * m.v_head_dim, d)}
    q_width, kv_width = heads * shape.head_dim, shape.n_kv_heads * shape.head_dim
    return {
        "qkv": matmul_flops(queries, d, q_width) + matmul_flops(keys, d, 2 * kv_width),
        "o": matmul_flops(queries, q_width, d),
    }


def attention_flops(shape: ModelShape, queries: int, keys: int, entries: int) -> dict[str, int]:
    """One attention: projections, QK^T over `entries` score entries per head (a length-Q dot product each) and
    AV (each entry weights one value row)."""
    projections = projection_flops(shape, queries, keys)
    return {
        "qkv": projections["qkv"],
        "scores": attention_matmul_flops(1, shape.n_heads, entries, qk_head_dim(shape)),
        "values": attention_matmul_flops(1, shape.n_heads, entries, v_head_dim(shape)),
        "o": projections["o"],
    }


def mlp_flops(shape: ModelShape, tokens: int, d_ff: int) -> int:
    """An MLP of width d_ff over `tokens` tokens: 2 matrices, or 3 when gated."""
    matrices = 3 if shape.mlp == "gated" else 2
    return matrices * matmul_flops(tokens, shape.d_model, d_ff)


def moe_flops(shape: ModelShape, tokens: int) -> dict[str, int]:
    """An MoE MLP: the router scores every expert, each token runs through k routed experts and the shared ones
    (torchtitan's and Megatron's active-expert count)."""
    assert shape.moe is not None
    moe, d = shape.moe, shape.d_model
    return {
        "moe/router": matmul_flops(tokens, d, moe.n_experts),
        "moe/experts": mlp_flops(shape, tokens * moe.experts_per_token, moe.expert_d_ff),
        "moe/shared": moe.n_shared_experts * mlp_flops(shape, tokens, moe.shared_width),
        "moe/shared_gate": matmul_flops(tokens, d, 1) if moe.shared_expert_gate else 0,
    }


def block_forward_flops(shape: ModelShape, block: Block, seq_len: int, causal: bool) -> dict[str, int]:
    """One block over one sequence of T tokens, by part."""
    t = seq_len
    entries = score_entries(t, causal and block.causal, block.window)
    parts = {f"attention/{key}": value for key, value in attention_flops(shape, t, t, entries).items()}
    if block.cross_attention:  # T decoder queries against the T encoder outputs, no mask
        cross = attention_flops(shape, t, t, score_entries(t, causal=False))
        parts.update({f"cross_attention/{key}": value for key, value in cross.items()})
    if block.moe:
        parts.update(moe_flops(shape, t))
    else:
        parts["mlp"] = mlp_flops(shape, t, shape.d_ff)
    return parts


def forward_flops_breakdown(shape: ModelShape, seq_len: int, causal: bool = False) -> dict[str, int]:
    """Matmul FLOPs of one forward pass over one sequence of T tokens, by part, summed over layers.

    As the nanoGPT sizing notebook (transformer_sizing.ipynb) counts them, generalised to GQA, gated MLPs, MoE,
    MLA and encoders: the projections, QK^T and AV over the score entries of every query head, the MLP, and the
    output head over all T positions. With `causal`, QK^T and AV cover only the entries the mask keeps.
    """
    t, d = seq_len, shape.d_model
    prefix = shape.architecture == "encoder-decoder"
    parts: dict[str, int] = {}
    for block, count in blocks(shape):
        for key, value in block_forward_flops(shape, block, t, causal).items():
            name = f"{block.stack}/{key}" if prefix else key
            parts[name] = parts.get(name, 0) + count * value
    if shape.pooler:  # the first token of the sequence only
        parts["pooler"] = matmul_flops(1, d, d)
    if shape.head == "mlm":
        parts["mlm_transform"] = matmul_flops(t, d, d)
    if shape.head != "none":
        parts["output_head"] = matmul_flops(t, d, shape.vocab_size)
    return parts


@lru_cache(maxsize=4096)  # a sweep over batch sizes asks again for every (shape, T)
def forward_flops(shape: ModelShape, seq_len: int, causal: bool = False) -> int:
    """Exact matmul FLOPs of one forward pass over one T-token sequence."""
    return sum(forward_flops_breakdown(shape, seq_len, causal).values())


def training_flops_from_forward(forward: int) -> int:
    """Forward + backward of one sequence: the backward pass costs twice the forward (Kaplan et al. 2020, §2.1),
    so 3x forward."""
    return 3 * forward


def training_flops(shape: ModelShape, seq_len: int, causal: bool = False) -> int:
    """Forward + backward of one sequence, 3x forward (training_flops_from_forward)."""
    return training_flops_from_forward(forward_flops(shape, seq_len, causal))


def six_n_flops_per_token(shape: ModelShape) -> int:
    """Training FLOPs per token, 6N with N the non-embedding parameters: 2N forward + 4N backward
    (Kaplan et al. 2020, §2.1). For MoE, N counts the active experts only (torchtitan, Megatron-LM)."""
    return 6 * active_non_embedding_params(shape)


def attention_score_flops_per_token(shape: ModelShape, seq_len: int) -> int:
    """The lesson's attention-score training term per token, 6*L*T*(H*Q): Kaplan et al. 2020 Eq. 2.2's
    2*n_layer*n_ctx*d_attn forward, times 3 for forward + backward. Summed per attention, with T capped at W for a
    sliding-window layer (nanochat's estimate_flops) and (Q_qk + Q_v)/2 for Q when they differ (MLA)."""
    per_position = 3 * shape.n_heads * (qk_head_dim(shape) + v_head_dim(shape))
    total = 0
    for block, count in blocks(shape):
        context = seq_len if block.window is None else min(seq_len, block.window)
        total += count * per_position * context
        if block.cross_attention:
            total += count * per_position * seq_len
    return total
