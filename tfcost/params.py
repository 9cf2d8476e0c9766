"""Parameter counts, as an ordered "group/item" breakdown whose totals are sums of its parts.

Symbols: V vocab, d d_model, L layers, H query heads, K key-value heads, Q head_dim, F d_ff, E experts, k experts
per token. Each count is what the Hugging Face implementation allocates (checked in tests/test_truth.py); the
lesson's GPT-2 small sum (attention 4d^2 + 4d, MLP 8d^2 + 5d, two norms 4d) is the special case H*Q = d, K = H.
"""

from __future__ import annotations

from functools import lru_cache

from tfcost.blocks import Block, blocks, representative_block
from tfcost.schema import ModelShape


def linear_params(fan_in: int, fan_out: int, bias: bool) -> int:
    """A dense layer: fan_in x fan_out weights plus fan_out biases if it has them."""
    return fan_in * fan_out + (fan_out if bias else 0)


def norm_params(shape: ModelShape, width: int | None = None) -> int:
    """LayerNorm has a scale and a shift per channel (2d); RMSNorm only a scale (d). `width` defaults to d."""
    width = shape.d_model if width is None else width
    return 2 * width if shape.norm == "layernorm" else width


def attention_params(shape: ModelShape) -> dict[str, int]:
    """Self-attention projections (Vaswani et al. 2017 §3.2; GQA: Ainslie et al. 2023), or MLA's low-rank ones
    (DeepSeek-V2 §2.1.2-2.1.3: W^DQ, W^UQ, W^DKV with the shared rotary key W^KR, W^UK and W^UV, W^O)."""
    d, b = shape.d_model, shape.bias
    if shape.mla is not None:
        m, heads = shape.mla, shape.n_heads
        q_width = heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
        parts = (
            {
                "attention/q_down": linear_params(d, m.q_lora_rank, b.qkv),
                "attention/q_down_norm": norm_params(shape, m.q_lora_rank),
                "attention/q_up": linear_params(m.q_lora_rank, q_width, False),
            }
            if m.q_lora_rank is not None
            else {"attention/q": linear_params(d, q_width, False)}
        )
        parts["attention/kv_down"] = linear_params(d, m.kv_lora_rank + m.qk_rope_head_dim, b.qkv)
        parts["attention/kv_down_norm"] = norm_params(shape, m.kv_lora_rank)
        parts["attention/kv_up"] = linear_params(m.kv_lora_rank, heads * (m.qk_nope_head_dim + m.v_head_dim), False)
        parts["attention/o"] = linear_params(heads * m.v_head_dim, d, b.attn_out)
        return parts
    q_width, kv_width = shape.n_heads * shape.head_dim, shape.n_kv_heads * shape.head_dim
    parts = {
        "attention/q": linear_params(d, q_width, b.qkv),
        "attention/k": linear_params(d, kv_width, b.qkv),
        "attention/v": linear_params(d, kv_width, b.qkv),
        "attention/o": linear_params(q_width, d, b.attn_out),
    }
    if shape.qk_norm:
        parts["attention/qk_norm"] = 2 * norm_params(shape, shape.head_dim)
    return parts


def mlp_params(shape: ModelShape, d_ff: int) -> dict[str, int]:
    """One MLP of hidden width d_ff: up and down, plus a gate when gated (GLU variants, Shazeer 2020)."""
    d, bias = shape.d_model, shape.bias.mlp
    return {
        "gate": linear_params(d, d_ff, bias) if shape.mlp == "gated" else 0,
        "up": linear_params(d, d_ff, bias),
        "down": linear_params(d_ff, d, bias),
    }


def expert_params(shape: ModelShape) -> int:
    """One routed expert: an MLP of width expert_d_ff."""
    assert shape.moe is not None
    return sum(mlp_params(shape, shape.moe.expert_d_ff).values())


def moe_params(shape: ModelShape) -> dict[str, int]:
    """An MoE block's MLP: a bias-free d -> E router, E routed experts, the shared experts and their gate."""
    assert shape.moe is not None
    moe, d = shape.moe, shape.d_model
    return {
        "moe/router": linear_params(d, moe.n_experts, False),
        "moe/experts": moe.n_experts * expert_params(shape),
        "moe/shared": moe.n_shared_experts * sum(mlp_params(shape, moe.shared_width).values()),
        "moe/shared_gate": linear_params(d, 1, False) if moe.shared_expert_gate else 0,
    }


def norm_names(count: int) -> list[str]:
    """Names of a block's d-wide norms: before attention and MLP, then any extra ones (Gemma-2's post-norms)."""
    if count == 1:
        return ["norm/input"]
    return ["norm/attention", "norm/mlp"] + ["norm/extra"] * (count - 2)


