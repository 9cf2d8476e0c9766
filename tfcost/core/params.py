"""Parameter counts, as an ordered "group/item" breakdown whose totals are sums of its parts.

Symbols: V vocab, d d_model, L layers, H query heads, K key-value heads, Q head_dim, F d_ff, E experts, k experts
per token. Each count is what the Hugging Face implementation allocates (checked in tests/test_truth.py); the
lesson's GPT-2 small sum (attention 4d^2 + 4d, MLP 8d^2 + 5d, two norms 4d) is the special case H*Q = d, K = H.
"""

from __future__ import annotations

from functools import lru_cache

from tfcost.core.blocks import Block, blocks, representative_block
from tfcost.core.layers import embedding_ops, head_ops, layer_ops, mtp_ops
from tfcost.core.layers.towers import tower_params_by_part
from tfcost.core.ops import Op, op_inactive_params, op_params
from tfcost.schema import ModelShape


def linear_params(fan_in: int, fan_out: int, bias: bool) -> int:
    """A dense layer: fan_in x fan_out weights plus fan_out biases if it has them."""
    return op_params(Op("linear", "linear", fan_in, fan_out, "token", bias))


def params_by_part(ops: tuple[Op, ...] | list[Op]) -> dict[str, int]:
    """The parameter fold: each row's parameters, summed by breakdown key, in the order the rows come."""
    parts: dict[str, int] = {}
    for op in ops:
        if op.kind in ("linear", "norm", "table"):
            parts[op.params_key] = parts.get(op.params_key, 0) + op_params(op)
    return parts


@lru_cache(maxsize=4096)
def block_params(shape: ModelShape, block: Block) -> dict[str, int]:
    """Parameters of one block, by part."""
    return params_by_part(layer_ops(shape, block))


def representative(shape: ModelShape) -> Block:
    """The block `per_layer` describes (see tfcost.core.blocks.representative_block)."""
    return representative_block(shape, lambda block: sum(block_params(shape, block).values()))


def layer_params(shape: ModelShape) -> dict[str, int]:
    """Parameters of one transformer block, by part; the most common block of a heterogeneous model."""
    return block_params(shape, representative(shape))


@lru_cache(maxsize=4096)  # `tfcost plan train` asks for it in every ZeRO-3 layout's memory
def params_per_layer(shape: ModelShape) -> int:
    """All parameters of one block (the most common one)."""
    return sum(layer_params(shape).values())


def position_params(shape: ModelShape) -> int:
    """Parameters of the position table (tfcost.core.layers.position_table)."""
    return parameter_breakdown(shape)["embedding/positions"]


@lru_cache(maxsize=4096)
def parameter_breakdown(shape: ModelShape) -> dict[str, int]:
    """Whole-model parameters by part; the values sum to the total. Layers are keyed "<stack>/<part>"."""
    parts = params_by_part(embedding_ops(shape))
    for block, count in blocks(shape):
        for key, value in block_params(shape, block).items():
            name = f"{block.stack}/{key}"
            parts[name] = parts.get(name, 0) + count * value
    parts.update(params_by_part(head_ops(shape)))
    for tower in shape.towers:  # a multimodal model's vision and audio towers, after the language model
        parts.update({f"towers/{name}": count for name, count in tower_params_by_part(tower).items()})
    return parts


def language_model_params(shape: ModelShape) -> int:
    """The language model alone: the total less any vision and audio towers (transformers' *ForCausalLM of a
    multimodal wrapper's text_config)."""
    return total_params(shape) - towers_params(shape)


def towers_params(shape: ModelShape) -> int:
    """Parameters of the vision and audio towers (0 for a text-only model): in the total, held in memory, but no
    text token passes through them, so they are neither active per token nor in N."""
    return sum(count for name, count in parameter_breakdown(shape).items() if name.startswith("towers/"))


@lru_cache(maxsize=4096)
def params_by_layer_kind(shape: ModelShape) -> dict[str, int]:
    """Parameters of all layers of each kind (count x one layer), keyed by the kind's name."""
    return {block.name: count * sum(block_params(shape, block).values()) for block, count in blocks(shape)}


