"""DeepSeek-V4's attention (DeepSeek-V4 technical report §2.3, DeepSeek-AI 2026; transformers 5.24's
modeling_deepseek_v4.py, whose classes are named below): shared-KV multi-query attention over a sliding window of
raw positions and, side by side in the same softmax, over compressed entries that each fold m positions.

Symbols: d d_model, H heads, D head_dim (one key-value head; the keys are the values), q q_lora_rank, g o_groups,
r o_lora_rank, W the sliding window, m the compression rate, H_I, D_I the indexer's heads and head width, k its
top-k, T tokens, T_c = floor(T/m) compressed entries.

Every layer (DeepseekV4Attention): low-rank queries d -> q -> H D, one D-wide key-value projection, per-head sinks,
and a grouped low-rank output: g groups of H D/g -> r each (a bmm: 2 H D r per token), then g r -> d. Its scores
and values run over the T raw keys and the T_c compressed entries (2 H D T (T + T_c) each in full, as transformers
computes them before masking; causally min(t+1, W) raw and min(floor((t+1)/m), k) compressed per query).

- Heavily Compressed Attention (DeepseekV4HCACompressor, m' = 128): a compressor kv and gate projection d -> D,
  a position bias m x D and a D-wide norm; each closed window of m positions becomes one entry (a softmax-weighted
  sum: no matmul).
- Compressed Sparse Attention (DeepseekV4CSACompressor, m = 4): the compressor projects to two series, 2D wide
  (each entry mixes the previous window's first series with its own second, overlapping windows), and its lightning
  indexer (DeepseekV4Indexer) runs the same compressor at D_I, queries H_I x D_I from the query latent, head
  weights d -> H_I, and scores each query against every closed compressed index key (H_I D_I per pair); the
  attention reads the top k entries. The head weighting is an elementwise product and sum (no matmul).
- A sliding layer has no compressor.

The cache (DeepseekV4HCACache, DeepseekV4CSACache) is piecewise in T, not a fixed amount per token: the raw keys
of the last W - 1 positions (a DynamicSlidingWindowLayer keeps W - 1 between steps; the next query makes W; in a
sliding layer, whose cache is a plain DynamicSlidingWindowLayer, stored twice, as keys and as values), the
T_c compressed entries (D, and D_I of index keys under CSA), the T mod m positions of the window not yet closed
(their kv and gate projections, buffered until it closes), and under CSA the last closed window's first series of
kv and gate, m x (D + D_I) each, the gate in fp32 (it has had the fp32 position bias added): a fixed state.

Saved for the backward pass (what autograd keeps through DeepseekV4Attention, counted as tfcost.core.layers.attention
and mla count: each tensor once, a norm keeping its input; docs/formulas.md, "Training activations"):
    q_down       the layer's normed input (d), read by the query, key-value and compressor projections
    q_down_norm  the query latent (q);  q_up: the normed query latent (q) and its output, the per-head unweighted
                 query norm's input (H D)
    kv_norm      the key-value head (D);  kv: nothing more (its input is q_down's)
    scores       Q (H D) and the normed, rotated key-value head (D: keys = values, one tensor read by QK^T and
                 AV); unfused the softmax output and its dropout mask (H per entry), fused an fp32 log-sum-exp per
                 query row and head;  values: the dropped-out probabilities (H per entry)
    compressed   the T_c entries the keys continue with (D each); unfused their softmax output, dropout mask and
                 dropped-out probabilities (H per query x entry pair: T T_c, computed densely whatever top-k keeps)
    o_groups     its input (H D);  o: its input (g r) and the dropout mask after it (d)
    compressor   HCA: the kv projection's output (D per position, the view the window sums read keeps its whole
                 storage), the fp32 softmax over each closed window and its copy at the model's dtype (m D per
                 entry each); CSA: the two series laid out over each window and its predecessor, the weighted
                 sum's operand (2 m D per entry), and the softmax likewise (2 m D per entry, fp32 and model dtype);
                 both: the norm's input (D per entry)
    indexer      nothing: its only output is the top-k indices, integers with no gradient, so the graph it builds
                 is freed when it returns (DeepseekV4Indexer)
Single key-value head tensors (the latent, the key-value head, the compressor's) are held whole on every
tensor-parallel rank, as MLA's latents are (split only by sequence parallelism); the per-head ones are split.
"""

from __future__ import annotations

from tfcost.core.blocks import Block
from tfcost.core.layers.attention import scores_saves, values_saves
from tfcost.core.layers.mlp import dropout_mask
from tfcost.core.layers.norms import norm_op, norm_vectors
from tfcost.core.ops import Op, Saved, Span
from tfcost.schema import ModelShape

