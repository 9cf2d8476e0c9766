"""Operation tables: every layer kind, the embeddings and the head as lists of `tfcost.core.ops.Op` rows.

A layer is a mixer and an FFN, each a small module returning its rows; a model's costs are folds over them
(tfcost.core.params, tfcost.core.flops, tfcost.core.memory). Adding a kind is one module plus one entry here (and the
reader
that writes it into a `layers:` stack); a kind with no entry is an error naming it, never a silent zero.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from tfcost.core.blocks import Block, blocks
from tfcost.core.layers.altup import altup_embedding_ops, altup_head_ops, altup_layer_ops
from tfcost.core.layers.attention import attention_ops
from tfcost.core.layers.compressed_attention import compressed_attention_ops
from tfcost.core.layers.gated_deltanet import gated_deltanet_ops, kda_ops
from tfcost.core.layers.hyper_connections import hyper_connection_ops, hyper_head_ops
from tfcost.core.layers.lightning import lightning_ops
from tfcost.core.layers.mamba import mamba_ops
from tfcost.core.layers.mamba2 import mamba2_ops
from tfcost.core.layers.mla import mla_ops
from tfcost.core.layers.mlp import mlp_ops
from tfcost.core.layers.moe import mlp_and_moe_ops, moe_ops
from tfcost.core.layers.norms import block_norm_names, norm_op
from tfcost.core.layers.shared_transformer import shared_transformer_ops
from tfcost.core.layers.short_conv import short_conv_ops
from tfcost.core.ops import Op, Saved
from tfcost.errors import TfcostError
from tfcost.schema import ModelShape

OpTable = Callable[[ModelShape, Block], list[Op]]


# Token mixers. A recurrent or linear-attention kind (Gated DeltaNet, Mamba-2) returns `state` rows (elements per
# sequence) in place of `cache` rows, and its matmuls as `linear` rows.
def no_ops(shape: ModelShape, block: Block) -> list[Op]:
    """A layer without this part: Nemotron-H's FFN-only and mixer-only layers, Mamba's FFN-less blocks."""
    return []


def attention_and_mamba2_ops(shape: ModelShape, block: Block) -> list[Op]:
    """Falcon-H1 (arXiv:2507.22448 §2): attention and a Mamba-2 mixer side by side on the same normed input."""
    return attention_ops(shape, block) + mamba2_ops(shape, block)


MIXERS: dict[str, OpTable] = {
    "attention": attention_ops,
    "mla": mla_ops,
    "mla_shared_topk": lambda shape, block: mla_ops(shape, block, own_indexer=False),
    "none": no_ops,
    "mamba": mamba_ops,
    "mamba2": mamba2_ops,
    "attention+mamba2": attention_and_mamba2_ops,
    "shared_transformer+mamba2": shared_transformer_ops,
}
FFNS: dict[str, OpTable] = {"mlp": mlp_ops, "moe": moe_ops, "mlp+moe": mlp_and_moe_ops, "none": no_ops}
MIXERS.update(
    {"gated_deltanet": gated_deltanet_ops, "kda": kda_ops, "lightning": lightning_ops, "short_conv": short_conv_ops}
)
# DeepSeek-V4's three attention kinds: one module, the mixer kind picks the compressor.
MIXERS.update(dict.fromkeys(("compressed_sparse", "heavily_compressed", "shared_kv_sliding"), compressed_attention_ops))


def table_of(registry: dict[str, OpTable], role: str, kind: str) -> OpTable:
    """The module for a kind, or an error naming it."""
    if kind not in registry:
        raise TfcostError(f"{role} kind '{kind}' is not covered by tfcost's core (covered: {', '.join(registry)})")
    return registry[kind]


@lru_cache(maxsize=16)
def shape_tables(shape: ModelShape) -> dict[Block, tuple[Op, ...]]:
    """The operation tables of a shape's blocks, each built once (layer_ops fills it). One dictionary per shape,
    the last 16 shapes kept: a single cache of (shape, block) pairs of bounded size was swept end to end by every
    pass over a stack with more distinct blocks than it held (5,000 sliding windows against 4,096 entries), so
    every look-up missed and each pass rebuilt every table."""
    return {}


# The tables of the shape objects asked about last, by identity: equal shapes that are distinct objects (a copy
# made along the way) would otherwise be compared field by field on every look-up, a pass over every layer of a
# `layers:` stack each time. Each entry holds its shape, so no id is reused while it is here.
RECENT_SHAPES: dict[int, tuple[ModelShape, dict[Block, tuple[Op, ...]]]] = {}


def layer_ops(shape: ModelShape, block: Block) -> tuple[Op, ...]:
    """One layer's operation table: its mixer, cross-attention (encoder-decoder decoders), its FFN, its norms, and
    the hyper-connections around them where the model has them."""
    recent = RECENT_SHAPES.get(id(shape))
    if recent is not None and recent[0] is shape:
        tables = recent[1]
    else:
        tables = shape_tables(shape)
        if len(RECENT_SHAPES) >= 16:
            RECENT_SHAPES.pop(next(iter(RECENT_SHAPES)))
        RECENT_SHAPES[id(shape)] = (shape, tables)
    found = tables.get(block)
    if found is None:
        found = tables[block] = build_layer_ops(shape, block)
    return found


def build_layer_ops(shape: ModelShape, block: Block) -> tuple[Op, ...]:
    """layer_ops, uncached."""
    ops = table_of(MIXERS, "mixer", block.mixer)(shape, block)
    if block.cross_attention:  # queries from the decoder, keys and values from the encoder output
        ops += attention_ops(shape, block, prefix="cross_attention", cross=True)
    ops += table_of(FFNS, "ffn", block.ffn)(shape, block)
    names = block_norm_names(shape.block_norms) + (["norm/cross_attention"] if block.cross_attention else [])
    # Every norm keeps its input (Korthikanti et al. 2022 §4.1): those before the mixer and the FFN, the
    # cross-attention's, and the post-norms on the mixer's and the FFN's outputs (Gemma 2/3, GLM-4: "norm/extra").
    ops += [norm_op(shape, name, saves_input=1) for name in names]
    return tuple(ops) + altup_layer_ops(shape) + per_layer_input_ops(shape) + hyper_connection_ops(shape, block)


def per_layer_input_ops(shape: ModelShape) -> tuple[Op, ...]:
    """Gemma 3n/4's per-layer embeddings, inside each layer: a d -> p gate on the hidden state, multiplied by the
    layer's p-wide slice of the per-layer input, a p -> d projection and a norm (Gemma3nTextDecoderLayer)."""
    width, d = shape.per_layer_embedding_dim, shape.d_model
    if not width:
        return ()
    # Saved: the gate's input (d), the activation's input and the per-layer input it multiplies (p each), the
    # projection's input (p) and the norm's input (d).
    return (
        Op("per_layer/gate", "linear", d, width, "token", flops_part="per_layer",
           saves=(Saved("input", d, split=False), Saved("activation input and per-layer input", 2 * width))),
        Op("per_layer/projection", "linear", width, d, "token", flops_part="per_layer", saves=(Saved("input", width),)),
        norm_op(shape, "per_layer/norm", saves_input=1),
    )  # fmt: skip


