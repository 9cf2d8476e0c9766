"""Parameter counts, as an ordered "group/item" breakdown whose totals are sums of its parts.

Symbols: V vocab, d d_model, L layers, H query heads, K key-value heads, Q head_dim, F d_ff.
Each count is what the Hugging Face implementation allocates (checked in tests/test_truth.py); the lesson's
GPT-2 small sum (attention 4d^2 + 4d, MLP 8d^2 + 5d, two norms 4d) is the special case H*Q = d, K = H.
"""

from __future__ import annotations

from functools import lru_cache

from tfcost.schema import ModelShape


def linear_params(fan_in: int, fan_out: int, bias: bool) -> int:
    """A dense layer: fan_in x fan_out weights plus fan_out biases if it has them."""
    return fan_in * fan_out + (fan_out if bias else 0)


def norm_params(shape: ModelShape) -> int:
    """LayerNorm has a scale and a shift per channel (2d); RMSNorm only a scale (d)."""
    return 2 * shape.d_model if shape.norm == "layernorm" else shape.d_model


@lru_cache(maxsize=4096)
def layer_params(shape: ModelShape) -> dict[str, int]:
    """Parameters of one transformer block, by part (Vaswani et al. 2017 §3; GQA: Ainslie et al. 2023)."""
    d, q_width, kv_width = shape.d_model, shape.n_heads * shape.head_dim, shape.n_kv_heads * shape.head_dim
    b = shape.bias
    gated = shape.mlp == "gated"
    return {
        "attention/q": linear_params(d, q_width, b.qkv),
        "attention/k": linear_params(d, kv_width, b.qkv),
        "attention/v": linear_params(d, kv_width, b.qkv),
        "attention/o": linear_params(q_width, d, b.attn_out),
        "mlp/gate": linear_params(d, shape.d_ff, b.mlp) if gated else 0,
        "mlp/up": linear_params(d, shape.d_ff, b.mlp),
        "mlp/down": linear_params(shape.d_ff, d, b.mlp),
        "norm/attention": norm_params(shape),
        "norm/mlp": norm_params(shape),
    }


def params_per_layer(shape: ModelShape) -> int:
    """All parameters of one block."""
    return sum(layer_params(shape).values())


@lru_cache(maxsize=4096)
def parameter_breakdown(shape: ModelShape) -> dict[str, int]:
    """Whole-model parameters by part; the values sum to the total.

    The output head is a V x d matrix of its own only when it is not tied to the token embedding.
    """
    parts = {
        "embedding/tokens": shape.vocab_size * shape.d_model,
        "embedding/positions": shape.max_seq_len * shape.d_model if shape.position == "learned" else 0,
    }
    parts.update({f"layers/{key}": shape.n_layers * value for key, value in layer_params(shape).items()})
    parts["final_norm"] = norm_params(shape)
    parts["output_head"] = 0 if shape.tied_embeddings else shape.vocab_size * shape.d_model
    return parts


@lru_cache(maxsize=4096)  # sweeps ask for it at every (T, batch) point of the same shape
def total_params(shape: ModelShape) -> int:
    """Every parameter, a tied embedding counted once."""
    return sum(parameter_breakdown(shape).values())


def embedding_params(shape: ModelShape) -> int:
    """Token and position tables plus an untied output head: the V*d and n_ctx*d matrices that Kaplan et al.
    2020 (§2.1) leave out of N."""
    parts = parameter_breakdown(shape)
    return parts["embedding/tokens"] + parts["embedding/positions"] + parts["output_head"]


def non_embedding_params(shape: ModelShape) -> int:
    """N of Kaplan et al. 2020 (§2.1): everything but the embeddings (the blocks and the final norm)."""
    return total_params(shape) - embedding_params(shape)