PART = "attention/compressor"


def compressed_attention_ops(shape: ModelShape, block: Block) -> list[Op]:
    """One DeepSeek-V4 attention layer's rows: the mixer kind says which compressor it has (none for
    'shared_kv_sliding')."""
    assert shape.compressed_attention is not None  # the schema guarantees it for these mixers
    c, d, heads, width = shape.compressed_attention, shape.d_model, shape.n_heads, shape.head_dim
    span = Span(block.causal, block.window)
    qkv, o = "attention/qkv", "attention/o"
    latent, query = c.q_lora_rank, heads * width
    # Q and the probabilities as multi-head attention keeps them; the key-value head once (keys = values), whole on
    # every rank, so the K and V widths of scores_saves and values_saves are 0 and it is its own tensor.
    kv_head = Saved("the normed, rotated key-value head (keys = values, read by QK^T and AV)", width, split=False)
    ops = [
        Op("attention/q_down", "linear", d, latent, "token", flops_part=qkv,
           saves=(Saved("input (read by the query, key-value and compressor projections)", d, split=False),)),
        Op("attention/q_down_norm", "norm", latent, norm_vectors(shape), "weights",
           saves=(Saved("input: the query latent", latent, split=False),)),
        Op("attention/q_up", "linear", latent, query, "token", flops_part=qkv,
           saves=(Saved("input: the normed query latent", latent, split=False),
                  Saved("output: the per-head query norm's input", query))),
        Op("attention/kv", "linear", d, width, "token", flops_part=qkv),
        Op("attention/kv_norm", "norm", width, norm_vectors(shape), "weights",
           saves=(Saved("input: the key-value head", width, split=False),)),
        Op("attention/scores", "scores", width, heads, "entry", flops_part="attention/scores", span=span,
           saves=(Saved("Q", query), kv_head, *scores_saves(query, 0, heads)[1:])),
        Op("attention/values", "values", width, heads, "entry", flops_part="attention/values", span=span,
           saves=values_saves(0, heads)[1:]),
        # g blocks of H D/g -> r on the diagonal (DeepseekV4GroupedLinear): every token goes through all g.
        Op("attention/o_groups", "linear", query // c.o_groups, c.o_lora_rank, "token", False,
           c.o_groups, c.o_groups, "attention/o", o, saves=(Saved("input", query),)),
        Op("attention/o", "linear", c.o_groups * c.o_lora_rank, d, "token", flops_part=o,
           saves=(Saved("input: the groups' outputs", c.o_groups * c.o_lora_rank), dropout_mask(d))),
    ]  # fmt: skip
    if shape.attention_sinks:
        ops.append(Op("attention/sinks", "table", heads, 1, "weights"))
    if block.causal:  # W - 1 positions kept (see the module's docstring)
        kept = None if block.window is None else max(block.window - 1, 1)
        # Keys = values: the compressed layers' caches hold one tensor; a sliding layer's DynamicSlidingWindowLayer
        # stores what it is given as keys and as values, two copies.
        copies = 2 if block.mixer == "shared_kv_sliding" else 1
        ops.append(Op("cache/attention", "cache", copies * width, 1, "cached", span=Span(True, kept)))
    if block.mixer == "heavily_compressed":
        ops += compressor_ops(shape, block, c.hca_rate, width, series=1, topk=None)
    elif block.mixer == "compressed_sparse":
        ops += compressor_ops(shape, block, c.csa_rate, width, series=2, topk=c.indexer.topk)
        ops += indexer_ops(shape, block)
    return ops