def expert_params(shape: ModelShape) -> int:
    """One routed expert: its gate, up and down rows' weights, one copy (0 for a dense model)."""
    if shape.moe is None:
        return 0
    moe_block = next(block for block, _ in blocks(shape) if block.moe)
    rows = [op for op in layer_ops(shape, moe_block) if op.params_key == "moe/experts"]
    return sum(op_params(op) // op.copies for op in rows if op.copies)


def mtp_params(shape: ModelShape) -> int:
    """Parameters of the multi-token-prediction modules, outside the total (tfcost.core.layers.mtp_ops)."""
    return shape.mtp_layers * sum(op_params(op) for op in mtp_ops(shape))


@lru_cache(maxsize=4096)  # sweeps ask for it at every (T, batch) point of the same shape
def total_params(shape: ModelShape) -> int:
    """Every parameter, a tied embedding counted once."""
    return sum(parameter_breakdown(shape).values())


# Gemma 3n/4's per-layer token table is a lookup too (its d -> L p projection is a matmul, and stays in N).
EMBEDDING_PARTS = (
    "embedding/tokens", "embedding/positions", "embedding/token_types", "embedding/per_layer", "output_head",
    "output_bias",
)  # fmt: skip


def embedding_params(shape: ModelShape) -> int:
    """Token, position, token-type and per-layer tables plus an untied output head (and its V biases): the V*d and
    n_ctx*d matrices that Kaplan et al. 2020 (§2.1) leave out of N."""
    parts = parameter_breakdown(shape)
    return sum(parts.get(name, 0) for name in EMBEDDING_PARTS)


def non_embedding_params(shape: ModelShape) -> int:
    """N of Kaplan et al. 2020 (§2.1): everything but the embeddings (the blocks and the final norm), and the
    language model's only: a multimodal model's towers run per image, not per token."""
    return total_params(shape) - embedding_params(shape) - towers_params(shape)


def inactive_params(shape: ModelShape) -> int:
    """Routed experts a token does not use: (E - k) experts in every MoE block; 0 for a dense model."""
    return sum(count * sum(map(op_inactive_params, layer_ops(shape, block))) for block, count in blocks(shape))


def active_params(shape: ModelShape) -> int:
    """Parameters one token passes through: shared experts, its k routed experts and the router, with everything
    else (torchtitan's and Megatron's "active" count); the total for a dense text-only model. A multimodal
    model's towers are not on a text token's path: they are left out."""
    return total_params(shape) - inactive_params(shape) - towers_params(shape)


def active_non_embedding_params(shape: ModelShape) -> int:
    """Active non-embedding parameters: the N that the 6N rule uses for an MoE model."""
    return non_embedding_params(shape) - inactive_params(shape)


# What a token only looks up a row of: the input tables. An untied output head is a matmul over all of it.
INPUT_TABLES = ("embedding/tokens", "embedding/positions", "embedding/token_types", "embedding/per_layer")


def active_params_less_input_embeddings(shape: ModelShape) -> int:
    """Active parameters as model cards count them: active_params less the input embedding tables (token,
    position, token-type and per-layer tables), of which a token reads one row. The output head stays in, a
    matmul over the whole vocabulary; a tied table is that head, so it stays in too.

    The gpt-oss model card's convention (OpenAI 2025, "gpt-oss-120b & gpt-oss-20b Model Card", arXiv:2508.10925:
    gpt-oss-20b 20.9B total, 3.6B active; gpt-oss-120b 116.8B, 5.1B active): tfcost's 4.19 B and 5.71 B active
    less their 0.58 B token table are 3.61 B and 5.13 B. DeepSeek-V3's card counts its 37B activated with the
    embeddings (active_params, 37.55 B); both are reported."""
    parts = parameter_breakdown(shape)
    tables = [name for name in INPUT_TABLES if not (name == "embedding/tokens" and shape.tied_embeddings)]
    return active_params(shape) - sum(parts.get(name, 0) for name in tables)
