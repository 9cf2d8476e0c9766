"""The reader of DeepSeek-V4 (`deepseek_v4`, issue 11): compressed attention, hyper-connections, MoE in every layer.

What transformers 5.24 builds from a DeepseekV4Config is the reference (tests/test_truth_deepseek_v4.py): per layer
`layer_types` picks the attention (compressed_sparse_attention, heavily_compressed_attention, sliding_attention;
tfcost.core.layers.compressed_attention), every layer has a sliding window of `sliding_window` raw positions and an MoE
of `n_routed_experts` routed experts (top `num_experts_per_tok`) and one shared expert, all `moe_intermediate_size`
wide (`hash_moe` layers route by a token-id table but hold the same router matrix and do the same matmuls), and
`hc_mult` hyper-connection streams (tfcost.core.layers.hyper_connections). The defaults and the legacy keys are those of
DeepseekV4Config.__post_init__. The MTP layers (`num_nextn_predict_layers`) are not built by transformers; they
are counted apart, in params.mtp.
"""

from __future__ import annotations

from typing import Any

from tfcost.readers.families.base import DEEPSEEK_REFUSED, LLAMA_IGNORED, MOE_ROUTING, Family, Fields, causal_lm_head
from tfcost.readers.families.mla import layer_groups, layer_list

LAYER_KINDS = {
    "compressed_sparse_attention": "compressed_sparse",
    "heavily_compressed_attention": "heavily_compressed",
    "sliding_attention": "shared_kv_sliding",
}
LEGACY_RATIOS = {0: "sliding_attention", 4: "compressed_sparse_attention", 128: "heavily_compressed_attention"}
HASH_LAYERS = 3  # DeepseekV4Config.default_num_hash_layers (hash routing changes no count)


def layer_types(fields: Fields, layers: int) -> list[str]:
    """`layer_types`, else the legacy per-layer `compress_ratios` (0, 4 or 128), else the default: two
    heavily-compressed layers, then heavily-compressed and compressed-sparse alternating."""
    kinds = layer_list(fields, "layer_types", layers, tuple(LAYER_KINDS))
    if kinds is not None:
        return kinds
    ratios = fields.list_of("compress_ratios", int, None)
    if ratios is not None:
        if len(ratios) != layers or any(ratio not in LEGACY_RATIOS for ratio in ratios):
            raise fields.wrong("compress_ratios", f"{layers} ratios, each 0, 4 or 128", ratios)
        return [LEGACY_RATIOS[ratio] for ratio in ratios]
    alternating = ["compressed_sparse_attention" if i % 2 else "heavily_compressed_attention" for i in range(layers)]
    return ["heavily_compressed_attention"] * min(layers, 2) + alternating[: max(layers - 2, 0)]


def compress_rates(fields: Fields) -> tuple[int, int]:
    """m and m' (`compress_rates`, or the legacy `compress_rate_csa` / `compress_rate_hca`, which win)."""
    rates = fields.raw("compress_rates", {})
    if not isinstance(rates, dict):
        raise fields.wrong("compress_rates", "a mapping of layer type to rate", rates)
    found = []
    for kind, legacy, default in (
        ("compressed_sparse_attention", "compress_rate_csa", 4),
        ("heavily_compressed_attention", "compress_rate_hca", 128),
    ):
        rate = fields.int(legacy, rates.get(kind, default))
        if type(rate) is not int or rate < 1:
            raise fields.wrong(f"compress_rates.{kind}", "a positive integer", rate)
        found.append(rate)
    return found[0], found[1]


def read_deepseek_v4(fields: Fields) -> dict[str, Any]:
    causal_lm_head(fields)
    # DeepseekV4Attention has one key-value head whatever `num_key_value_heads` says (num_key_value_groups = H).
    fields.read.add("num_key_value_heads")
    layers = fields.int("num_hidden_layers", 43)
    width = fields.int("moe_intermediate_size", 2048)
    if "intermediate_size" in fields.config:  # DeepseekV4Config's alias of moe_intermediate_size
        fields.require("intermediate_size", width, fields.int("intermediate_size"), "an alias of moe_intermediate_size")
    # DeepseekV4SparseMoeBlock builds one shared expert (DeepseekV4MLP) whatever the count says.
    fields.require("n_shared_experts", 1, fields.int("n_shared_experts", 1), "transformers builds one shared expert")
    kinds = layer_types(fields, layers)
    routing = layer_list(fields, "mlp_layer_types", layers, ("hash_moe", "moe"))
    if routing is None:
        fields.int("num_hash_layers", HASH_LAYERS)  # legacy: which layers route by hash, no count
    window = fields.int("sliding_window", 128)
    csa_rate, hca_rate = compress_rates(fields)
    heads = fields.int("num_attention_heads", 64)
    head_dim = fields.int("head_dim", 512)
    streams = fields.int("hc_mult", 4)
    if streams < 1:  # DeepseekV4Model always expands the residual into hc_mult streams
        raise fields.wrong("hc_mult", "a positive integer", streams)
    specs = [{"mixer": LAYER_KINDS[kind], "window": window, "ffn": "moe"} for kind in kinds]
    return {
        "vocab_size": fields.int("vocab_size", 129280),
        "d_model": fields.int("hidden_size", 4096),
        "n_layers": layers,
        "n_heads": heads,
        "n_kv_heads": 1,
        "head_dim": head_dim,
        "d_ff": width,
        "mlp": "gated",
        "norm": "rmsnorm",
        "tied_embeddings": fields.bool("tie_word_embeddings", False),
        "position": "rotary",
        "max_seq_len": fields.int("max_position_embeddings", 1048576),
        "attention_sinks": True,
        "moe": {
            "n_experts": fields.int("n_routed_experts", 256),
            "experts_per_token": fields.int("num_experts_per_tok", 6),
            "expert_d_ff": width,
            "n_shared_experts": 1,
        },
        "compressed_attention": {
            "q_lora_rank": fields.int("q_lora_rank", 1024),
            "o_groups": fields.int("o_groups", 8),
            "o_lora_rank": fields.int("o_lora_rank", 1024),
            "csa_rate": csa_rate,
            "hca_rate": hca_rate,
            "indexer": {
                "n_heads": fields.int("index_n_heads", 64),
                "head_dim": fields.int("index_head_dim", 128),
                "topk": fields.int("index_topk", 512),
            },
        },
        "hyper_connections": streams,
        "hyper_connection_sinkhorn_iters": fields.int("hc_sinkhorn_iters", 20),
        "mtp_layers": fields.int("num_nextn_predict_layers", 1),
        "layers": layer_groups(specs),
    }


# Keys that change no count: routing and its scoring, the SwiGLU clamp, rotary bases and the rotary share (the
# derived qk_rope_head_dim among them), and `attention_bias`, which DeepseekV4Attention
# does not read (its projections have no bias).
DEEPSEEK_V4_IGNORED = (
    LLAMA_IGNORED
    | MOE_ROUTING
    | {
        "scoring_func", "routed_scaling_factor", "swiglu_limit", "compress_rope_theta", "qk_rope_head_dim",
        "hc_eps", "attention_bias", "expert_dtype",
    }
)  # fmt: skip

FAMILIES: dict[str, Family] = {
    "deepseek_v4": Family(
        read_deepseek_v4,
        frozenset(DEEPSEEK_V4_IGNORED),
        # DeepseekV4MLP (the shared expert) takes `mlp_bias`; the routed experts never have biases.
        refused=tuple(refusal for refusal in DEEPSEEK_REFUSED if refusal.key == "mlp_bias"),
    ),
}