@lru_cache(maxsize=4096)
def block_params(shape: ModelShape, block: Block) -> dict[str, int]:
    """Parameters of one block, by part."""
    parts = attention_params(shape)
    if block.cross_attention:  # queries from the decoder, keys and values from the encoder output, all d-wide
        parts.update({f"cross_{key}": value for key, value in attention_params(shape).items()})
    if block.moe:
        parts.update(moe_params(shape))
    else:
        parts.update({f"mlp/{key}": value for key, value in mlp_params(shape, shape.d_ff).items()})
    names = norm_names(shape.block_norms) + (["norm/cross_attention"] if block.cross_attention else [])
    for name in names:
        parts[name] = parts.get(name, 0) + norm_params(shape)
    return parts


def representative(shape: ModelShape) -> Block:
    """The block `per_layer` describes (see tfcost.blocks.representative_block)."""
    return representative_block(shape, lambda block: sum(block_params(shape, block).values()))


def layer_params(shape: ModelShape) -> dict[str, int]:
    """Parameters of one transformer block, by part; the most common block of a heterogeneous model."""
    return block_params(shape, representative(shape))


def params_per_layer(shape: ModelShape) -> int:
    """All parameters of one block (the most common one)."""
    return sum(layer_params(shape).values())


def stacks(shape: ModelShape) -> int:
    """Stacks of blocks, each with its own final norm and relative-position table: 2 for encoder-decoder."""
    return 2 if shape.architecture == "encoder-decoder" else 1


def position_params(shape: ModelShape) -> int:
    """A learned n_ctx x d table, or T5's buckets x H relative-position biases, one per stack (Raffel et al.
    2020 §2.1); rotary, ALiBi and sinusoidal positions have no parameters."""
    if shape.position == "learned":
        return shape.max_seq_len * shape.d_model
    if shape.position == "relative":
        assert shape.relative_attention_buckets is not None
        return stacks(shape) * shape.relative_attention_buckets * shape.n_heads
    return 0


@lru_cache(maxsize=4096)
def parameter_breakdown(shape: ModelShape) -> dict[str, int]:
    """Whole-model parameters by part; the values sum to the total.

    The output head is a V x d matrix of its own only when it is not tied to the token embedding.
    """
    d, vocab = shape.d_model, shape.vocab_size
    parts = {
        "embedding/tokens": vocab * d,
        "embedding/positions": position_params(shape),
    }
    if shape.token_types:
        parts["embedding/token_types"] = shape.token_types * d
    if shape.embedding_norm:
        parts["embedding_norm"] = norm_params(shape)
    for block, count in blocks(shape):
        for key, value in block_params(shape, block).items():
            name = f"{block.stack}/{key}"
            parts[name] = parts.get(name, 0) + count * value
    parts["final_norm"] = stacks(shape) * norm_params(shape) if shape.final_norm else 0
    if shape.pooler:
        parts["pooler"] = linear_params(d, d, True)
    if shape.head == "mlm":  # BERT's BertLMPredictionHead: dense + activation + LayerNorm, then the decoder
        parts["mlm_transform"] = linear_params(d, d, True) + norm_params(shape)
    has_head = shape.head != "none"
    parts["output_head"] = vocab * d if has_head and not shape.tied_embeddings else 0
    if shape.head == "mlm":
        parts["output_bias"] = vocab
    return parts


@lru_cache(maxsize=4096)  # sweeps ask for it at every (T, batch) point of the same shape
def total_params(shape: ModelShape) -> int:
    """Every parameter, a tied embedding counted once."""
    return sum(parameter_breakdown(shape).values())


EMBEDDING_PARTS = ("embedding/tokens", "embedding/positions", "embedding/token_types", "output_head", "output_bias")


def embedding_params(shape: ModelShape) -> int:
    """Token, position and token-type tables plus an untied output head (and its V biases): the V*d and n_ctx*d
    matrices that Kaplan et al. 2020 (§2.1) leave out of N."""
    parts = parameter_breakdown(shape)
    return sum(parts.get(name, 0) for name in EMBEDDING_PARTS)


def non_embedding_params(shape: ModelShape) -> int:
    """N of Kaplan et al. 2020 (§2.1): everything but the embeddings (the blocks and the final norm)."""
    return total_params(shape) - embedding_params(shape)


def inactive_params(shape: ModelShape) -> int:
    """Routed experts a token does not use: (E - k) experts in every MoE block; 0 for a dense model."""
    if shape.moe is None:
        return 0
    moe_blocks = sum(count for block, count in blocks(shape) if block.moe)
    return moe_blocks * (shape.moe.n_experts - shape.moe.experts_per_token) * expert_params(shape)


def active_params(shape: ModelShape) -> int:
    """Parameters one token passes through: shared experts, its k routed experts and the router, with everything
    else (torchtitan's and Megatron's "active" count); the total for a dense model."""
    return total_params(shape) - inactive_params(shape)


def active_non_embedding_params(shape: ModelShape) -> int:
    """Active non-embedding parameters: the N that the 6N rule uses for an MoE model."""
    return non_embedding_params(shape) - inactive_params(shape)
