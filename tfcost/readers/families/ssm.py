"""Readers for the Mamba, Mamba-2 and hybrid families (issue 14), each exact against transformers 5.24 on the
meta device (tests/test_truth_ssm.py). Layer structures: docs/family-truth.md ("falcon_h1" ... "nemotron_h").

A hybrid stack is written as a `layers:` list: each layer's mixer ('attention', 'mamba', 'mamba2',
'attention+mamba2' or 'none') and FFN ('dense', 'moe' or 'none'), run-length grouped. The Mamba sizes go in the
model-wide `ssm`; the attention sizes in the usual fields (a pure Mamba model has none: its n_heads are the SSM
heads, used only to split the state under tensor parallelism).
"""

from __future__ import annotations

from typing import Any

from tfcost.errors import TfcostError
from tfcost.readers.families.base import (
    BASE_IGNORED,
    MOE_ROUTING,
    ROTARY_IGNORED,
    Family,
    Fields,
    Refusal,
    causal_lm_head,
    decoder_core,
)
from tfcost.units import UNBOUNDED_CONTEXT

# Initialisation, time-step limits and kernel switches: they change no count.
SSM_HARMLESS = frozenset(
    {
        "time_step_min", "time_step_max", "time_step_floor", "time_step_limit", "time_step_scale",
        "time_step_init_scheme", "rescale_prenorm_residual", "residual_in_fp32", "use_mambapy",
        "use_associative_scan", "use_mamba_kernels", "num_logits_to_keep", "mamba_norm_before_gate",
        "norm_before_gate", "mamba_hidden_act", "mamba_ssm_cache_dtype", "z_loss_coefficient", "is_encoder_decoder",
        "architectures",
    }
)  # fmt: skip
ATTENTION_BIAS = Refusal("attention_bias", "bool", False, (False,), "attention biases of hybrid layers")


