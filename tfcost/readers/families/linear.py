"""Readers of the linear-attention and short-convolution hybrids: Qwen3-Next and Qwen3.5 (Gated DeltaNet with
gated full attention, 3 : 1), LFM2 and LFM2-MoE (short convolutions with GQA attention).

Each reader maps a transformers 5.24 config onto a `layers:` stack whose mixers are 'attention' and
'gated_deltanet' or 'short_conv' (tfcost.core.layers). What transformers builds for each is in docs/family-truth.md
and docs/family-layouts.md; the truth tests are tests/test_truth_linear.py. The Qwen3.5 wrappers (qwen3_5,
qwen3_5_moe) are read through their text_config, as every multimodal wrapper is (tfcost.readers.hf_config.read_config).
"""

from __future__ import annotations

from typing import Any

from tfcost.errors import TfcostError
from tfcost.readers.families.base import (
    MOE_ROUTING,
    QWEN_IGNORED,
    ROTARY_IGNORED,
    Family,
    Fields,
    Refusal,
    causal_lm_head,
    rotary_fraction,
    sizes,
)


def layer_groups(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A per-layer list of LayerSpecs, written compactly: the shortest pattern whose repeats make the list."""
    count = len(specs)
    for period in range(1, count + 1):
        if count % period == 0 and all(specs[i] == specs[i % period] for i in range(count)):
            return [{"pattern": specs[:period], "repeat": count // period}]
    return [{"pattern": specs, "repeat": 1}]  # unreachable: the whole list is its own pattern


def layer_types(fields: Fields, layers: int, default: list[str], allowed: tuple[str, ...]) -> list[str]:
    """An explicit `layer_types` list (checked), else the config class's default."""
    return layer_types_named(fields, "layer_types", layers, default, allowed)


def layer_types_named(fields: Fields, key: str, layers: int, default: list[str], allowed: tuple[str, ...]) -> list[str]:
    """An explicit per-layer list of kinds under `key` (checked), else the config class's default."""
    types = fields.list_of(key, str, None)
    if types is None:
        return default
    if len(types) != layers:
        raise TfcostError(f"{fields.model_type} config: field '{key}' has {len(types)} entries for {layers} layers")
    for kind in types:
        if kind not in allowed:
            raise TfcostError(f"{fields.model_type} config: layer type '{kind}' in '{key}' is not supported")
    return types


# Qwen3-Next and Qwen3.5 -----------------------------------------------------------------------------------------


def read_qwen_gdn(fields: Fields, *, ffn: str) -> dict[str, Any]:
    """Qwen3-Next (ffn "qwen3_next": sparse by decoder_sparse_step and mlp_only_layers), Qwen3.5 (ffn "dense")
    and Qwen3.5-MoE (ffn "moe": every layer sparse). Full-attention layers: GQA with per-head q/k RMSNorm and an
    output gate (q_proj doubled), partial rotary (0.25 by default); linear-attention layers: Gated DeltaNet."""
    causal_lm_head(fields)
    shape = sizes(fields)
    layers = shape["n_layers"]
    attention_bias = fields.bool("attention_bias", False)
    shape |= {
        "n_kv_heads": fields.int("num_key_value_heads", shape["n_heads"]),
        "head_dim": fields.int("head_dim", 256),
        "mlp": "gated",
        "norm": "rmsnorm",
        "position": "rotary",
        "max_seq_len": fields.int("max_position_embeddings", 32768),
        "tied_embeddings": fields.bool("tie_word_embeddings", False),
        "bias": {"qkv": attention_bias, "attn_out": attention_bias, "mlp": False},
        "qk_norm": True,
        "attention_output_gate": True,
        "gated_deltanet": {
            "key_heads": fields.int("linear_num_key_heads", 16),
            "value_heads": fields.int("linear_num_value_heads", 32),
            "key_head_dim": fields.int("linear_key_head_dim", 128),
            "value_head_dim": fields.int("linear_value_head_dim", 128),
            "conv_kernel": fields.int("linear_conv_kernel_dim", 4),
        },
    }
    fraction = rotary_fraction(fields, default=0.25)
    if fraction != 1:
        shape["rotary_fraction"] = fraction
    # The config classes: every interval-th layer full attention when layer_types is not given.
    interval = fields.int("full_attention_interval", 4)
    if interval < 1:
        raise fields.wrong("full_attention_interval", "a positive integer", interval)
    default = ["linear_attention" if (i + 1) % interval else "full_attention" for i in range(layers)]
    types = layer_types(fields, layers, default, ("linear_attention", "full_attention"))
    sparse = [True] * layers
    if ffn == "dense":
        shape["d_ff"] = fields.int("intermediate_size", 12288)
        sparse = [False] * layers
    else:
        experts = fields.int("num_experts", 512 if ffn == "qwen3_next" else 256)
        if ffn == "qwen3_next":  # Qwen3NextDecoderLayer: sparse unless in mlp_only_layers or off the step grid
            step = fields.int("decoder_sparse_step", 1)
            if step < 1:
                raise fields.wrong("decoder_sparse_step", "a positive integer", step)
            dense_only = set(fields.list_of("mlp_only_layers", int, []))
            sparse = [i not in dense_only and experts > 0 and (i + 1) % step == 0 for i in range(layers)]
            shape["d_ff"] = fields.int("intermediate_size", 5632)
        expert_d_ff = fields.int("moe_intermediate_size", 512)
        shape.setdefault("d_ff", expert_d_ff)  # Qwen3.5-MoE has no dense MLP: the width is unused
        if any(sparse):
            shape["moe"] = {
                "n_experts": experts,
                "experts_per_token": fields.int("num_experts_per_tok", 10 if ffn == "qwen3_next" else 8),
                "expert_d_ff": expert_d_ff,
                "n_shared_experts": 1,
                "shared_expert_d_ff": fields.int("shared_expert_intermediate_size", 512),
                "shared_expert_gate": True,
            }
        fields.read.update({"num_experts_per_tok", "shared_expert_intermediate_size"})
    mtp = fields.int("mtp_num_hidden_layers", 0)  # Qwen3.5's checkpoints hold them; transformers builds none
    if mtp:
        shape["mtp_layers"] = mtp
    specs = [
        {
            "mixer": "attention" if kind == "full_attention" else "gated_deltanet",
            "ffn": "moe" if routed else "dense",
        }
        for kind, routed in zip(types, sparse, strict=True)
    ]
    shape["layers"] = layer_groups(specs)
    return shape


# LFM2 ---------------------------------------------------------------------------------------------------------


def lfm2_ff_width(fields: Fields) -> int:
    """Lfm2MLP's hidden width: intermediate_size, adjusted when block_auto_adjust_ff_dim to int(2F/3), times
    block_ffn_dim_multiplier, rounded up to a multiple of block_multiple_of."""
    width = fields.int("block_ff_dim", fields.int("intermediate_size", 12288))  # Lfm2Config: block_ff_dim wins
    if not fields.bool("block_auto_adjust_ff_dim", True):
        fields.read.update({"block_ffn_dim_multiplier", "block_multiple_of"})
        return width
    width = int(2 * width / 3)
    multiplier = fields.raw("block_ffn_dim_multiplier", 1.0)
    multiple = fields.int("block_multiple_of", 256)
    if multiplier is not None:
        width = int(fields.finite("block_ffn_dim_multiplier", multiplier) * width)
        if multiple < 1:
            raise fields.wrong("block_multiple_of", "a positive integer", multiple)
        width = multiple * ((width + multiple - 1) // multiple)
    return width


def read_lfm2(fields: Fields, *, moe: bool) -> dict[str, Any]:
    """LFM2 (moe False) and LFM2-MoE: 'conv' layers (short convolution) and 'full_attention' layers (GQA with
    per-head q/k RMSNorm), each followed by a SwiGLU MLP or, in LFM2-MoE from num_dense_layers on, routed experts;
    a tied head; the final norm is called embedding_norm."""
    causal_lm_head(fields)
    shape = sizes(fields)
    layers = shape["n_layers"]
    conv_bias = fields.bool("conv_bias", False)
    shape |= {
        "n_kv_heads": fields.int("num_key_value_heads", shape["n_heads"]),
        "mlp": "gated",
        "norm": "rmsnorm",
        "position": "rotary",
        "max_seq_len": fields.int("max_position_embeddings", 128000),
        # Lfm2Config: the published files' tie_embedding wins over tie_word_embeddings.
        "tied_embeddings": fields.bool("tie_embedding", fields.bool("tie_word_embeddings", True)),
        "qk_norm": True,
        "short_conv": {"conv_kernel": fields.int("conv_L_cache", 3), "bias": conv_bias},
    }
    if moe:
        types = fields.list_of("layer_types", str, None)
        if types is None:  # Lfm2MoeConfig has no default: transformers itself fails without it
            raise TfcostError("lfm2_moe config: missing field 'layer_types'")
        types = layer_types(fields, layers, types, ("conv", "full_attention"))
        shape["d_ff"] = fields.int("intermediate_size", 7168)  # Lfm2MoeMLP: no width adjustment
        dense = fields.int("num_dense_layers", 2)
        shape["moe"] = {
            "n_experts": fields.int("num_experts", 32),
            "experts_per_token": fields.int("num_experts_per_tok", 4),
            "expert_d_ff": fields.int("moe_intermediate_size", 1792),
        }
        sparse = [i >= dense for i in range(layers)]
        if not any(sparse):
            del shape["moe"]
    else:
        attention = fields.list_of("full_attn_idxs", int, None)
        chosen = set(range(layers) if attention is None else attention)
        default = ["full_attention" if i in chosen else "conv" for i in range(layers)]
        types = layer_types(fields, layers, default, ("conv", "full_attention"))
        shape["d_ff"] = lfm2_ff_width(fields)
        sparse = [False] * layers
    specs = [
        {"mixer": "attention" if kind == "full_attention" else "short_conv", "ffn": "moe" if routed else "dense"}
        for kind, routed in zip(types, sparse, strict=True)
    ]
    shape["layers"] = layer_groups(specs)
    return shape


# MiniMax-01 ------------------------------------------------------------------------------------------------------


def read_minimax(fields: Fields) -> dict[str, Any]:
    """MiniMax-Text-01: softmax attention (GQA, no biases) or lightning attention per `layer_types` (default:
    alternating, full first), every layer an MoE of num_local_experts top-k (expert width intermediate_size, no
    shared expert)."""
    causal_lm_head(fields)
    shape = sizes(fields)
    layers = shape["n_layers"]
    width = fields.int("intermediate_size", 14336)
    shape |= {
        "n_kv_heads": fields.int("num_key_value_heads", shape["n_heads"]),
        "d_ff": width,
        "mlp": "gated",
        "norm": "rmsnorm",
        "position": "rotary",
        "max_seq_len": fields.int("max_position_embeddings", 131072),
        "tied_embeddings": fields.bool("tie_word_embeddings", False),
        "lightning_attention": {"block_size": fields.int("block_size", 256)},
        "moe": {
            "n_experts": fields.int("num_local_experts", 8),
            "experts_per_token": fields.int("num_experts_per_tok", 2),
            "expert_d_ff": width,
        },
    }
    head_dim = fields.nullable_int("head_dim", None)  # MiniMaxConfig: None means d_model / n_heads
    if head_dim is not None:
        shape["head_dim"] = head_dim
    default = ["full_attention" if (i + 1) % 2 else "linear_attention" for i in range(layers)]
    types = layer_types(fields, layers, default, ("full_attention", "linear_attention"))
    specs = [{"mixer": "attention" if kind == "full_attention" else "lightning", "ffn": "moe"} for kind in types]
    shape["layers"] = layer_groups(specs)
    return shape


# Kimi Linear ----------------------------------------------------------------------------------------------------


def read_kimi_linear(fields: Fields) -> dict[str, Any]:
    """Kimi Linear: KDA layers and MLA layers (no low-rank query) per `layer_types`, or the checkpoint's
    `linear_attn_config` (1-based kda_layers / full_attn_layers); a dense SwiGLU or an MoE (routed experts plus
    n_shared_experts folded into one shared MLP) per `mlp_layer_types`, or dense below first_k_dense_replace."""
    causal_lm_head(fields)
    shape = sizes(fields)
    layers, heads = shape["n_layers"], shape["n_heads"]
    linear = fields.raw("linear_attn_config", {})
    if not isinstance(linear, dict):
        raise fields.wrong("linear_attn_config", "a mapping", linear)
    # KimiLinearConfig: linear_attn_config's sizes win over the flat keys.
    head = linear.get("head_dim", fields.int("linear_head_dim", 128))
    linear_heads = linear.get("num_heads", fields.int("linear_num_heads", 32))
    kernel = linear.get("short_conv_kernel_size", fields.int("linear_conv_kernel_dim", 4))
    for key, value in (("head_dim", head), ("num_heads", linear_heads), ("short_conv_kernel_size", kernel)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise fields.wrong(f"linear_attn_config.{key}", "an integer", value)
    nope, rope = fields.int("qk_nope_head_dim", 128), fields.int("qk_rope_head_dim", 64)
    fields.read.update({"num_key_value_heads", "head_dim", "qk_head_dim"})  # MLA: per-head keys; both derived
    fields.require("attention_bias", False, fields.bool("attention_bias", False), "biases on MLA are not modelled")
    experts = fields.int("num_experts", fields.int("num_local_experts", 256))
    shared = fields.int("num_shared_experts", fields.int("n_shared_experts", 1))
    expert_width = fields.int("moe_intermediate_size", 1024)
    shape |= {
        "n_kv_heads": heads,
        "head_dim": nope + rope,
        "d_ff": fields.int("intermediate_size", 9216),
        "mlp": "gated",
        "norm": "rmsnorm",
        "position": "rotary",
        "max_seq_len": fields.int("model_max_length", fields.int("max_position_embeddings", 1048576)),
        "tied_embeddings": fields.bool("tie_word_embeddings", False),
        "mla": {
            "q_lora_rank": fields.nullable_int("q_lora_rank", None),
            "kv_lora_rank": fields.int("kv_lora_rank", 512),
            "qk_nope_head_dim": nope,
            "qk_rope_head_dim": rope,
            "v_head_dim": fields.int("v_head_dim", 128),
        },
        "gated_deltanet": {
            "key_heads": linear_heads,
            "value_heads": linear_heads,
            "key_head_dim": head,
            "value_head_dim": head,
            "conv_kernel": kernel,
        },
    }
    if "full_attn_layers" in linear and "kda_layers" in linear:
        default: list[str | None] = [None] * layers
        for kind, key in (("full_attention", "full_attn_layers"), ("linear_attention", "kda_layers")):
            for index in linear[key]:
                if not isinstance(index, int) or not 1 <= index <= layers:
                    raise fields.wrong(f"linear_attn_config.{key}", f"1-based layer numbers up to {layers}", index)
                default[index - 1] = kind
        if None in default:
            raise TfcostError(f"kimi_linear config: linear_attn_config leaves layer {default.index(None) + 1} unnamed")
    else:
        default = ["full_attention" if i and i % 4 == 0 else "linear_attention" for i in range(layers)]
    types = layer_types(fields, layers, [str(kind) for kind in default], ("full_attention", "linear_attention"))
    first_dense = fields.int("first_k_dense_replace", 1)
    mlp_default = ["dense" if i < first_dense else "sparse" for i in range(layers)]
    mlp_types = layer_types_named(fields, "mlp_layer_types", layers, mlp_default, ("dense", "sparse"))
    if "sparse" in mlp_types:
        shape["moe"] = {
            "n_experts": experts,
            "experts_per_token": fields.int("num_experts_per_token", fields.int("num_experts_per_tok", 8)),
            "expert_d_ff": expert_width,
            **({"n_shared_experts": shared, "shared_expert_d_ff": expert_width} if shared else {}),
        }
    specs = [
        {"mixer": "mla" if kind == "full_attention" else "kda", "ffn": "moe" if mlp == "sparse" else "dense"}
        for kind, mlp in zip(types, mlp_types, strict=True)
    ]
    shape["layers"] = layer_groups(specs)
    return shape


QWEN_GDN_IGNORED = QWEN_IGNORED | MOE_ROUTING | {"full_attention_interval"}
# Keys of published Qwen3-Next and Qwen3.5 configs that transformers 5.24's config classes keep but never read, so
# they change no count whatever their value: Qwen3's window switch (no sliding layers are built), the attention
# output gate (always built) and the state dtype (the recurrent state is always fp32).
QWEN_GDN_UNREAD = frozenset(
    {"use_sliding_window", "sliding_window", "max_window_layers", "attn_output_gate", "mamba_ssm_dtype"}
)
LFM2_IGNORED = ROTARY_IGNORED | MOE_ROUTING | {"norm_eps", "use_expert_bias", "routed_scaling_factor"}
MTP_EMBEDDINGS = Refusal(
    "mtp_use_dedicated_embeddings", "bool", False, (False,), "an MTP module with its own embedding is not modelled"
)

FAMILIES: dict[str, Family] = {
    "qwen3_next": Family(lambda fields: read_qwen_gdn(fields, ffn="qwen3_next"), QWEN_GDN_IGNORED | QWEN_GDN_UNREAD),
    "qwen3_5_text": Family(
        lambda fields: read_qwen_gdn(fields, ffn="dense"), QWEN_GDN_IGNORED | QWEN_GDN_UNREAD, refused=(MTP_EMBEDDINGS,)
    ),
    "qwen3_5_moe_text": Family(
        lambda fields: read_qwen_gdn(fields, ffn="moe"), QWEN_GDN_IGNORED | QWEN_GDN_UNREAD, refused=(MTP_EMBEDDINGS,)
    ),
    "minimax": Family(
        read_minimax,
        ROTARY_IGNORED
        | MOE_ROUTING
        | {
            "full_attn_alpha_factor",
            "full_attn_beta_factor",
            "linear_attn_alpha_factor",
            "linear_attn_beta_factor",
            "mlp_alpha_factor",
            "mlp_beta_factor",
        },
        # The published MiniMax-Text-01 file names its layers in attn_type_list; MiniMaxConfig 5.24 reads only
        # layer_types, so transformers builds the default alternation from such a file.
        unused=frozenset({"attn_type_list"}),
        refused=(Refusal("sliding_window", "int", None, (None,), "a sliding window on MiniMax's softmax layers"),),
    ),
    "kimi_linear": Family(
        read_kimi_linear,
        ROTARY_IGNORED
        | MOE_ROUTING
        | {
            "pretraining_tp",
            "routed_scaling_factor",
            "moe_renormalize",
            "num_expert_group",
            "n_group",
            "topk_group",
            "moe_router_activation_func",
            "use_grouped_topk",
        },
    ),
    "lfm2": Family(lambda fields: read_lfm2(fields, moe=False), LFM2_IGNORED),
    "lfm2_moe": Family(lambda fields: read_lfm2(fields, moe=True), LFM2_IGNORED),
}
