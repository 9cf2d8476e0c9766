"""The 2025-26 families that are Llama (or Mixtral / Qwen-MoE) plus a few flags, as rows of data.

Each model_type is one `Flags` row: how its attention, norms, MLP, sliding windows and NoPE layers differ from
Llama's decoder layer, and, for the MoE families, one `MoeFlags` row naming the config keys of its experts and
where its sparse layers sit. One reader (`flags_family`) serves them all; what each flag means in transformers
5.24 is in docs/family-truth.md ("Families that are Llama plus a few flags") and the shapes in
docs/family-layouts.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from tfcost.errors import TfcostError
from tfcost.readers.families.base import (
    DEEPSEEK_ROUTING,
    LLAMA_IGNORED,
    MOE_ROUTING,
    QWEN_IGNORED,
    Family,
    Fields,
    Reader,
    Refusal,
    llama_like,
    sliding_layers_from_types,
)

# A switch is a constant, or a config key with transformers' default for it.
Switch = bool | tuple[str, bool]


def switch(fields: Fields, value: Switch) -> bool:
    if isinstance(value, bool):
        return value
    key, default = value
    return bool(fields.bool(key, default))


@dataclass(frozen=True)
class MoeFlags:
    """Where a family's experts are in its config.

    experts, top_k, width: keys of E, k and one routed expert's hidden width (with transformers' defaults).
    shared: key of the number of shared experts, each `width` wide (transformers builds them as one MLP of
    shared x width: the same weights and matmuls); shared_width: key of a shared MLP's own width (Granite-MoE's
    shared_intermediate_size, 0 meaning none; HunYuan's intermediate_size, always one).
    placement: which layers are sparse. "all"; "first_k_dense" (first_k_dense_replace dense layers first: GLM-4.5,
    dots.llm1); "qwen" (mlp_only_layers and decoder_sparse_step: Qwen3-MoE); "ernie" (moe_layer_start_index ..
    moe_layer_end_index every moe_layer_interval); "mlp_layer_types" (a 'dense'/'sparse' list, else
    first_k_dense_replace: EXAONE-MoE); first_dense_default: transformers' default of first_k_dense_replace.
    Dense layers have a gated MLP of intermediate_size.
    router_bias: a learned E-vector beside the router (ERNIE-4.5's e_score_correction_bias is a parameter).
    """

    experts: tuple[str, int | None]
    top_k: tuple[str, int | None]
    width: tuple[str, int | None]
    shared: tuple[str, int | None] | None = None
    shared_width: tuple[str, int | None] | None = None
    placement: Literal["all", "first_k_dense", "qwen", "ernie", "mlp_layer_types"] = "all"
    first_dense_default: int = 0
    router_bias: bool = False


@dataclass(frozen=True)
class Flags:
    """How one family's decoder layer differs from Llama's (pre-RMSNorm, GQA attention, SwiGLU MLP).

    head_dim: "config" reads head_dim (default d_model / heads, which must divide); "floor" defaults to
    d_model // heads (GLM-4.5's 96 heads on 4096); "required" has no default (transformers' own is None, which
    it cannot build: Ministral, HunYuan).
    qkv_bias, out_bias, mlp_bias: biases on q/k/v, on o and on the MLP.
    qk_norm: "head" a head_dim-wide RMSNorm on queries and keys; "projection" over the whole q and k projections
    (OLMo 2); qk_norm_switch turns it on (GLM-4.5's use_qk_norm).
    norm: the block norms' kind; block_norms: d-wide norms per block (GLM-4: 4; Cohere's parallel block: 1).
    windows: which layers slide. "none"; "every-layer" every layer when sliding_window is set (PhiMoE);
    "use_sliding_window" every layer when use_sliding_window (Qwen3-MoE); "layer_types" an explicit list, else
    every layer when sliding_window is set (Ministral); "period" the list, else every layer but each `period`-th
    (period_key: sliding_window_pattern; OLMo 3: 4 fixed); "max_window_layers" the list, else layers from
    max_window_layers on (dots.llm1); "smollm3" the list, else NoPE layers when use_sliding_window.
    nope: "none"; "no_rope_layers" (SmolLM3: 0 marks a NoPE layer, default every no_rope_layer_interval-th);
    "global" (EXAONE 4: full-attention layers have no RoPE when there is a window). NoPE changes no count.
    """

    head_dim: Literal["config", "floor", "required"] = "config"
    tied: bool = False
    qkv_bias: Switch = ("attention_bias", False)
    out_bias: Switch = ("attention_bias", False)
    mlp_bias: Switch = False
    qk_norm: Literal["none", "head", "projection"] = "none"
    qk_norm_switch: Switch = True
    norm: Literal["rmsnorm", "layernorm", "layernorm-noshift", "layernorm-noparams"] = "rmsnorm"
    block_norms: int = 2
    parallel_block: bool = False
    mlp: Literal["gated", "plain"] = "gated"
    activation_params: int = 0
    windows: Literal[
        "none", "every-layer", "use_sliding_window", "layer_types", "period", "max_window_layers", "smollm3"
    ] = "none"
    period: int = 4
    period_key: str | None = None
    nope: Literal["none", "no_rope_layers", "global"] = "none"
    moe: MoeFlags | None = None
    mtp_key: str | None = None  # multi-token-prediction layers (GLM-4.5's num_nextn_predict_layers)
    rotary_dim: bool = False  # a legacy rotated width `rotary_dim` (MiniMax-M2): recorded as rotary_fraction


def required_or(fields: Fields, key: tuple[str, int | None]) -> int:
    """An integer under a key or its aliases ("n_routed_experts|num_local_experts": transformers' attribute_map
    makes either name set the same attribute); aliases that disagree are refused rather than one picked."""
    names, default = key[0].split("|"), key[1]
    given = {name: fields.int(name, None) for name in names}
    values = {value for value in given.values() if value is not None}
    if len(values) > 1:
        raise TfcostError(f"{fields.model_type} config: fields {' and '.join(map(repr, names))} disagree ({given})")
    if values:
        return values.pop()
    return int(fields.int(names[0]) if default is None else default)


def sliding(fields: Fields, flags: Flags, layers: int, rope: list[bool]) -> tuple[int | None, list[bool]]:
    """The window and which layers use it, as transformers' config class and attention decide."""
    none = [False] * layers
    if flags.windows == "none":
        return None, none
    if flags.windows == "every-layer":
        window = fields.int("sliding_window", None)
        return window, [window is not None] * layers
    if flags.windows == "use_sliding_window":  # Qwen3MoeConfig drops the window unless use_sliding_window
        use = fields.bool("use_sliding_window", False)
        window = fields.int("sliding_window", 4096)
        fields.int("max_window_layers", 28)  # written by Qwen's configs; Qwen3MoeAttention does not read it
        return (window, [True] * layers) if use and window is not None else (None, none)
    window = fields.nullable_int("sliding_window", 4096 if flags.windows == "period" else None)
    # SmolLM3Attention: a layer slides only with use_sliding_window, whatever layer_types says.
    use = flags.windows != "smollm3" or fields.bool("use_sliding_window", False)
    # The config class derives layer_types from the pattern; beside an explicit list the pattern is not used (EXAONE
    # 4.0's files write it as a string, "LLLG").
    pattern = fields.raw(flags.period_key, flags.period) if flags.period_key is not None else flags.period
    top = fields.int("max_window_layers", layers) if flags.windows == "max_window_layers" else layers
    explicit = sliding_layers_from_types(fields, layers)
    if explicit is not None:
        chosen = set(explicit)
        return window, [use and i in chosen for i in range(layers)]
    if flags.windows == "layer_types":
        return window, [window is not None] * layers
    if flags.windows == "period":
        if not isinstance(pattern, int) or isinstance(pattern, bool) or pattern < 1:
            raise fields.wrong(str(flags.period_key), "a positive integer when layer_types is not given", pattern)
        return window, [window is not None and (i + 1) % pattern != 0 for i in range(layers)]
    if flags.windows == "max_window_layers":
        return window, [window is not None and i >= top for i in range(layers)]
    # SmolLM3Config: the NoPE layers slide, if any do
    return window, [use and window is not None and not rope[i] for i in range(layers)]