def stacks(shape: ModelShape) -> int:
    """Stacks of blocks, each with its own final norm and relative-position table: 2 for encoder-decoder."""
    return 2 if shape.architecture == "encoder-decoder" else 1


def position_table(shape: ModelShape) -> Op:
    """A learned n_ctx x d table, or T5's buckets x H relative-position biases, one per stack (Raffel et al.
    2020 §2.1); rotary, ALiBi and sinusoidal positions have no parameters."""
    if shape.position == "learned":
        rows = shape.max_seq_len + shape.position_offset  # OPT's table starts 2 rows early
        return Op("embedding/positions", "table", rows, shape.d_model, "weights")
    if shape.position == "relative":
        assert shape.relative_attention_buckets is not None
        buckets = shape.relative_attention_buckets
        return Op("embedding/positions", "table", buckets, shape.n_heads, "weights", copies=stacks(shape))
    return Op("embedding/positions", "table", 0, shape.d_model, "weights")


@lru_cache(maxsize=4096)
def embedding_ops(shape: ModelShape) -> tuple[Op, ...]:
    """Rows before the first layer: token, position and token-type tables, BERT's embedding norm."""
    d = shape.d_model
    ops = [Op("embedding/tokens", "table", shape.vocab_size, d, "weights"), position_table(shape)]
    if shape.token_types:
        ops.append(Op("embedding/token_types", "table", shape.token_types, d, "weights"))
    if shape.embedding_norm:
        ops.append(norm_op(shape, "embedding_norm"))
    return tuple(ops) + per_layer_embedding_ops(shape) + altup_embedding_ops(shape)


