"""Multi-head attention with grouped or multi-query key-value heads: full, sliding-window or chunked.

Vaswani et al. 2017 §3.2; GQA: Ainslie et al. 2023 (K key-value heads serve H query heads); sliding window:
Mistral, Jiang et al. 2023 §2; chunked: Llama 4; sinks: gpt-oss (one learned logit per query head).
Symbols: d d_model, H query heads, K key-value heads, Q head_dim.
Saved for the backward pass (Korthikanti et al. 2022 §4.1, "Attention block"): the q/k/v input (2sbh), Q and K
for QK^T (4sbh), the softmax output (2as^2b) and its dropout mask (as^2b), the dropout's output and V for AV
(2as^2b + 2sbh), the output projection's input (2sbh) and its dropout mask (sbh): 11sbh + 5as^2b for GPT-3,
with K and V K*Q wide under GQA. A fused kernel (FlashAttention) keeps one fp32 log-sum-exp per query row and head
instead of the score entries.
"""

from __future__ import annotations

from tfcost.core.blocks import Block
from tfcost.core.layers.mlp import dropout_mask
from tfcost.core.layers.norms import norm_vectors
from tfcost.core.ops import Op, Rate, Saved, Span
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
    # Cross-attention saves what self-attention does, over T_source keys; its k and v read the encoder's output,
    # one tensor every decoder layer references (held once per model, outside the layers), so q keeps its own input.
    q_input = "input (the normed decoder state)" if cross else "input (read by q, k and v)"
    ops = [
        # An output gate (Qwen3-Next) doubles q_proj: the second half, sigmoid-ed, scales each head's output.
        Op(f"{prefix}/q", "linear", source, heads * q * (1 + gate), "token", bias.qkv, flops_part=qkv,
           saves=(Saved(q_input, source, split=False),)),
        Op(f"{prefix}/k", "linear", source, kv_heads * q, keys, bias.qkv, keys_made, keys_made, flops_part=qkv),
        Op(f"{prefix}/v", "linear", source, kv_heads * q, keys, bias.qkv, values_made, values_made, flops_part=qkv),
        Op(f"{prefix}/scores", "scores", q, heads, "entry", flops_part=f"{prefix}/scores", span=span,
           saves=scores_saves(heads * q, kv_heads * q * keys_made, heads)),
        Op(f"{prefix}/values", "values", q, heads, "entry", flops_part=f"{prefix}/values", span=span,
           saves=values_saves(kv_heads * q * values_made, heads)),
        Op(o, "linear", heads * q, d, "token", bias.attn_out, flops_part=o,
           saves=output_saves(heads * q, d, gate)),
    ]  # fmt: skip
    if shape.qk_norm and shape.qk_norm_width == "projection":  # OLMo 2: over all heads' queries, all keys
        vectors, part = norm_vectors(shape), f"{prefix}/qk_norm"
        saved_q, saved_k = (Saved("query input", heads * q),), (Saved("key input", kv_heads * q),)
        ops.append(Op(f"{prefix}/q_norm", "norm", heads * q, vectors, "weights", part=part, saves=saved_q))
        ops.append(Op(f"{prefix}/k_norm", "norm", kv_heads * q, vectors, "weights", part=part, saves=saved_k))
    elif shape.qk_norm:  # Qwen3: a head_dim-wide norm on queries and one on keys, each saving its input
        saved = (Saved("query and key inputs", (heads + kv_heads * keys_made) * q),)
        ops.append(
            Op(f"{prefix}/qk_norm", "norm", q, norm_vectors(shape), "weights", copies=1 + keys_made, saves=saved)
        )
    if shape.attention_sinks:
        ops.append(Op(f"{prefix}/sinks", "table", heads, 1, "weights"))
    if (block.causal or cross) and not block.kv_shared:
        ops.append(Op(f"cache/{prefix}", "cache", 2 * kv_heads * q, kv_heads, "cached", span=span))
    return ops


def scores_saves(query_width: int, key_width: int, heads: int) -> tuple[Saved, ...]:
    """QK^T keeps Q and K (4sbh for GPT-3); the softmax keeps its output (2as^2b) and the attention dropout its
    mask (as^2b), entries a non-fused kernel materialises; a fused one keeps an fp32 log-sum-exp per query row."""
    return (
        Saved("Q and K", query_width + key_width),
        Saved("softmax output", heads, "entry", when="unfused"),
        Saved("attention dropout mask", heads, "entry", "mask", when="unfused_dropout"),
        Saved("log-sum-exp per query row", heads, store="fp32", when="fused"),
    )


def values_saves(value_width: int, heads: int) -> tuple[Saved, ...]:
    """AV keeps V (2sbh) and the probabilities it multiplies: the dropout's output (2as^2b) when dropout is on;
    without it, the softmax output the scores row keeps already."""
    return (
        Saved("V", value_width),
        Saved("dropped-out probabilities", heads, "entry", when="unfused_dropout"),
    )


def output_saves(width: int, d: int, gate: int) -> tuple[Saved, ...]:
    """The output projection keeps its input (2sbh) and the dropout after it its mask (sbh, in the residual
    stream). An output gate (Qwen3-Next) keeps the attention output and the sigmoid gate it multiplies."""
    saved = (Saved("input", width), dropout_mask(d))
    return saved + (Saved("attention output and sigmoid gate", 2 * width),) * gate