def run_length(layers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-layer specs as `layers:` groups, each a run of equal layers."""
    groups: list[dict[str, Any]] = []
    for spec in layers:
        if groups and groups[-1]["pattern"] == [spec]:
            groups[-1]["repeat"] += 1
        else:
            groups.append({"pattern": [spec], "repeat": 1})
    return groups


def layer_kinds(fields: Fields, key: str, count: int, kinds: dict[str, tuple[str, str]]) -> list[dict[str, Any]]:
    """A per-layer type list (`layer_types`, `layers_block_type`) as specs, each type a (mixer, ffn) pair."""
    types = fields.list_of(key, str, None)
    if types is None or len(types) != count:
        raise TfcostError(f"{fields.model_type} config: field '{key}' must list the type of each of {count} layers")
    for kind in types:
        if kind not in kinds:
            raise TfcostError(f"{fields.model_type} config: layer type {kind!r} in '{key}' is not supported")
    return [{"mixer": kinds[kind][0], "ffn": kinds[kind][1]} for kind in types]


def mamba2_sizes(fields: Fields, inner: int, prefix: str = "mamba_", chunk_key: str = "mamba_chunk_size") -> dict:
    """The Mamba-2 sizes of the Bamba, Falcon-H1 and GraniteMoeHybrid configs (mamba_n_heads, mamba_d_head, ...)."""
    return {
        "d_inner": inner,
        "d_state": fields.int(f"{prefix}d_state"),
        "n_heads": fields.int(f"{prefix}n_heads"),
        "n_groups": fields.int(f"{prefix}n_groups", 1),
        "conv_kernel": fields.int(f"{prefix}d_conv", 4),
        "chunk_size": fields.int(chunk_key, 256),
        "conv_bias": fields.bool(f"{prefix}conv_bias", True),
        "proj_bias": fields.bool(f"{prefix}proj_bias", False),
    }


def pure_recurrent(fields: Fields, ssm: dict[str, Any], heads: int) -> dict[str, Any]:
    """A stack of mixer-only Mamba layers: embeddings, L x (RMSNorm, mixer), a final norm, the head."""
    causal_lm_head(fields)
    layers = fields.int("num_hidden_layers")
    mixer = "mamba" if ssm.get("dt_rank") else "mamba2"
    return {
        "vocab_size": fields.int("vocab_size"),
        "d_model": fields.int("hidden_size"),
        "n_layers": layers,
        "n_heads": heads,  # no attention: the SSM heads, which split the state under tensor parallelism
        "head_dim": ssm["d_inner"] // heads,
        "d_ff": ssm["d_inner"],  # no FFN: unused
        "mlp": "gated",
        "norm": "rmsnorm",
        "position": "none",
        "max_seq_len": UNBOUNDED_CONTEXT,
        "block_norms": 1,
        "ssm": ssm,
        "layers": [{"pattern": [{"mixer": mixer, "ffn": "none"}], "repeat": layers}],
    }


def read_mamba(fields: Fields) -> dict[str, Any]:
    """MambaConfig: d_inner = expand x hidden (intermediate_size is recomputed from it), dt_rank 'auto' =
    ceil(hidden / 16)."""
    hidden = fields.int("hidden_size")
    rank = fields.raw("time_step_rank", "auto")
    ssm = {
        "d_inner": int(fields.number("expand", 2) * hidden),
        "d_state": fields.int("state_size", 16),
        "conv_kernel": fields.int("conv_kernel", 4),
        "dt_rank": -(-hidden // 16) if rank == "auto" else fields.int("time_step_rank"),
        "conv_bias": fields.bool("use_conv_bias", True),
        "proj_bias": fields.bool("use_bias", False),
    }
    shape = pure_recurrent(fields, ssm, 1)
    return {**shape, "tied_embeddings": fields.bool("tie_word_embeddings", True)}


def read_mamba2(fields: Fields) -> dict[str, Any]:
    """Mamba2Config: d_inner = expand x hidden in num_heads heads (head_dim must agree), gated norm always."""
    hidden, heads = fields.int("hidden_size"), fields.int("num_heads", 128)
    inner = int(fields.number("expand", 2) * hidden)
    if heads * fields.int("head_dim", 64) != inner:
        raise TfcostError(f"{fields.model_type} config: num_heads x head_dim must equal expand x hidden_size")
    ssm = {
        "d_inner": inner,
        "d_state": fields.int("state_size", 128),
        "n_heads": heads,
        "n_groups": fields.int("n_groups", 8),
        "conv_kernel": fields.int("conv_kernel", 4),
        "chunk_size": fields.int("chunk_size", 256),
        "conv_bias": fields.bool("use_conv_bias", True),
        "proj_bias": fields.bool("use_bias", False),
    }
    fields.read.add("time_step_rank")  # Mamba-2 has no time-step projection: transformers never uses it
    shape = pure_recurrent(fields, ssm, heads)
    return {**shape, "tied_embeddings": fields.bool("tie_word_embeddings", False)}


def hybrid_core(fields: Fields, tied: bool, head_dim: int | None = None) -> dict[str, Any]:
    """The attention and MLP fields of a hybrid: Llama-like GQA, RMSNorm, SwiGLU, no biases."""
    causal_lm_head(fields)
    shape = decoder_core(fields, head_dim=head_dim)
    shape["tied_embeddings"] = fields.bool("tie_word_embeddings", tied)
    return shape


def read_falcon_h1(fields: Fields) -> dict[str, Any]:
    """FalconH1: every layer attention and Mamba-2 in parallel, then a SwiGLU MLP; d_ssm = mamba_d_ssm, or
    mamba_expand x hidden when null."""
    hidden = fields.int("hidden_size")
    shape = hybrid_core(fields, False, fields.int("head_dim", None))
    inner = fields.nullable_int("mamba_d_ssm", 1024)
    expand = fields.number("mamba_expand", 2)  # read either way: only a null mamba_d_ssm uses it
    inner = int(expand * hidden) if inner is None else inner
    ssm = {**mamba2_sizes(fields, inner), "gated_norm": fields.bool("mamba_rms_norm", False)}
    if ssm["n_heads"] * fields.int("mamba_d_head", 64) != inner:
        raise TfcostError(f"{fields.model_type} config: mamba_n_heads x mamba_d_head must equal the SSM width")
    layers = shape["n_layers"]
    shape["bias"] = {"qkv": False, "attn_out": False, "mlp": fields.bool("mlp_bias", False)}
    pattern = [{"mixer": "attention+mamba2", "ffn": "dense"}]
    return {**shape, "ssm": ssm, "layers": [{"pattern": pattern, "repeat": layers}]}


def read_bamba(fields: Fields) -> dict[str, Any]:
    """Bamba: Mamba-2 layers, attention at attn_layer_indices, a SwiGLU MLP in every layer."""
    hidden = fields.int("hidden_size")
    shape = hybrid_core(fields, False)
    layers = shape["n_layers"]
    attention = set(fields.list_of("attn_layer_indices", int, []))
    ssm = mamba2_sizes(fields, int(fields.number("mamba_expand", 2) * hidden))
    fields.int("mamba_d_head", 64)  # d_inner / heads: the mixer never reads it
    specs = [{"mixer": "attention" if i in attention else "mamba2", "ffn": "dense"} for i in range(layers)]
    shape["bias"] = {"qkv": False, "attn_out": False, "mlp": fields.bool("mlp_bias", False)}
    return {**shape, "ssm": ssm, "layers": run_length(specs)}


def read_granitemoehybrid(fields: Fields) -> dict[str, Any]:
    """GraniteMoeHybrid: each layer Mamba-2 or attention (layer_types), then routed experts of width
    intermediate_size plus a shared SwiGLU MLP of shared_intermediate_size."""
    hidden = fields.int("hidden_size")
    shape = hybrid_core(fields, False)
    layers = shape["n_layers"]
    kinds = {"mamba": ("mamba2", "moe"), "linear_attention": ("mamba2", "moe")}
    kinds |= {"attention": ("attention", "moe"), "full_attention": ("attention", "moe")}
    if fields.config.get("layer_types") is None:
        specs = [{"mixer": "mamba2", "ffn": "moe"}] * layers
        fields.read.add("layer_types")
    else:
        specs = layer_kinds(fields, "layer_types", layers, kinds)
    ssm = mamba2_sizes(fields, int(fields.number("mamba_expand", 2) * hidden))
    fields.int("mamba_d_head", 64)
    experts = fields.int("num_local_experts")
    shared = fields.int("shared_intermediate_size")
    shape["moe"] = {
        "n_experts": experts,
        "experts_per_token": fields.int("num_experts_per_tok"),
        "expert_d_ff": shape["d_ff"],
        "n_shared_experts": 1 if shared else 0,
        **({"shared_expert_d_ff": shared} if shared else {}),
    }
    if fields.text("position_embedding_type", None) in (None, "nope"):
        shape["position"] = "none"
    return {**shape, "ssm": ssm, "layers": run_length(specs)}


def read_jamba(fields: Fields) -> dict[str, Any]:
    """Jamba: attention where i % attn_layer_period == attn_layer_offset, Mamba (with dt/B/C RMSNorms) elsewhere;
    MoE where i % expert_layer_period == expert_layer_offset, SwiGLU elsewhere."""
    hidden = fields.int("hidden_size")
    shape = hybrid_core(fields, False)
    layers = shape["n_layers"]
    attn_period, attn_offset = fields.int("attn_layer_period", 8), fields.int("attn_layer_offset", 4)
    moe_period, moe_offset = fields.int("expert_layer_period", 2), fields.int("expert_layer_offset", 1)
    for key, value in (("attn_layer_period", attn_period), ("expert_layer_period", moe_period)):
        if value < 1:
            raise fields.wrong(key, "a positive integer", value)
    rank = fields.raw("mamba_dt_rank", "auto")
    ssm = {
        "d_inner": int(fields.number("mamba_expand", 2) * hidden),
        "d_state": fields.int("mamba_d_state", 16),
        "conv_kernel": fields.int("mamba_d_conv", 4),
        "dt_rank": -(-hidden // 16) if rank == "auto" else fields.int("mamba_dt_rank"),
        "conv_bias": fields.bool("mamba_conv_bias", True),
        "proj_bias": fields.bool("mamba_proj_bias", False),
        "dt_norms": True,
    }
    specs = [
        {
            "mixer": "attention" if i % attn_period == attn_offset else "mamba",
            "ffn": "moe" if i % moe_period == moe_offset else "dense",
        }
        for i in range(layers)
    ]
    experts = fields.int("num_experts", 16)
    if any(spec["ffn"] == "moe" for spec in specs):
        shape["moe"] = {
            "n_experts": experts,
            "experts_per_token": fields.int("num_experts_per_tok", 2),
            "expert_d_ff": shape["d_ff"],
        }
    return {**shape, "ssm": ssm, "layers": run_length(specs)}


NEMOTRON_KINDS = {
    "mamba": ("mamba2", "none"), "linear_attention": ("mamba2", "none"), "M": ("mamba2", "none"),
    "attention": ("attention", "none"), "full_attention": ("attention", "none"), "*": ("attention", "none"),
    "mlp": ("none", "dense"), "-": ("none", "dense"), "moe": ("none", "moe"), "E": ("none", "moe"),
}  # fmt: skip


def read_nemotron_h(fields: Fields) -> dict[str, Any]:
    """NemotronH: one mixer or FFN per layer, one RMSNorm each: M Mamba-2, * attention, - a relu^2 MLP (up,
    down), E an MoE of relu^2 experts with shared experts. The layer list is layers_block_type, or the older
    hybrid_override_pattern string; num_hidden_layers is then ignored, as transformers ignores it."""
    pattern = fields.text("hybrid_override_pattern", None)
    if pattern is not None and fields.config.get("layers_block_type") is None:
        specs = [{"mixer": NEMOTRON_KINDS[c][0], "ffn": NEMOTRON_KINDS[c][1]} for c in pattern if c in NEMOTRON_KINDS]
        if len(specs) != len(pattern):
            raise TfcostError(f"{fields.model_type} config: 'hybrid_override_pattern' may hold only M, *, - and E")
    else:
        types = fields.list_of("layers_block_type", str, None)
        specs = layer_kinds(fields, "layers_block_type", len(types or ()), NEMOTRON_KINDS)
    fields.read.add("num_hidden_layers")
    if not specs:
        raise TfcostError(f"{fields.model_type} config: no layers")
    hidden, heads = fields.int("hidden_size"), fields.int("mamba_num_heads", 128)
    shape = {
        "vocab_size": fields.int("vocab_size"),
        "d_model": hidden,
        "n_layers": len(specs),
        "n_heads": fields.int("num_attention_heads"),
        "n_kv_heads": fields.int("num_key_value_heads"),
        "head_dim": fields.int("head_dim", 128),
        "d_ff": fields.int("intermediate_size"),
        "mlp": "plain",
        "norm": "rmsnorm",
        "bias": {"qkv": False, "attn_out": False, "mlp": fields.bool("mlp_bias", False)},
        "tied_embeddings": fields.bool("tie_word_embeddings", False),
        "position": "none",
        "max_seq_len": fields.int("max_position_embeddings", 4096),
        "block_norms": 1,
        "ssm": {
            "d_inner": heads * fields.int("mamba_head_dim", 64),
            "d_state": fields.int("ssm_state_size", 128),
            "n_heads": heads,
            "n_groups": fields.int("n_groups", 8),
            "conv_kernel": fields.int("conv_kernel", 4),
            "chunk_size": fields.int("chunk_size", 128),
            "conv_bias": fields.bool("use_conv_bias", True),
            "proj_bias": fields.bool("use_bias", False),
        },
        "layers": run_length(specs),
    }
    fields.number("expand", 2)  # d_inner is mamba_num_heads x mamba_head_dim in NemotronHMamba2Mixer
    if any(spec["ffn"] == "moe" for spec in specs):
        shared = fields.int("n_shared_experts", 1)
        shape["moe"] = {
            "n_experts": fields.int("n_routed_experts", 8),
            "experts_per_token": fields.int("num_experts_per_tok", 2),
            "expert_d_ff": fields.int("moe_intermediate_size", 7688),
            "n_shared_experts": shared,
            **({"shared_expert_d_ff": fields.int("moe_shared_expert_intermediate_size", 7688)} if shared else {}),
        }
    fields.read.update({"n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts"})
    fields.read.add("moe_shared_expert_intermediate_size")
    return shape


ZAMBA2_KINDS = {"mamba": "mamba2", "linear_attention": "mamba2", "hybrid": "shared_transformer+mamba2"}


def zamba2_default_types() -> list[str]:
    """Zamba2Config's layers_block_type when a config leaves it out: 54 layers, a hybrid layer after every 6th Mamba-2
    layer and then closer together (the Zamba2-2.7B layout)."""
    mamba, hybrid = "linear_attention", "hybrid"
    return [mamba, *([mamba] * 5 + [hybrid]) * 7, *[mamba] * 4, hybrid, *[mamba] * 3, hybrid, *[mamba] * 2]


def read_zamba2(fields: Fields) -> dict[str, Any]:
    """Zamba2: Mamba-2 layers; a 'hybrid' layer first runs a shared transformer block (attention over 2d, head_dim
    2d/H, a gated MLP of intermediate_size, default 4d; num_mem_blocks blocks used in turn, held by their first
    uses), its adapters and a d x d linear (tfcost.core.layers.shared_transformer). The layers are layers_block_type
    (legacy 'mamba' = 'linear_attention'), one per num_hidden_layers as transformers checks."""
    causal_lm_head(fields)
    types = fields.list_of("layers_block_type", str, None)
    types = zamba2_default_types() if types is None else types
    layers = fields.int("num_hidden_layers", 54)
    if len(types) != layers or not types:
        raise TfcostError(
            f"{fields.model_type} config: 'layers_block_type' must list the type of each of {layers} layers "
            f"(num_hidden_layers), not {len(types)}"
        )
    for kind in types:
        if kind not in ZAMBA2_KINDS:
            raise TfcostError(f"{fields.model_type} config: layer type {kind!r} in 'layers_block_type' is unsupported")
    blocks = fields.int("num_mem_blocks", 1)
    if blocks < 1:
        raise fields.wrong("num_mem_blocks", "a positive integer", blocks)
    specs, uses = [], 0
    for kind in types:  # Zamba2Model.get_layers: the first num_mem_blocks hybrid layers hold the shared blocks
        spec: dict[str, Any] = {"mixer": ZAMBA2_KINDS[kind], "ffn": "none"}
        if kind == "hybrid":
            spec["tied"], uses = uses >= blocks, uses + 1
        specs.append(spec)
    hidden, heads = fields.int("hidden_size", 2560), fields.int("num_attention_heads", 32)
    inner = int(fields.number("mamba_expand", 2) * hidden)
    bias = fields.bool("add_bias_linear", False)
    long_context = fields.bool("use_long_context", False)
    return {
        "vocab_size": fields.int("vocab_size", 32000),
        "d_model": hidden,
        "n_layers": layers,
        "n_heads": heads,
        "n_kv_heads": fields.int("num_key_value_heads", heads),
        # Zamba2Config.attention_head_dim, whatever the file says (no heads: the schema names the error)
        "head_dim": 2 * hidden // heads if heads > 0 else heads,
        "d_ff": fields.nullable_int("intermediate_size", None) or 4 * hidden,
        "mlp": "gated",
        "norm": "rmsnorm",
        "bias": {"qkv": False, "attn_out": False, "mlp": bias},
        "tied_embeddings": fields.bool("tie_word_embeddings", True),
        "position": "rotary" if fields.bool("use_mem_rope", False) else "none",
        "max_seq_len": 16384 if long_context else fields.int("max_position_embeddings", 4096),
        "block_norms": 1,
        "ssm": {
            "d_inner": inner,
            "d_state": fields.int("mamba_d_state", 64),
            "n_heads": fields.int("n_mamba_heads", 8),
            "n_groups": fields.int("mamba_ngroups", 1),
            "conv_kernel": fields.int("mamba_d_conv", 4),
            "chunk_size": fields.int("chunk_size", 256),
            "conv_bias": True,  # Zamba2MambaMixer builds its conv1d with a bias whatever use_conv_bias says
            "proj_bias": bias,
        },
        "shared_transformer": {
            "adapter_rank": fields.int("adapter_rank", 128),
            "attention_adapters": fields.bool("use_shared_attention_adapter", False),
        },
        "layers": run_length(specs),
    }


GRANITE_MULTIPLIERS = frozenset(
    {"embedding_multiplier", "logits_scaling", "residual_multiplier", "attention_multiplier"}
)
FALCON_H1_MULTIPLIERS = frozenset(
    {
        "lm_head_multiplier", "embedding_multiplier", "mlp_multipliers", "key_multiplier", "attention_out_multiplier",
        "attention_in_multiplier", "ssm_multipliers", "ssm_in_multiplier", "ssm_out_multiplier",
    }
)  # fmt: skip
HYBRID_HARMLESS = BASE_IGNORED | ROTARY_IGNORED | SSM_HARMLESS | {"max_position_embeddings", "partial_rotary_factor"}

FAMILIES: dict[str, Family] = {
    "mamba": Family(
        read_mamba,
        # intermediate_size is recomputed as expand x hidden_size; the rest are mamba_ssm's own keys, which
        # state-spaces' Hub files carry and transformers does not read (n_layer repeats num_hidden_layers).
        BASE_IGNORED
        | SSM_HARMLESS
        | {"intermediate_size", "n_layer", "fused_add_norm", "pad_vocab_size_multiple", "rms_norm", "ssm_cfg"},
    ),
    "mamba2": Family(read_mamba2, BASE_IGNORED | SSM_HARMLESS | {"rms_norm"}),
    "falcon_h1": Family(
        read_falcon_h1,
        HYBRID_HARMLESS | FALCON_H1_MULTIPLIERS,
        refused=(
            ATTENTION_BIAS,
            Refusal("projectors_bias", "bool", False, (False,), "a bias on Falcon-H1's SSM out projection"),
        ),
    ),
    # Bamba's Hub file names its rotary width (attn_rotary_emb), which BambaConfig does not read: no count.
    "bamba": Family(read_bamba, HYBRID_HARMLESS | {"attn_rotary_emb"}, refused=(ATTENTION_BIAS,)),
    "granitemoehybrid": Family(
        read_granitemoehybrid,
        # GraniteMoeHybridConfig has no normalization_function field: RMSNorm always, as the file says.
        HYBRID_HARMLESS | GRANITE_MULTIPLIERS | MOE_ROUTING | {"normalization_function"},
        refused=(ATTENTION_BIAS,),
    ),
    "jamba": Family(
        read_jamba,
        HYBRID_HARMLESS | MOE_ROUTING | {"sliding_window"},  # JambaConfig has none: its attention sees all T
    ),
    "zamba2": Family(
        read_zamba2,
        HYBRID_HARMLESS
        # Zamba2Config.__post_init__ recomputes these from the sizes and layers_block_type, whatever a file says.
        | {"attention_hidden_size", "attention_head_dim", "mamba_headdim", "kv_channels", "num_query_groups"}
        | {"hybrid_layer_ids", "use_conv_bias", "use_mem_eff_path"},
        refused=(
            # PreTrainedModel.get_expanded_tied_weights_keys ties nothing without it, the shared blocks included.
            Refusal(
                "tie_word_embeddings", "bool", True, (True,), "transformers then holds a copy of a shared block per use"
            ),
        ),
    ),
    "nemotron_h": Family(
        read_nemotron_h,
        HYBRID_HARMLESS
        | MOE_ROUTING
        | {"mlp_hidden_act", "routed_scaling_factor", "n_group", "topk_group", "moe_shared_expert_overlap"}
        | {"num_nextn_predict_layers", "mtp_layers_block_type", "attention_bias"}
        # Older Hub files' names that NemotronHConfig does not read: NemotronHAttention takes head_dim (its
        # default 128 is the Nemotron-H files' attention_head_dim), the mixer's biases follow use_bias.
        | {"attention_head_dim", "mamba_proj_bias"},
        refused=(
            Refusal("moe_latent_size", "int", None, (None,), "latent MoE projections are not modelled"),
            Refusal("sliding_window", "int", None, (None,), "sliding windows in Nemotron-H are not modelled"),
        ),
    ),
}
