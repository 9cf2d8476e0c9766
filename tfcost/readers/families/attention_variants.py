"""Readers for the attention variants of 2025-26 (issue 11): gpt-oss, Gemma 3, Llama 4 (and the `mistral3` wrapper,
which needs no reader of its own: tfcost.readers.hf_config descends into its `text_config`, a `mistral` model).

Each is exact against transformers 5.24 (tests/test_truth_attention_variants.py): what differs from Llama is read
from the config as data, the layer stack is written out where layers differ (docs/family-truth.md, "Per
model_type"). Wrappers (`gemma3`, `llama4`) are read through their `text_config` by tfcost.readers.hf_config.
"""

from __future__ import annotations

from typing import Any

from tfcost.errors import TfcostError
from tfcost.readers.families.base import (
    LLAMA_IGNORED,
    MOE_ROUTING,
    Family,
    Fields,
    LlamaFlags,
    Reader,
    Refusal,
    causal_lm_head,
    llama_family,
    llama_like,
    sizes,
    sliding_layers_from_types,
    windows,
)


def with_defaults(defaults: dict[str, Any], read: Reader) -> Reader:
    """A reader that takes the config class's defaults for the sizes a file leaves out: the Hub writes a wrapper's
    `text_config` sparsely (Gemma 3 4B lists 5 keys), and transformers fills the rest from its config class."""

    def read_with_defaults(fields: Fields) -> dict[str, Any]:
        fields.config = {**defaults, **fields.config}
        return read(fields)

    return read_with_defaults


