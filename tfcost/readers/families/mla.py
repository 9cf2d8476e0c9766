"""Readers of the MLA families of 2025-26 (issue 11): DeepSeek-V3's layer with other sizes (GLM-4.7-Flash), with
DeepSeek Sparse Attention's indexer (DeepSeek-V3.2, GLM-5), and Kimi-K2's relabelled DeepSeek-V3 config.

Each is a `Family` row of FAMILIES, registered by one line at the bottom of tfcost.readers.hf_config. What transformers
5.24 builds is the reference (tests/test_truth_mla.py): class defaults where a config leaves a key out, the
per-layer lists (`mlp_layer_types`, `layer_types`, `indexer_types`) over the counts they replace.
"""

from __future__ import annotations

from typing import Any

from tfcost.errors import TfcostError
from tfcost.readers.families.base import (
    DEEPSEEK_REFUSED,
    DEEPSEEK_ROUTING,
    LLAMA_IGNORED,
    Family,
    Fields,
    Reader,
    causal_lm_head,
    read_deepseek,
)
from tfcost.readers.families.base import (
    FAMILIES as BASE_FAMILIES,
)


def layer_list(fields: Fields, key: str, layers: int, allowed: tuple[str, ...]) -> list[str] | None:
    """A per-layer list of kinds (`mlp_layer_types`, `layer_types`, `indexer_types`), or None when absent."""
    kinds = fields.list_of(key, str, None)
    if kinds is None:
        return None
    if len(kinds) != layers:
        raise TfcostError(f"{fields.model_type} config: field '{key}' has {len(kinds)} entries for {layers} layers")
    for kind in kinds:
        if kind not in allowed:
            raise TfcostError(
                f"{fields.model_type} config: '{kind}' in '{key}' is not supported ({', '.join(allowed)} are)"
            )
    return kinds


def read_mla_moe(fields: Fields, *, q_lora_default: int, first_dense_default: int | None) -> dict[str, Any]:
    """DeepSeek-V3's decoder (MLA, then a dense MLP or routed + shared experts) as transformers 5.24's newer
    classes build it: the dense layers are those `mlp_layer_types` calls "dense", else the first
    `first_k_dense_replace` (Glm4MoeLite has no such field: its first layer only). The MTP layers
    (`num_nextn_predict_layers`) are not built by transformers; they are counted apart, in params.mtp."""
    shape = read_deepseek(fields, first_dense_default=first_dense_default or 1)
    layers = shape["n_layers"]
    shape["mla"]["q_lora_rank"] = fields.nullable_int("q_lora_rank", q_lora_default)
    kinds = layer_list(fields, "mlp_layer_types", layers, ("dense", "sparse"))
    if kinds is None and first_dense_default is None:
        kinds = ["dense"] + ["sparse"] * (layers - 1)
    if first_dense_default is None and "first_k_dense_replace" in fields.config:
        # Not a Glm4MoeLiteConfig field: transformers ignores it, so it must agree with the layers built.
        leading = next((i for i, kind in enumerate(kinds or []) if kind != "dense"), layers)
        value = fields.int("first_k_dense_replace")
        fields.require(
            "first_k_dense_replace", leading, value, "transformers builds the dense layers mlp_layer_types says"
        )
    if kinds is not None:
        shape["moe"]["dense_layers"] = [i for i, kind in enumerate(kinds) if kind == "dense"]
    if len(shape["moe"]["dense_layers"]) == layers:  # no sparse layer: the expert sizes are unused
        del shape["moe"]
    shape["mtp_layers"] = fields.int("num_nextn_predict_layers", 0)
    return shape


def indexer(fields: Fields, n_heads: int) -> dict[str, Any]:
    """DSA's lightning indexer sizes (DeepseekV32Config / GlmMoeDsaConfig defaults)."""
    return {
        "n_heads": fields.int("index_n_heads", n_heads),
        "head_dim": fields.int("index_head_dim", 128),
        "topk": fields.int("index_topk", 2048),
    }


def check_indexed(fields: Fields, layers: int) -> None:
    """Every layer of these classes is an "indexed_attention" layer; another kind is a model not built here."""
    layer_list(fields, "layer_types", layers, ("indexed_attention",))


def read_deepseek_v32(fields: Fields) -> dict[str, Any]:
    """DeepSeek-V3.2: DeepSeek-V3 with DSA's indexer in every layer (arXiv:2512.02556)."""
    shape = read_mla_moe(fields, q_lora_default=1536, first_dense_default=3)
    check_indexed(fields, shape["n_layers"])
    shape["mla"]["indexer"] = indexer(fields, 64)
    if shape["mla"]["q_lora_rank"] is None:
        raise TfcostError("deepseek_v32 config: field 'q_lora_rank' must be set: the indexer's queries use it")
    return shape