def compressor_ops(
    shape: ModelShape, block: Block, rate: int, width: int, series: int, topk: int | None, prefix: str = PART
) -> list[Op]:
    """A compressor of `series` x width per position (1 for HCA, 2 overlapping series for CSA and its indexer), its
    cache and state; for the attention's own compressor (prefix PART), the scores and values over its entries, at
    most `topk` per query."""
    d = shape.d_model
    compress = Span(block.causal, compress=rate)
    own = prefix == PART  # the attention's own compressor; the indexer's saves nothing (see the module docstring)
    ops = [
        Op(f"{prefix}/kv", "linear", d, series * width, "token", part=prefix, flops_part=prefix,
           saves=compressor_kv_saves(rate, width, series) * own),
        Op(f"{prefix}/gate", "linear", d, series * width, "token", part=prefix, flops_part=prefix,
           saves=compressor_softmax_saves(rate, width, series) * own),
        Op(f"{prefix}/position_bias", "table", rate, series * width, "weights", part=prefix),
        norm_op(shape, f"{prefix}/norm", width)
        if not own
        else Op(f"{prefix}/norm", "norm", width, norm_vectors(shape), "weights",
                saves=(Saved("input: the window sums", width, "compressed", split=False, compress=rate),)),
    ]  # fmt: skip
    if own:  # the main attention reads the entries beside its raw keys (top k of them under CSA)
        read = Span(block.causal, compress=rate, topk=topk)
        heads, head = shape.n_heads, shape.head_dim
        ops += [
            Op("attention/compressed_scores", "scores", head, heads, "compressed_entry",
               flops_part="attention/scores", span=read, saves=compressed_scores_saves(rate, head, heads)),
            Op("attention/compressed_values", "values", head, heads, "compressed_entry",
               flops_part="attention/values", span=read,
               saves=(Saved("dropped-out probabilities", heads, "compressed_entry", when="unfused_dropout",
                            compress=rate),)),
        ]  # fmt: skip
    if block.causal:
        held = "compressed" if prefix == PART else "indexer"
        ops += [
            Op(f"cache/{held}", "cache", width, 1, "compressed", span=compress),
            # kv and gate of the positions whose window has not closed (buffer_kv, buffer_gate)
            Op(f"cache/{held}_tail", "cache", 2 * series * width, 1, "compressed_tail", span=compress),
        ]
        if series == 2:  # the last closed window's first series, for the next window's overlap (overlap_kv, _gate)
            ops += [
                Op(f"state/{held}_overlap_kv", "state", rate * width, 1, "weights"),
                Op(f"state/{held}_overlap_gate", "state", rate * width, 1, "weights", dtype="fp32"),
            ]
    return ops


def indexer_ops(shape: ModelShape, block: Block) -> list[Op]:
    """CSA's lightning indexer (DeepseekV4Indexer, report §2.3.1): its own compressor at D_I, queries from the query
    latent, head weights, and the H_I x D_I dot products of every query with every closed index key (all of them,
    not top-k: the indexer is what selects). The ReLU, scaling and weighted sum over heads are elementwise."""
    assert shape.compressed_attention is not None
    c, d, part = shape.compressed_attention, shape.d_model, "attention/indexer"
    index = c.indexer
    scored = Span(block.causal, compress=c.csa_rate)
    return [
        *compressor_ops(shape, block, c.csa_rate, index.head_dim, series=2, topk=None, prefix=part),
        Op(f"{part}/q", "linear", c.q_lora_rank, index.n_heads * index.head_dim, "token", part=part, flops_part=part),
        Op(f"{part}/weights", "linear", d, index.n_heads, "token", part=part, flops_part=part),
        Op(f"{part}/scores", "index", index.head_dim, index.n_heads, "compressed_entry", flops_part=part, span=scored),
    ]


def compressor_kv_saves(rate: int, width: int, series: int) -> tuple[Saved, ...]:
    """What the weighted sum over each window keeps of the kv projection: HCA multiplies a view of its output, which
    keeps the whole output alive (width per position); CSA first lays the two series out over each window and its
    predecessor, 2m x width per entry, and multiplies that copy (DeepseekV4CSACompressor's new_kv)."""
    if series == 1:
        return (Saved("output: kv of every position (the window sums read a view of it)", width, split=False),)
    laid_out = "the two series laid out over each window and its predecessor (new_kv)"
    return (Saved(laid_out, 2 * rate * width, "compressed", split=False, compress=rate),)


def compressor_softmax_saves(rate: int, width: int, series: int) -> tuple[Saved, ...]:
    """The softmax over each window of the gate plus the position bias (fp32, with torch.softmax's dtype=float32)
    keeps its output, and the window sum multiplies its copy at the model's dtype: series x m x width per entry
    each (CSA's 2m slots, HCA's m)."""
    per_entry = series * rate * width
    return (
        Saved("softmax over each window, fp32", per_entry, "compressed", "fp32", split=False, compress=rate),
        Saved("the softmax at the model's dtype (the window sum's other operand)", per_entry, "compressed",
              split=False, compress=rate),
    )  # fmt: skip


def compressed_scores_saves(rate: int, width: int, heads: int) -> tuple[Saved, ...]:
    """The keys continue with the compressed entries (the concatenated key-value tensor's tail, width each); over
    them, unfused, the softmax output and its dropout mask per head and query x entry pair, computed densely as
    transformers does before masking. A fused kernel keeps no more than the raw scores row's log-sum-exp."""
    return (
        Saved("the compressed entries the keys continue with (keys = values)", width, "compressed", split=False,
              compress=rate),
        Saved("softmax output", heads, "compressed_entry", when="unfused", compress=rate),
        Saved("attention dropout mask", heads, "compressed_entry", "mask", when="unfused_dropout", compress=rate),
    )  # fmt: skip