def grouped(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A per-layer list of LayerSpec mappings written as the schema's `layers` groups: one pattern repeated when
    the stack is periodic (Llama 4 Maverick: [chunked+dense, chunked+moe, chunked+dense, full+moe] x 12), else
    runs of equal layers."""
    count = len(specs)
    for period in range(1, count + 1):
        if count % period == 0 and specs == specs[:period] * (count // period):
            return [{"pattern": specs[:period], "repeat": count // period}]
    raise AssertionError("unreachable: the whole list is its own period")  # pragma: no cover


# gpt-oss (OpenAI 2025, "gpt-oss-120b & gpt-oss-20b Model Card") ----------------------------------------------


def read_gpt_oss(fields: Fields) -> dict[str, Any]:
    """GptOssForCausalLM: Llama-like GQA with q/k/v/o biases (`attention_bias`) and one learned sink logit per
    query head; every layer an MoE whose router and experts carry biases (`gate_up_proj_bias`, `down_proj_bias`),
    no shared expert; `layer_types` alternate a 128-token sliding window and full attention."""
    shape = llama_like(fields, head_dim_default=None, tied_default=False, biases=False)
    attention_bias = fields.bool("attention_bias", True)
    # Only the experts are MLPs here: their biases are the "mlp" biases.
    shape["bias"] = {"qkv": attention_bias, "attn_out": attention_bias, "mlp": True}
    shape["attention_sinks"] = True
    shape["moe"] = {
        "n_experts": fields.int("num_local_experts"),
        "experts_per_token": fields.int("num_experts_per_tok", 4),
        "expert_d_ff": shape["d_ff"],
        "router_bias": True,
    }
    layers = shape["n_layers"]
    explicit = sliding_layers_from_types(fields, layers)
    # GptOssConfig: without layer_types, even layers slide and odd ones are full.
    chosen = explicit if explicit is not None else list(range(0, layers, 2))
    return {**shape, **windows(fields.nullable_int("sliding_window", 128), chosen, layers)}


# Gemma 3 (Gemma Team 2025, arXiv:2503.19786) ------------------------------------------------------------------

read_gemma_base = llama_family(LlamaFlags(head_dim_default=256, tied_default=True, bias="attention", qk_norm=True))


def read_gemma3_text(fields: Fields) -> dict[str, Any]:
    """Gemma3ForCausalLM: Gemma-2's block (4 RMSNorms, tied and scaled embeddings) with per-head q/k RMSNorm and 5
    local : 1 global layers (`layer_types`, or `sliding_window_pattern`: every n-th layer is global)."""
    shape = read_gemma_base(fields)
    shape["block_norms"] = 4  # input, post-attention, pre-feedforward and post-feedforward RMSNorms
    layers = shape["n_layers"]
    pattern = fields.int("sliding_window_pattern", 6)
    if pattern < 1:
        raise fields.wrong("sliding_window_pattern", "a positive integer", pattern)
    explicit = sliding_layers_from_types(fields, layers)
    chosen = explicit if explicit is not None else [i for i in range(layers) if (i + 1) % pattern]
    return {**shape, **windows(fields.nullable_int("sliding_window", 4096), chosen, layers)}


# Llama 4 (Meta 2025, "The Llama 4 herd"; transformers' modeling_llama4.py) -------------------------------------


def read_llama4_text(fields: Fields) -> dict[str, Any]:
    """Llama4ForCausalLM: GQA attention, RoPE layers attending within chunks of `attention_chunk_size` and NoPE
    full-attention layers (`no_rope_layers[i]` = 0: every `no_rope_layer_interval`-th); MoE layers (`moe_layers`,
    or every `interleave_moe_layer_step`-th) of E experts top-k plus one shared expert, both of
    `intermediate_size`; the other layers a dense SwiGLU of `intermediate_size_mlp`. The qk norm is a
    parameter-free L2 norm."""
    causal_lm_head(fields)
    shape = sizes(fields)
    layers = shape["n_layers"]
    heads = shape["n_heads"]
    attention_bias = fields.bool("attention_bias", False)
    expert_width = fields.int("intermediate_size", 8192)
    shape.update(
        n_kv_heads=fields.int("num_key_value_heads", heads),
        head_dim=fields.int("head_dim", 128),
        d_ff=fields.int("intermediate_size_mlp", 16384),
        mlp="gated",
        norm="rmsnorm",
        bias={"qkv": attention_bias, "attn_out": attention_bias, "mlp": False},
        tied_embeddings=fields.bool("tie_word_embeddings", False),
        position="rotary",
        max_seq_len=fields.int("max_position_embeddings", 131072),
    )
    interval = fields.int("no_rope_layer_interval", 4)
    step = fields.int("interleave_moe_layer_step", 1)
    for key, value in (("no_rope_layer_interval", interval), ("interleave_moe_layer_step", step)):
        if value < 1:  # transformers itself divides by it
            raise fields.wrong(key, "a positive integer", value)
    rope = fields.list_of("no_rope_layers", int, None) or [int((i + 1) % interval != 0) for i in range(layers)]
    moe_layers = fields.list_of("moe_layers", int, None)
    moe_layers = set(range(step - 1, layers, step) if moe_layers is None else moe_layers)
    chunk = fields.nullable_int("attention_chunk_size", 8192)
    types = fields.list_of("layer_types", str, None)
    if types is None:
        types = ["chunked_attention" if uses and chunk is not None else "full_attention" for uses in rope]
    for key, values in (("no_rope_layers", rope), ("layer_types", types)):
        if len(values) != layers:
            raise TfcostError(f"llama4_text config: field '{key}' has {len(values)} entries for {layers} layers")
    if any(i not in range(layers) for i in moe_layers):
        raise TfcostError(f"llama4_text config: field 'moe_layers' names a layer outside 0..{layers - 1}")
    specs = []
    for i, kind in enumerate(types):
        if kind not in ("chunked_attention", "full_attention") or (kind == "chunked_attention" and chunk is None):
            raise TfcostError(f"llama4_text config: layer type '{kind}' in 'layer_types' is not supported here")
        spec: dict[str, Any] = {"ffn": "moe" if i in moe_layers else "dense", "rope": bool(rope[i])}
        if kind == "chunked_attention":
            spec["chunk"] = chunk
        specs.append(spec)
    shape["layers"] = grouped(specs)
    if moe_layers:
        shape["moe"] = {
            "n_experts": fields.int("num_local_experts", 16),
            "experts_per_token": fields.int("num_experts_per_tok", 1),
            "expert_d_ff": expert_width,
            "n_shared_experts": 1,  # Llama4TextMoe.shared_expert, a Llama4TextMLP of intermediate_size
        }
    fields.read.update({"num_local_experts", "num_experts_per_tok"})  # unused sizes when no layer is MoE
    return shape


# Gemma 4 (transformers' modeling_gemma4.py; Google 2026) --------------------------------------------------------


def per_layer_overrides(fields: Fields, layers: int, types: list[str]) -> dict[int, dict[str, int]]:
    """Gemma4TextConfig's per_layer_config: {layer index: {head_dim, num_key_value_heads}}. Without it, the global
    layers take `global_head_dim` (default 512) and, when `attention_k_eq_v`, `num_global_key_value_heads`."""
    given = fields.raw("per_layer_config", None)
    k_eq_v = fields.bool("attention_k_eq_v", False)
    global_head_dim = fields.int("global_head_dim", 512)
    global_kv_heads = fields.int("num_global_key_value_heads", None)
    if given is None:
        override = {"head_dim": global_head_dim}
        if k_eq_v and global_kv_heads is not None:
            override["num_key_value_heads"] = global_kv_heads
        return {i: override for i, kind in enumerate(types) if kind == "full_attention"}
    if not isinstance(given, dict):
        raise fields.wrong("per_layer_config", "a mapping of layer index to sizes", given)
    overrides: dict[int, dict[str, int]] = {}
    for key, sizes_of_layer in given.items():
        index = int(key) if isinstance(key, str) and key.isascii() and key.isdigit() and len(key) < 10 else key
        if not isinstance(index, int) or not 0 <= index < layers or not isinstance(sizes_of_layer, dict):
            raise fields.wrong("per_layer_config", f"layer indices 0..{layers - 1} with their sizes", key)
        unknown = set(sizes_of_layer) - {"head_dim", "num_key_value_heads"}
        if unknown:
            raise TfcostError(
                f"gemma4_text config: per_layer_config sets {sorted(unknown)}, which tfcost does not read"
            )
        for name, value in sizes_of_layer.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise fields.wrong(f"per_layer_config.{key}.{name}", "a positive integer", value)
        overrides[index] = dict(sizes_of_layer)
    return overrides


def kv_shared_layers(fields: Fields, types: list[str], default: int) -> int:
    """`num_kv_shared_layers`: the last n layers read the keys and values of the last earlier layer of their type
    (Gemma3nTextConfig / Gemma4TextConfig kv_sharing_modes), so every type must have an earlier layer."""
    layers = len(types)
    shared = fields.int("num_kv_shared_layers", default)
    if not 0 <= shared < layers or set(types[: layers - shared]) != set(types):
        raise fields.wrong(
            "num_kv_shared_layers", "fewer than the layers, leaving a layer of each type to share", shared
        )
    return shared


def read_gemma4_text(fields: Fields) -> dict[str, Any]:
    """Gemma4ForCausalLM: Gemma 3's block (4 norms, per-head q/k norm, tied scaled embeddings, 5 local : 1 global,
    the last layer always global) with per-layer sizes: the global layers' head_dim and KV heads
    (`per_layer_config`), values taken from the keys on global layers (`attention_k_eq_v`), the last
    `num_kv_shared_layers` layers reading the KV of the last earlier layer of their type (no k/v projections, no
    cache; `use_double_wide_mlp` doubles their MLP), and per-layer embeddings of `hidden_size_per_layer_input`."""
    shape = read_gemma_base(fields)
    shape["block_norms"] = 4
    layers, d_ff = shape["n_layers"], shape["d_ff"]
    types = fields.list_of("layer_types", str, None)
    if types is None:
        types = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(layers)]
    if len(types) != layers:
        raise TfcostError(f"gemma4_text config: field 'layer_types' has {len(types)} entries for {layers} layers")
    types = [*types[:-1], "full_attention"]  # Gemma4TextConfig forces the last layer global
    if set(types) - {"sliding_attention", "full_attention"}:
        raise TfcostError(f"gemma4_text config: layer types {sorted(set(types))} are not all supported")
    overrides = per_layer_overrides(fields, layers, types)
    k_eq_v = fields.bool("attention_k_eq_v", False)
    shared = kv_shared_layers(fields, types, 0)
    double_wide = fields.bool("use_double_wide_mlp", False)
    moe_block = fields.bool("enable_moe_block", False)
    window = fields.int("sliding_window", 512)
    specs = []
    for i, kind in enumerate(types):
        spec: dict[str, Any] = {"ffn": "dense+moe"} if moe_block else {}
        if kind == "sliding_attention":
            spec["window"] = window
        sizes_of_layer = overrides.get(i, {})
        if sizes_of_layer.get("head_dim", shape["head_dim"]) != shape["head_dim"]:
            spec["head_dim"] = sizes_of_layer["head_dim"]
        if sizes_of_layer.get("num_key_value_heads", shape["n_kv_heads"]) != shape["n_kv_heads"]:
            spec["kv_heads"] = sizes_of_layer["num_key_value_heads"]
        if i >= layers - shared:
            spec["kv_shared"] = True
            if double_wide:
                spec["d_ff"] = 2 * d_ff
        elif k_eq_v and kind == "full_attention":
            spec["values_from_keys"] = True
        specs.append(spec)
    shape["layers"] = grouped(specs)
    per_layer = fields.nullable_int("hidden_size_per_layer_input", 256)
    if per_layer:
        shape["per_layer_embedding_dim"] = per_layer
        shape["per_layer_embedding_vocab"] = fields.int("vocab_size_per_layer_input", 262144)
    if moe_block:  # Gemma4TextRouter and Gemma4TextExperts beside the MLP in every layer
        shape["moe"] = {
            "n_experts": fields.int("num_experts"),
            "experts_per_token": fields.int("top_k_experts"),
            "expert_d_ff": fields.int("moe_intermediate_size"),
            "router_scales": True,
        }
    fields.read.update({"vocab_size_per_layer_input", "num_experts", "top_k_experts", "moe_intermediate_size"})
    return shape


# Gemma 3n (Google 2025; transformers' modeling_gemma3n.py) ------------------------------------------------------


def read_gemma3n_text(fields: Fields) -> dict[str, Any]:
    """Gemma3nForCausalLM: Gemma 3's attention block (4 norms, per-head q/k norm, tied scaled embeddings) with 4 local
    : 1 global layers, a dense MLP whose width may differ per layer (`intermediate_size` as a list), the last
    `num_kv_shared_layers` layers reading an earlier layer's keys and values, per-layer embeddings, AltUp over
    `altup_num_inputs` streams and a LAuReL branch of `laurel_rank` (tfcost.core.layers.altup). Activation sparsity
    (`activation_sparsity_pattern`) changes no matmul."""
    widths = fields.raw("intermediate_size", 16384)
    layers = fields.int("num_hidden_layers", 35)
    if isinstance(widths, int) and not isinstance(widths, bool):
        widths = [widths] * layers
    if not isinstance(widths, list) or len(widths) != layers or not all(is_width(width) for width in widths):
        raise fields.wrong("intermediate_size", f"a positive integer or a list of {layers}", widths)
    fields.config = {**fields.config, "intermediate_size": widths[0]}  # the model's; layers that differ say so
    shape = read_gemma_base(fields)
    shape["block_norms"] = 4
    types = fields.list_of("layer_types", str, None)
    if types is None:
        types = ["full_attention" if (i + 1) % 5 == 0 else "sliding_attention" for i in range(layers)]
    if len(types) != layers or set(types) - {"sliding_attention", "full_attention"}:
        raise fields.wrong("layer_types", f"{layers} of 'sliding_attention' and 'full_attention'", types)
    shared = kv_shared_layers(fields, types, 15)
    window = fields.int("sliding_window", 512)
    specs = []
    for i, kind in enumerate(types):
        spec: dict[str, Any] = {"window": window} if kind == "sliding_attention" else {}
        if widths[i] != widths[0]:
            spec["d_ff"] = widths[i]
        if i >= layers - shared:
            spec["kv_shared"] = True
        specs.append(spec)
    shape["layers"] = grouped(specs)
    shape["per_layer_embedding_dim"] = fields.int("hidden_size_per_layer_input", 256)
    shape["per_layer_embedding_vocab"] = fields.int("vocab_size_per_layer_input", 262144)
    shape["altup_streams"] = fields.int("altup_num_inputs", 4)
    shape["laurel_rank"] = fields.int("laurel_rank", 64)
    return shape


def is_width(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


GEMMA_REFUSED = (
    Refusal("use_bidirectional_attention", "bool", None, (None, False), "it changes which scores are kept"),
)
GEMMA3_HARMLESS = LLAMA_IGNORED | {
    "query_pre_attn_scalar", "attn_logit_softcapping", "final_logit_softcapping", "cache_implementation",
    "rope_local_base_freq",
    # 5.24 saves the pattern it derived layer_types from under a private name; it reads only `sliding_window_pattern`.
    "_sliding_window_pattern",
}  # fmt: skip
LLAMA4_HARMLESS = LLAMA_IGNORED | MOE_ROUTING | {
    # The qk norm is an L2 norm without parameters; attention temperature tuning scales NoPE layers' queries.
    "use_qk_norm", "attn_temperature_tuning", "floor_scale", "attn_scale",
}  # fmt: skip

# The config classes' defaults for the sizes (transformers 5.24: GptOssConfig, Gemma3TextConfig, Llama4TextConfig).
GPT_OSS_DEFAULTS = {
    "vocab_size": 201088, "hidden_size": 2880, "num_hidden_layers": 36, "num_attention_heads": 64,
    "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 2880, "num_local_experts": 128,
    "max_position_embeddings": 131072,
}  # fmt: skip
GEMMA3_TEXT_DEFAULTS = {
    "vocab_size": 262208, "hidden_size": 2304, "num_hidden_layers": 26, "num_attention_heads": 8,
    "num_key_value_heads": 4, "head_dim": 256, "intermediate_size": 9216, "max_position_embeddings": 131072,
}  # fmt: skip
GEMMA4_TEXT_DEFAULTS = {
    "vocab_size": 262144, "hidden_size": 2304, "num_hidden_layers": 30, "num_attention_heads": 8,
    "num_key_value_heads": 4, "head_dim": 256, "intermediate_size": 9216, "max_position_embeddings": 131072,
}  # fmt: skip
GEMMA3N_TEXT_DEFAULTS = {
    "vocab_size": 262400, "hidden_size": 2048, "num_hidden_layers": 35, "num_attention_heads": 8,
    "num_key_value_heads": 2, "head_dim": 256,
    "max_position_embeddings": 32768,
}  # fmt: skip
LLAMA4_TEXT_DEFAULTS = {"vocab_size": 202048, "hidden_size": 5120, "num_hidden_layers": 48, "num_attention_heads": 40}

FAMILIES: dict[str, Family] = {
    "gpt_oss": Family(
        with_defaults(GPT_OSS_DEFAULTS, read_gpt_oss),
        # OpenAI's Hub files also carry their own names: experts_per_token (always num_experts_per_tok's value) and
        # initial_context_length (the YaRN original length, also in rope_scaling). transformers reads neither, and
        # carries both through a re-save, so they are ignored silently.
        LLAMA_IGNORED | MOE_ROUTING | {"swiglu_limit", "swiglu_alpha", "experts_per_token", "initial_context_length"},
    ),
    "gemma3_text": Family(
        with_defaults(GEMMA3_TEXT_DEFAULTS, read_gemma3_text), GEMMA3_HARMLESS, refused=GEMMA_REFUSED
    ),
    "gemma3n_text": Family(
        with_defaults(GEMMA3N_TEXT_DEFAULTS, read_gemma3n_text),
        GEMMA3_HARMLESS | {"altup_active_idx", "altup_coef_clip", "altup_correct_scale", "activation_sparsity_pattern"},
        refused=GEMMA_REFUSED,
    ),
    "gemma4_text": Family(
        with_defaults(GEMMA4_TEXT_DEFAULTS, read_gemma4_text),
        GEMMA3_HARMLESS,
        refused=(
            Refusal("use_bidirectional_attention", "text", None, (None, "vision"), "it changes which scores are kept"),
        ),
    ),
    "llama4_text": Family(with_defaults(LLAMA4_TEXT_DEFAULTS, read_llama4_text), LLAMA4_HARMLESS),
}
