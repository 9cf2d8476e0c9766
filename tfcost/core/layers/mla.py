"""Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434 §2.1): low-rank queries (W^DQ, W^UQ), a small
cached latent of d_c values plus one rotary key of d_h^R shared by all heads (W^DKV with W^KR), per-head keys and
values rebuilt from the latent (W^UK, W^UV), and W^O. The cache holds d_c + d_h^R per position (§2.1.3, Table 1),
the same on every tensor-parallel rank (NVIDIA/TensorRT-LLM#15162).

With DeepSeek Sparse Attention (DeepSeek-V3.2, arXiv:2512.02556, Eq. 1-2) a lightning indexer scores every earlier
position per query and the attention reads only the top-k of them: the indexer adds its own projections, one cached
index key of d^I per position, and H^I x d^I (+ H^I for the head weighting) FLOPs per score entry over the causal
triangle; the attention's QK^T and AV cover at most k entries per query when counted causally. Counted in full (the
convention of FlopCounterMode), both run over all T^2 entries, as transformers computes the dense scores and masks.
"""

from __future__ import annotations

from tfcost.core.blocks import Block
from tfcost.core.layers.attention import output_saves, scores_saves, values_saves
from tfcost.core.layers.norms import norm_vectors
from tfcost.core.ops import Op, Saved, Span
from tfcost.schema import ModelShape


def mla_ops(shape: ModelShape, block: Block, own_indexer: bool = True) -> list[Op]:
    """One MLA layer's rows. Queries and keys are qk_nope_head_dim + qk_rope_head_dim wide, values v_head_dim.
    Under DSA, `own_indexer` false is a layer that reuses the previous layer's top-k selection (GLM-5's shared
    layers, arXiv:2603.12201): sparse, but with no indexer rows or index cache of its own."""
    assert shape.mla is not None  # the schema guarantees it for an 'mla' layer
    m, d, heads, bias = shape.mla, shape.d_model, shape.n_heads, shape.bias
    q_width = heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
    kv_up_width = heads * (m.qk_nope_head_dim + m.v_head_dim)  # per head: a non-rotary key and a value
    topk = m.indexer.topk if m.indexer is not None else None
    span = Span(block.causal, block.window, block.chunk, topk=topk)
    qkv = "attention/qkv"
    # Saved as multi-head attention saves (tfcost.core.layers.attention): the layer's input, Q and K (H heads of
    # qk_nope + qk_rope each), V and the output projection's input (H x v_head_dim); and, as every linear and norm
    # keeps its input, each latent twice: the norm's input (the down-projection's output) and the up-projection's
    # input (the norm's output), 2 x (q_lora_rank + kv_lora_rank) per token. The latents are not split by tensor
    # parallelism (the down-projections are replicated, Megatron-Core's MLA), only by sequence parallelism.
    saved_input = (Saved("input (read by the query and key-value down-projections)", d, split=False),)
    vectors = norm_vectors(shape)
    if m.q_lora_rank is not None:
        latent_q = m.q_lora_rank
        ops = [
            Op("attention/q_down", "linear", d, latent_q, "token", bias.qkv, flops_part=qkv, saves=saved_input),
            Op("attention/q_down_norm", "norm", latent_q, vectors, "weights",
               saves=(Saved("input: the query latent", latent_q, split=False),)),
            Op("attention/q_up", "linear", latent_q, q_width, "token", flops_part=qkv,
               saves=(Saved("input: the normed query latent", latent_q, split=False),)),
        ]  # fmt: skip
    else:
        ops = [Op("attention/q", "linear", d, q_width, "token", flops_part=qkv, saves=saved_input)]
    latent_kv = m.kv_lora_rank
    ops += [
        Op("attention/kv_down", "linear", d, m.kv_lora_rank + m.qk_rope_head_dim, "token", bias.qkv, flops_part=qkv),
        Op(
            "attention/kv_down_norm",
            "norm",
            latent_kv,
            vectors,
            "weights",
            saves=(Saved("input: the key-value latent", latent_kv, split=False),),
        ),
        Op(
            "attention/kv_up",
            "linear",
            latent_kv,
            kv_up_width,
            "token",
            flops_part=qkv,
            saves=(Saved("input: the normed key-value latent", latent_kv, split=False),),
        ),
        Op(
            "attention/scores",
            "scores",
            shape.head_dim,
            heads,
            "entry",
            flops_part="attention/scores",
            span=span,
            saves=scores_saves(q_width, q_width, heads),
        ),
        Op(
            "attention/values",
            "values",
            m.v_head_dim,
            heads,
            "entry",
            flops_part="attention/values",
            span=span,
            saves=values_saves(heads * m.v_head_dim, heads),
        ),
        Op(
            "attention/o",
            "linear",
            heads * m.v_head_dim,
            d,
            "token",
            bias.attn_out,
            flops_part="attention/o",
            saves=output_saves(heads * m.v_head_dim, d, 0),
        ),
    ]
    if shape.attention_sinks:
        ops.append(Op("attention/sinks", "table", heads, 1, "weights"))
    if block.causal:
        ops.append(Op("cache/attention", "cache", m.kv_lora_rank + m.qk_rope_head_dim, 1, "cached", span=span))
    if m.indexer is not None and own_indexer:
        ops += indexer_ops(shape, block)
    return ops


def indexer_ops(shape: ModelShape, block: Block) -> list[Op]:
    """DSA's lightning indexer (arXiv:2512.02556, Eq. 1; transformers' DeepseekV32Indexer): H^I queries of d^I from
    the query latent, one d^I key per position (LayerNorm with scale and shift), H^I head weights, then per score
    entry H^I dot products of d^I and their weighted sum over H^I heads. It scores every earlier position, so its
    entries are the full causal triangle, not top-k; its keys are cached for every position."""
    assert shape.mla is not None and shape.mla.indexer is not None and shape.mla.q_lora_rank is not None
    index, d, part = shape.mla.indexer, shape.d_model, "attention/indexer"
    span = Span(block.causal, block.window, block.chunk)
    # Saved: nothing. transformers runs the indexer under torch.no_grad (DeepseekV32Indexer.forward): its top-k
    # selection has no gradient, and DeepSeek trains it by a KL loss of its own on detached inputs (arXiv:2512.02556
    # §2.1), so the language model's backward reads none of its tensors.
    ops = [
        Op(
            f"{part}/q",
            "linear",
            shape.mla.q_lora_rank,
            index.n_heads * index.head_dim,
            "token",
            part=part,
            flops_part=part,
        ),
        Op(f"{part}/k", "linear", d, index.head_dim, "token", part=part, flops_part=part),
        Op(f"{part}/k_norm", "norm", index.head_dim, 2, "weights", part=part),
        Op(f"{part}/weights", "linear", d, index.n_heads, "token", part=part, flops_part=part),
        Op(f"{part}/scores", "index", index.head_dim, index.n_heads, "entry", flops_part=part, span=span),
        Op(f"{part}/weighting", "index", index.n_heads, 1, "entry", flops_part=part, span=span),
    ]
    if block.causal:
        ops.append(Op("cache/indexer", "cache", index.head_dim, 1, "cached", span=span))
    return ops