def rope_layers(fields: Fields, flags: Flags, layers: int) -> list[bool]:
    """Which layers rotate queries and keys (False: NoPE)."""
    if flags.nope == "no_rope_layers":
        interval = fields.int("no_rope_layer_interval", 4)
        if interval < 1:
            raise fields.wrong("no_rope_layer_interval", "a positive integer", interval)
        marks = fields.list_of("no_rope_layers", int, None)
        if marks is None:
            marks = [int((i + 1) % interval != 0) for i in range(layers)]
        if len(marks) != layers:
            raise TfcostError(f"{fields.model_type} config: 'no_rope_layers' has {len(marks)} entries for {layers}")
        return [bool(mark) for mark in marks]
    return [True] * layers


def moe_layers(fields: Fields, moe: MoeFlags, layers: int) -> list[bool]:
    """Which layers have experts in place of the dense MLP."""
    if moe.placement == "all":
        return [True] * layers
    if moe.placement == "first_k_dense":
        first = fields.int("first_k_dense_replace", moe.first_dense_default)
        return [i >= first for i in range(layers)]
    if moe.placement == "qwen":  # Qwen3MoeDecoderLayer
        step = fields.int("decoder_sparse_step", 1)
        if step < 1:
            raise fields.wrong("decoder_sparse_step", "a positive integer", step)
        dense_only = set(fields.list_of("mlp_only_layers", int, []))
        return [i not in dense_only and (i + 1) % step == 0 for i in range(layers)]
    if moe.placement == "ernie":  # Ernie4_5_MoeDecoderLayer; Ernie4_5_MoeConfig turns an end of -1 into L - 1
        interval = fields.int("moe_layer_interval", 1)
        if interval < 1:
            raise fields.wrong("moe_layer_interval", "a positive integer", interval)
        start = fields.int("moe_layer_start_index", 1)
        end = fields.int("moe_layer_end_index", -1)
        end = layers - 1 if end == -1 else end
        return [(i + 1) % interval == 0 and start <= i <= end for i in range(layers)]
    kinds = fields.list_of("mlp_layer_types", str, None)  # EXAONE-MoE
    first = fields.int("first_k_dense_replace", moe.first_dense_default)
    if kinds is None:
        return [i >= first for i in range(layers)]
    if len(kinds) != layers or any(kind not in ("dense", "sparse") for kind in kinds):
        raise TfcostError(f"{fields.model_type} config: 'mlp_layer_types' should be {layers} of 'dense'/'sparse'")
    return [kind == "sparse" for kind in kinds]


