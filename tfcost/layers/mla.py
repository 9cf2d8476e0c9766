"""Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434 §2.1): low-rank queries (W^DQ, W^UQ), a small
cached latent of d_c values plus one rotary key of d_h^R shared by all heads (W^DKV with W^KR), per-head keys and
values rebuilt from the latent (W^UK, W^UV), and W^O. The cache holds d_c + d_h^R per position (§2.1.3, Table 1),
the same on every tensor-parallel rank (NVIDIA/TensorRT-LLM#15162)."""

from __future__ import annotations

from tfcost.blocks import Block
from tfcost.layers.norms import norm_vectors
from tfcost.ops import Op, Span
from tfcost.schema import ModelShape


def mla_ops(shape: ModelShape, block: Block) -> list[Op]:
    """One MLA layer's rows. Queries and keys are qk_nope_head_dim + qk_rope_head_dim wide, values v_head_dim."""
    assert shape.mla is not None  # the schema guarantees it for an 'mla' layer
    m, d, heads, bias = shape.mla, shape.d_model, shape.n_heads, shape.bias
    q_width = heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
    kv_up_width = heads * (m.qk_nope_head_dim + m.v_head_dim)  # per head: a non-rotary key and a value
    span = Span(block.causal, block.window, block.chunk)
    qkv = "attention/qkv"
    if m.q_lora_rank is not None:
        ops = [
            Op("attention/q_down", "linear", d, m.q_lora_rank, "token", bias.qkv, flops_part=qkv),
            Op("attention/q_down_norm", "norm", m.q_lora_rank, norm_vectors(shape), "weights"),
            Op("attention/q_up", "linear", m.q_lora_rank, q_width, "token", flops_part=qkv),
        ]
    else:
        ops = [Op("attention/q", "linear", d, q_width, "token", flops_part=qkv)]
    ops += [
        Op("attention/kv_down", "linear", d, m.kv_lora_rank + m.qk_rope_head_dim, "token", bias.qkv, flops_part=qkv),
        Op("attention/kv_down_norm", "norm", m.kv_lora_rank, norm_vectors(shape), "weights"),
        Op("attention/kv_up", "linear", m.kv_lora_rank, kv_up_width, "token", flops_part=qkv),
        Op("attention/scores", "scores", shape.head_dim, heads, "entry", flops_part="attention/scores", span=span),
        Op("attention/values", "values", m.v_head_dim, heads, "entry", flops_part="attention/values", span=span),
        Op("attention/o", "linear", heads * m.v_head_dim, d, "token", bias.attn_out, flops_part="attention/o"),
    ]
    if shape.attention_sinks:
        ops.append(Op("attention/sinks", "table", heads, 1, "weights"))
    if block.causal:
        ops.append(Op("cache/attention", "cache", m.kv_lora_rank + m.qk_rope_head_dim, 1, "cached", span=span))
    return ops