def glm_indexer_types(fields: Fields, layers: int) -> list[str]:
    """GlmMoeDsaConfig.__post_init__: `indexer_types`, else `index_topk_pattern` ("F"ull / "S"hared letters or a
    list), else every `index_topk_freq`-th layer from `index_skip_topk_offset` on runs its own indexer."""
    kinds = layer_list(fields, "indexer_types", layers, ("full", "shared"))
    if kinds is not None:
        return kinds
    pattern = fields.raw("index_topk_pattern", None)
    if isinstance(pattern, str):
        letters = {"F": "full", "S": "shared"}
        if len(pattern) != layers or any(letter not in letters for letter in pattern):
            raise fields.wrong("index_topk_pattern", f"{layers} letters F or S", pattern)
        return [letters[letter] for letter in pattern]
    if pattern is not None:
        kinds = layer_list(fields, "index_topk_pattern", layers, ("full", "shared"))
        assert kinds is not None
        return kinds
    freq = max(fields.int("index_topk_freq", 1), 1)
    offset = fields.int("index_skip_topk_offset", 2)
    return ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(layers)]


def layer_groups(specs: list[dict[str, str]], longest: int = 8) -> list[dict[str, Any]]:
    """A per-layer list written compactly: from each position, the pattern of at most `longest` layers whose
    repeats cover the most layers (GLM-5.1's "shared, shared, shared, full" x 18 is one group)."""
    groups: list[dict[str, Any]] = []
    start = 0
    while start < len(specs):
        period, repeat = 1, 1
        for length in range(1, min(longest, len(specs) - start) + 1):
            pattern = specs[start : start + length]
            count = 1
            while specs[start + count * length : start + (count + 1) * length] == pattern:
                count += 1
            if count > 1 and count * length > period * repeat:
                period, repeat = length, count
        groups.append({"pattern": specs[start : start + period], "repeat": repeat})
        start += period * repeat
    return groups


def read_glm_moe_dsa(fields: Fields) -> dict[str, Any]:
    """GLM-5: DeepSeek-V3.2's layer with GLM sizes; a layer whose `indexer_types` entry is "shared" has no
    indexer and reuses the previous layer's top-k selection (IndexCache, arXiv:2603.12201)."""
    shape = read_mla_moe(fields, q_lora_default=2048, first_dense_default=3)
    layers = shape["n_layers"]
    check_indexed(fields, layers)
    shape["mla"]["indexer"] = indexer(fields, 32)
    if shape["mla"]["q_lora_rank"] is None:
        raise TfcostError("glm_moe_dsa config: field 'q_lora_rank' must be set: the indexer's queries use it")
    kinds = glm_indexer_types(fields, layers)
    if kinds[0] != "full":
        raise TfcostError("glm_moe_dsa config: the first layer must run its own indexer ('full' in indexer_types)")
    if "shared" in kinds:  # a stack of layers whose mixers differ: written group by group
        dense = set(shape["moe"]["dense_layers"]) if "moe" in shape else set(range(layers))
        specs = [
            {"mixer": "mla" if kind == "full" else "mla_shared_topk", "ffn": "dense" if i in dense else "moe"}
            for i, kind in enumerate(kinds)
        ]
        shape["layers"] = layer_groups(specs)
        if "moe" in shape:
            shape["moe"]["dense_layers"] = []
    return shape


def read_glm4_moe_lite(fields: Fields) -> dict[str, Any]:
    """GLM-4.7-Flash: DeepSeek-V3's layer with other sizes. `head_dim` is Glm4MoeLiteConfig's alias of
    qk_rope_head_dim."""
    shape = read_mla_moe(fields, q_lora_default=768, first_dense_default=None)
    rope = shape["mla"]["qk_rope_head_dim"]
    fields.require("head_dim", rope, fields.int("head_dim", rope), "it is an alias of qk_rope_head_dim")
    return shape