def read_moe(fields: Fields, moe: MoeFlags, layers: int) -> tuple[dict[str, Any] | None, list[bool]]:
    experts = required_or(fields, moe.experts)
    sparse = moe_layers(fields, moe, layers) if experts > 0 else [False] * layers
    width = required_or(fields, moe.width)
    top_k = required_or(fields, moe.top_k)
    shared = required_or(fields, moe.shared) if moe.shared else 0
    shared_width = required_or(fields, moe.shared_width) if moe.shared_width else 0
    if not any(sparse):
        return None, sparse
    mapping: dict[str, Any] = {"n_experts": experts, "experts_per_token": top_k, "expert_d_ff": width}
    if moe.shared_width is not None and shared_width > 0:
        mapping.update(n_shared_experts=1, shared_expert_d_ff=shared_width)
    elif shared > 0:
        mapping["n_shared_experts"] = shared
    if moe.router_bias:
        mapping["router_bias"] = True
    return mapping, sparse


def compact(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-layer specs as `layers:` groups: the shortest pattern that repeats over the stack, then the rest."""
    total = len(specs)
    for period in range(1, total + 1):
        repeat = total // period
        if specs[: period * repeat] == specs[:period] * repeat:
            groups = [{"pattern": specs[:period], "repeat": repeat}]
            rest = specs[period * repeat :]
            return groups + (compact(rest) if rest else [])
    raise AssertionError("unreachable: period = len(specs) always repeats")


def flags_family(flags: Flags) -> Reader:
    """The reader of a family given by its flags."""

    def read(fields: Fields) -> dict[str, Any]:
        shape = llama_like(fields, head_dim_default=None, tied_default=flags.tied, biases=False)
        if flags.head_dim == "required" and "head_dim" not in shape:
            fields.int("head_dim")  # raises: missing field
        if flags.head_dim == "floor" and "head_dim" not in shape:
            shape["head_dim"] = shape["d_model"] // shape["n_heads"]
        shape["bias"] = {
            "qkv": switch(fields, flags.qkv_bias),
            "attn_out": switch(fields, flags.out_bias),
            "mlp": switch(fields, flags.mlp_bias),
        }
        if flags.qk_norm != "none" and switch(fields, flags.qk_norm_switch):
            shape["qk_norm"] = True
            if flags.qk_norm == "projection":
                shape["qk_norm_width"] = "projection"
        rotary_dim = fields.int("rotary_dim", None) if flags.rotary_dim else None
        if rotary_dim is not None and "partial_rotary_factor" not in fields.config:
            # MiniMaxM2Config: released checkpoints give the rotated width, read as rotary_dim / head_dim
            shape["rotary_fraction"] = rotary_dim / shape.get("head_dim", shape["d_model"] // shape["n_heads"])
        shape["norm"], shape["mlp"] = flags.norm, flags.mlp
        if flags.block_norms != 2:
            shape["block_norms"] = flags.block_norms
        if flags.parallel_block:
            shape["parallel_block"] = True
        if flags.activation_params:
            shape["activation_params"] = flags.activation_params
        if flags.mtp_key is not None:
            mtp = required_or(fields, (flags.mtp_key, 0))
            if mtp:
                shape["mtp_layers"] = mtp
        layers = shape["n_layers"]
        rope = rope_layers(fields, flags, layers)
        window, slides = sliding(fields, flags, layers, rope)
        if flags.nope == "global" and window is not None:  # Exaone4Attention: RoPE only on sliding layers
            rope = slides
        moe, sparse = read_moe(fields, flags.moe, layers) if flags.moe else (None, [False] * layers)
        if moe is not None:
            shape["moe"] = moe
        if window is None:
            slides = [False] * layers
        if all(rope):  # the flat fields say it all
            if any(slides):
                shape["sliding_window"] = window
                if not all(slides):
                    shape["sliding_layers"] = [i for i in range(layers) if slides[i]]
            if moe is not None and not all(sparse):
                moe["dense_layers"] = [i for i in range(layers) if not sparse[i]]
            return shape
        specs = [
            {
                **({"window": window} if slides[i] else {}),
                **({} if rope[i] else {"rope": False}),
                "ffn": "moe" if sparse[i] else "dense",
            }
            for i in range(layers)
        ]
        shape["layers"] = compact(specs)
        return shape

    return read


# Keys that change no count in these families, by what they are.
GRANITE_SCALES = frozenset({"embedding_multiplier", "attention_multiplier", "residual_multiplier", "logits_scaling"})
DEEPSEEK_LIKE_ROUTING = DEEPSEEK_ROUTING - {"num_nextn_predict_layers", "head_dim"}
MOE_IGNORED = MOE_ROUTING | {"router_jitter_noise", "input_jitter_noise"}
ATTENTION_MULTIPLIER = frozenset({"attention_multiplier"})
LM_HEAD_BIAS = Refusal("lm_head_bias", "bool", False, (False,), "a bias on the output head is not modelled")
ERNIE_HEAD_BIAS = Refusal("use_bias", "bool", False, (False,), "ERNIE-4.5-MoE then biases its output head too")

GLM4_MOE = MoeFlags(
    ("n_routed_experts|num_local_experts", 128),
    ("num_experts_per_tok", 8),
    ("moe_intermediate_size", 1408),
    shared=("n_shared_experts", 1),
    placement="first_k_dense",
    first_dense_default=1,
)

# EXAONE 4.0: bias-free, per-head q/k norms, sliding and global layers by sliding_window_pattern, NoPE on the global
# ones; EXAONE MoE is the same layer with experts.
EXAONE4 = Flags(
    qkv_bias=False,
    out_bias=False,
    qk_norm="head",
    windows="period",
    period_key="sliding_window_pattern",
    nope="global",
)


FAMILIES: dict[str, Family] = {
    # Dense: Llama plus flags.
    "granite": Family(flags_family(Flags(mlp_bias=("mlp_bias", False))), LLAMA_IGNORED | GRANITE_SCALES),
    "smollm3": Family(
        flags_family(Flags(tied=True, mlp_bias=("mlp_bias", False), windows="smollm3", nope="no_rope_layers")),
        QWEN_IGNORED | {"max_window_layers"},
    ),
    "ministral": Family(
        flags_family(Flags(head_dim="required", qkv_bias=False, out_bias=False, windows="layer_types")),
        LLAMA_IGNORED,
    ),
    "ministral3": Family(flags_family(Flags(qkv_bias=False, out_bias=False, windows="every-layer")), LLAMA_IGNORED),
    "seed_oss": Family(
        flags_family(
            Flags(
                qkv_bias=("attention_bias", True), out_bias=("attention_out_bias", False), mlp_bias=("mlp_bias", False)
            )
        ),
        LLAMA_IGNORED | {"residual_dropout"},
    ),
    "ernie4_5": Family(
        flags_family(
            Flags(tied=True, qkv_bias=("use_bias", False), out_bias=("use_bias", False), mlp_bias=("use_bias", False))
        ),
        LLAMA_IGNORED,
    ),
    "hunyuan_v1_dense": Family(
        flags_family(Flags(head_dim="required", qk_norm="head")), LLAMA_IGNORED | {"eod_token_id"}
    ),
    "apertus": Family(flags_family(Flags(qk_norm="head", mlp="plain", activation_params=2)), LLAMA_IGNORED),
    "olmo2": Family(flags_family(Flags(qk_norm="projection")), LLAMA_IGNORED),
    "olmo3": Family(flags_family(Flags(qk_norm="projection", windows="period")), LLAMA_IGNORED),
    "exaone4": Family(
        flags_family(EXAONE4),
        LLAMA_IGNORED,
    ),
    "glm4": Family(
        flags_family(Flags(qkv_bias=("attention_bias", True), out_bias=False, block_norms=4)), LLAMA_IGNORED
    ),
    "cohere2": Family(
        flags_family(
            Flags(
                tied=True,
                norm="layernorm-noshift",
                block_norms=1,
                parallel_block=True,
                windows="period",
                period_key="sliding_window_pattern",
            )
        ),
        LLAMA_IGNORED | {"logit_scale", "use_qk_norm"},
    ),
    # MoE: Mixtral / Qwen-MoE plus flags.
    "qwen3_moe": Family(
        flags_family(
            Flags(
                qk_norm="head",
                head_dim="config",
                windows="use_sliding_window",
                moe=MoeFlags(
                    ("num_local_experts|num_experts", 128),
                    ("num_experts_per_tok", 8),
                    ("moe_intermediate_size", 768),
                    placement="qwen",
                ),
            )
        ),
        QWEN_IGNORED | MOE_IGNORED,
    ),
    "olmoe": Family(
        flags_family(
            Flags(
                qk_norm="projection",
                moe=MoeFlags(
                    ("num_experts|num_local_experts", 64), ("num_experts_per_tok", 8), ("intermediate_size", 2048)
                ),
            )
        ),
        LLAMA_IGNORED | MOE_IGNORED | {"clip_qkv"},
    ),
    "granitemoe": Family(
        flags_family(
            Flags(moe=MoeFlags(("num_local_experts", 8), ("num_experts_per_tok", 2), ("intermediate_size", None)))
        ),
        LLAMA_IGNORED | MOE_IGNORED | GRANITE_SCALES,
    ),
    "granitemoeshared": Family(
        flags_family(
            Flags(
                moe=MoeFlags(
                    ("num_local_experts", 8),
                    ("num_experts_per_tok", 2),
                    ("intermediate_size", None),
                    shared_width=("shared_intermediate_size", 0),
                )
            )
        ),
        LLAMA_IGNORED | MOE_IGNORED | GRANITE_SCALES,
    ),
    "phimoe": Family(
        flags_family(
            Flags(
                norm="layernorm",
                windows="every-layer",
                moe=MoeFlags(("num_local_experts", 16), ("num_experts_per_tok", 2), ("intermediate_size", None)),
            )
        ),
        LLAMA_IGNORED | MOE_IGNORED | {"original_max_position_embeddings"},
        refused=(LM_HEAD_BIAS,),
    ),
    "minimax_m2": Family(
        flags_family(
            Flags(
                qkv_bias=False,
                out_bias=False,
                qk_norm="projection",
                rotary_dim=True,
                moe=MoeFlags(
                    ("num_local_experts|num_experts", 256), ("num_experts_per_tok", 8), ("intermediate_size", None)
                ),
            )
        ),
        LLAMA_IGNORED | MOE_IGNORED | {"scoring_func", "use_routing_bias", "qk_norm_type"},
        # MiniMax's own keys that MiniMaxM2Config does not declare and the model never builds: the MTP modules
        # (num_mtp_modules, mtp_transformer_layers) and a shared expert of width 0.
        unused=frozenset({"num_mtp_modules", "mtp_transformer_layers", "shared_intermediate_size", "use_mtp"}),
    ),
    "glm4_moe": Family(
        flags_family(
            Flags(
                head_dim="floor",
                out_bias=False,
                qk_norm="head",
                qk_norm_switch=("use_qk_norm", False),
                moe=GLM4_MOE,
                mtp_key="num_nextn_predict_layers|num_mtp_layers",
            )
        ),
        LLAMA_IGNORED | DEEPSEEK_LIKE_ROUTING,
    ),
    "dots1": Family(
        flags_family(
            Flags(
                qk_norm="head",
                windows="max_window_layers",
                moe=MoeFlags(
                    ("n_routed_experts|num_local_experts", None),
                    ("num_experts_per_tok", None),
                    ("moe_intermediate_size", 1408),
                    shared=("n_shared_experts", None),
                    placement="first_k_dense",
                    first_dense_default=1,
                ),
            )
        ),
        LLAMA_IGNORED | DEEPSEEK_LIKE_ROUTING,
    ),
    "ernie4_5_moe": Family(
        flags_family(
            Flags(
                tied=True,
                qkv_bias=("use_bias", False),
                out_bias=("use_bias", False),
                mlp_bias=("use_bias", False),
                moe=MoeFlags(
                    ("moe_num_experts|num_experts", 64),
                    ("moe_k|num_experts_per_tok", 6),
                    ("moe_intermediate_size", 1536),
                    shared=("moe_num_shared_experts", 2),
                    placement="ernie",
                    router_bias=True,
                ),
            )
        ),
        LLAMA_IGNORED | MOE_IGNORED | {"moe_norm_min"},
        refused=(ERNIE_HEAD_BIAS,),
    ),
    "exaone_moe": Family(
        flags_family(
            replace(
                EXAONE4,
                moe=MoeFlags(
                    ("num_experts", 64),
                    ("num_experts_per_tok", 8),
                    ("moe_intermediate_size", 1024),
                    shared=("num_shared_experts", 1),
                    placement="mlp_layer_types",
                    first_dense_default=1,
                ),
            )
        ),
        LLAMA_IGNORED | DEEPSEEK_LIKE_ROUTING,
    ),
    "hunyuan_v1_moe": Family(
        flags_family(
            Flags(
                head_dim="required",
                qk_norm="head",
                moe=MoeFlags(
                    ("num_experts|num_local_experts", 1),
                    ("moe_topk|num_experts_per_tok", 1),
                    ("intermediate_size", None),
                    shared_width=("intermediate_size", None),
                ),
            )
        ),
        LLAMA_IGNORED | MOE_IGNORED | {"eod_token_id"},
    ),
}