def per_layer_embedding_ops(shape: ModelShape) -> tuple[Op, ...]:
    """Gemma 3n/4's per-layer embeddings (Gemma3nTextModel.get_per_layer_inputs, project_per_layer_inputs): a
    V_p x (L p) token table (a lookup: no FLOPs), plus a d -> L p projection of the token embeddings and a p-wide norm;
    the two are added and each layer takes its p-wide slice."""
    width = shape.per_layer_embedding_dim
    if not width:
        return ()
    packed = shape.n_layers * width
    vocab = shape.per_layer_embedding_vocab or shape.vocab_size
    return (
        Op("embedding/per_layer", "table", vocab, packed, "weights"),
        Op("embedding/per_layer_projection", "linear", shape.d_model, packed, "token", flops_part="per_layer"),
        norm_op(shape, "embedding/per_layer_norm", width),
    )


@lru_cache(maxsize=4096)
def head_ops(shape: ModelShape) -> tuple[Op, ...]:
    """Rows after the last layer: final norm(s), pooler, BERT's MLM transform, the V x d output head (no copies
    of its own when tied to the token embedding, but its matmul is still done) and its V biases."""
    d, vocab, head = shape.d_model, shape.vocab_size, shape.head
    ops = [
        *altup_head_ops(shape),
        *hyper_head_ops(shape),
        norm_op(shape, "final_norm", copies=stacks(shape) if shape.final_norm else 0),
    ]
    if shape.pooler:  # the first token of the sequence only
        ops.append(Op("pooler", "linear", d, d, "sequence", True, flops_part="pooler"))
    if head == "mlm":  # BertLMPredictionHead: dense + activation + LayerNorm, then the decoder
        ops.append(Op("mlm_transform", "linear", d, d, "token", True, flops_part="mlm_transform"))
        ops.append(norm_op(shape, "mlm_transform"))
    if head == "none":
        ops.append(Op("output_head", "linear", d, vocab, "token", copies=0, uses=0))
    else:
        copies = 0 if shape.tied_embeddings else 1
        ops.append(Op("output_head", "linear", d, vocab, "token", copies=copies, flops_part="output_head"))
    if head == "mlm" or shape.head_bias:  # BERT's decoder bias, or an lm_head built with bias=True
        ops.append(Op("output_bias", "table", vocab, 1, "weights"))
    return tuple(ops)


@lru_cache(maxsize=4096)
def mtp_ops(shape: ModelShape) -> tuple[Op, ...]:
    """One multi-token-prediction module (DeepSeek-V3, arXiv:2412.19437 §2.2): RMSNorms on the hidden state and on
    the next token's embedding, a 2d -> d projection, one more block (the kind of the stack's last layer) and a
    norm before the shared head. The embedding and head are the main model's and are not counted again."""
    if not shape.mtp_layers:
        return ()
    d = shape.d_model
    last = blocks(shape)[-1][0]
    # Saved: the three norms' inputs (the hidden state, the embedding, the block's output before the head) and the
    # projection's input, the two normed halves concatenated (2d); the block saves what a layer of its kind saves.
    ops = [
        norm_op(shape, "mtp/norms", copies=3, saves_input=3),
        Op("mtp/projection", "linear", 2 * d, d, "token", flops_part="mtp/projection",
           saves=(Saved("input: the normed hidden state and embedding", 2 * d, split=False),)),
    ]  # fmt: skip
    return tuple(ops) + layer_ops(shape, last)