def read_longcat_flash(fields: Fields) -> dict[str, Any]:
    """LongCat-Flash (Meituan 2025, arXiv:2509.01322): each of `num_layers` layers is two sublayers, each an MLA
    attention (always a low-rank query) and a dense SwiGLU of `ffn_hidden_size`, plus one shortcut-connected MoE
    (ScMoE) that reads the first sublayer's MLP input. tfcost writes it as 2 x num_layers MLA layers, the first of
    each pair an MoE layer whose always-on "shared expert" is that sublayer's dense MLP (same input, same matmuls,
    outputs summed into the residual), the second a dense one. The router scores `n_routed_experts` +
    `zero_expert_num` experts; a zero (identity) expert costs nothing, so a token's FLOPs depend on how many of its
    `moe_topk` picks are real: tfcost counts all k real, the most (the card: 18.6B-31.3B active, ~27B on average).
    transformers 5.24 allocates gate_up_proj for the zero experts too (LongcatFlashExperts: [E + Z, 2F, d]), which
    the checkpoint does not hold: tfcost counts the real experts (tests/test_truth_mla.py states the difference)."""
    causal_lm_head(fields)
    pairs = fields.int("num_layers")
    if "num_hidden_layers" in fields.config:  # LongcatFlashConfig's setter: num_layers = num_hidden_layers // 2
        fields.require("num_hidden_layers", 2 * pairs, fields.int("num_hidden_layers"), "it is 2 x num_layers")
    fields.read.add("num_key_value_heads")  # MLA rebuilds keys and values for every query head
    heads = fields.int("num_attention_heads")
    nope, rope = fields.int("qk_nope_head_dim", 128), fields.int("qk_rope_head_dim", 64)
    fields.require("qk_head_dim", nope + rope, fields.int("qk_head_dim", nope + rope), "qk_nope + qk_rope")
    fields.require("zero_expert_type", "identity", fields.text("zero_expert_type", "identity"), "identity only")
    fields.require("attention_method", "MLA", fields.text("attention_method", "MLA"), "MLA only")
    for key in ("mla_scale_q_lora", "mla_scale_kv_lora"):  # transformers always applies the (free) LoRA scaling
        fields.require(key, True, fields.bool(key, True), "transformers always scales")
    bias = fields.bool("attention_bias", False)
    width = fields.int("ffn_hidden_size", 12288)
    return {
        "vocab_size": fields.int("vocab_size", 131072),
        "d_model": fields.int("hidden_size", 6144),
        "n_layers": 2 * pairs,
        "n_heads": heads,
        "n_kv_heads": heads,
        "head_dim": nope + rope,
        "d_ff": width,
        "mlp": "gated",
        "norm": "rmsnorm",
        "bias": {"qkv": bias, "attn_out": bias, "mlp": False},
        "tied_embeddings": fields.bool("tie_word_embeddings", False),
        "position": "rotary",
        "max_seq_len": fields.int("max_position_embeddings", 131072),
        "moe": {
            "n_experts": fields.int("n_routed_experts", 512),
            "experts_per_token": fields.int("moe_topk", 12),
            "expert_d_ff": fields.int("expert_ffn_hidden_size", 2048),
            "n_shared_experts": 1,
            "shared_expert_d_ff": width,
            "n_zero_experts": fields.int("zero_expert_num", 256),
            "router_bias": fields.bool("router_bias", False),
        },
        "mla": {
            "q_lora_rank": fields.int("q_lora_rank", 1536),
            "kv_lora_rank": fields.int("kv_lora_rank", 512),
            "qk_nope_head_dim": nope,
            "qk_rope_head_dim": rope,
            "v_head_dim": fields.int("v_head_dim", 128),
        },
        "layers": [{"pattern": [{"mixer": "mla", "ffn": "moe"}, {"mixer": "mla", "ffn": "dense"}], "repeat": pairs}],
    }


# Keys these classes write that change no count: DSA's rotary layout, MoE routing, the derived head_dim.
MLA_IGNORED = LLAMA_IGNORED | DEEPSEEK_ROUTING


def family(read: Reader) -> Family:
    return Family(read, MLA_IGNORED, refused=DEEPSEEK_REFUSED)


FAMILIES: dict[str, Family] = {
    "deepseek_v32": family(read_deepseek_v32),
    "glm_moe_dsa": family(read_glm_moe_dsa),
    "glm4_moe_lite": family(read_glm4_moe_lite),
    # `head_dim` sizes only the rotary table (qk_rope_head_dim's width in the published config).
    "longcat_flash": Family(read_longcat_flash, MLA_IGNORED | {"head_dim"}),
    # Kimi-K2 ships DeepSeek-V3's architecture (`architectures` DeepseekV3ForCausalLM, DeepSeek's remote code)
    # under model_type "kimi_k2", which transformers does not register; Moonshot's deployment guide says to set it
    # to "deepseek_v3" where a framework does not know it. Read exactly as deepseek_v3.
    "kimi_k2": BASE_FAMILIES["deepseek_v3"],
}
