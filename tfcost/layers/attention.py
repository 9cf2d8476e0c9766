"""Multi-head attention with grouped or multi-query key-value heads: full, sliding-window or chunked.

Vaswani et al. 2017 §3.2; GQA: Ainslie et al. 2023 (K key-value heads serve H query heads); sliding window:
Mistral, Jiang et al. 2023 §2; chunked: Llama 4; sinks: gpt-oss (one learned logit per query head).
Symbols: d d_model, H query heads, K key-value heads, Q head_dim.
"""

from __future__ import annotations

from tfcost.blocks import Block
from tfcost.layers.norms import norm_vectors
from tfcost.ops import Op, Rate, Span
from tfcost.schema import ModelShape


def attention_ops(
    shape: ModelShape, block: Block, prefix: str = "attention", cross: bool = False, width: int | None = None
) -> list[Op]:
    """One attention: q, k, v projections, QK^T and AV over the score entries of every query head (paid per query
    head, also under GQA/MQA: formulas-and-specs.md §1.12), the output projection, and its cache rows (2*K*Q per
    position, the lesson's "Costs" section; an encoder keeps none). Cross-attention reads keys and values from
    the encoder's positions, unmasked, and caches them once per encoder position. `width`: what q, k and v are
    projected from, where it is not d (Zamba2's shared attention reads [hidden state, embeddings], 2 d wide)."""
    d, bias, heads = shape.d_model, shape.bias, shape.n_heads
    source = width or d
    kv_heads, q = block.kv_heads or shape.n_kv_heads, block.head_dim or shape.head_dim  # a layer's own, if it has them
    # Gemma 3n/4: a KV-shared layer reads an earlier layer's keys and values (no projections, no cache); a layer
    # with values_from_keys has no value projection.
    keys_made, values_made = int(not block.kv_shared), int(not (block.kv_shared or block.values_from_keys))
    span = Span(cross=True) if cross else Span(block.causal, block.window, block.chunk)
    keys: Rate = "source_token" if cross else "token"
    gate = int(shape.attention_output_gate and not cross)
    qkv, o = f"{prefix}/qkv", f"{prefix}/o"
    ops = [
        # An output gate (Qwen3-Next) doubles q_proj: the second half, sigmoid-ed, scales each head's output.
        Op(f"{prefix}/q", "linear", source, heads * q * (1 + gate), "token", bias.qkv, flops_part=qkv),
        Op(f"{prefix}/k", "linear", source, kv_heads * q, keys, bias.qkv, keys_made, keys_made, flops_part=qkv),
        Op(f"{prefix}/v", "linear", source, kv_heads * q, keys, bias.qkv, values_made, values_made, flops_part=qkv),
        Op(f"{prefix}/scores", "scores", q, heads, "entry", flops_part=f"{prefix}/scores", span=span),
        Op(f"{prefix}/values", "values", q, heads, "entry", flops_part=f"{prefix}/values", span=span),
        Op(o, "linear", heads * q, d, "token", bias.attn_out, flops_part=o),
    ]
    if shape.qk_norm and shape.qk_norm_width == "projection":  # OLMo 2: over all heads' queries, all keys
        vectors, part = norm_vectors(shape), f"{prefix}/qk_norm"
        ops.append(Op(f"{prefix}/q_norm", "norm", heads * q, vectors, "weights", part=part))
        ops.append(Op(f"{prefix}/k_norm", "norm", kv_heads * q, vectors, "weights", part=part))
    elif shape.qk_norm:  # Qwen3: a head_dim-wide norm on queries and one on keys
        ops.append(Op(f"{prefix}/qk_norm", "norm", q, norm_vectors(shape), "weights", copies=1 + keys_made))
    if shape.attention_sinks:
        ops.append(Op(f"{prefix}/sinks", "table", heads, 1, "weights"))
    if (block.causal or cross) and not block.kv_shared:
        ops.append(Op(f"cache/{prefix}", "cache", 2 * kv_heads * q, kv_heads, "cached", span=span))
    return ops
