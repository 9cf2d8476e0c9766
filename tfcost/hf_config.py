"""A Hugging Face config.json, mapped onto tfcost's model schema. Pure: a dict in, a preset mapping out, no I/O.

Each supported `model_type` has a reader that takes the fields that change costs, with transformers' own defaults
for the ones a config may leave out, and lists the fields it ignores because they change no count (dropout,
initialisation, rotary base, token ids, ...). Any other key is an error naming it: a field tfcost does not
understand might change costs, so it is never silently dropped. Reading the file is tfcost.presets' job.
"""

from __future__ import annotations

import builtins  # Fields.int shadows the name inside the class
import math
from collections.abc import Callable
from typing import Any

from tfcost.errors import TfcostError

# Keys of transformers' PretrainedConfig and of saved configs that never change a count.
COMMON_IGNORED = frozenset(
    {
        "_name_or_path", "_commit_hash", "auto_map", "transformers_version", "torch_dtype", "dtype", "use_cache",
        "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id",
        "initializer_range", "return_dict", "output_hidden_states", "output_attentions", "torchscript",
        "id2label", "label2id", "num_labels", "problem_type", "finetuning_task", "tokenizer_class", "prefix",
        "task_specific_params", "gradient_checkpointing", "max_length", "min_length", "do_sample", "num_beams",
        "temperature", "top_k", "top_p", "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
        "early_stopping", "num_return_sequences", "output_past", "chunk_size_feed_forward",
        # Weights stored quantized (DeepSeek-V3's fp8 checkpoint) are still the same parameters.
        "quantization_config",
    }
)  # fmt: skip
# Shared by the rotary families: the base and scaling of the rotation change no count.
ROTARY_IGNORED = frozenset({"rope_theta", "rope_scaling", "rope_parameters", "rope_type"})
DROPOUTS = frozenset(
    {
        "attention_dropout", "hidden_dropout", "resid_pdrop", "embd_pdrop", "attn_pdrop", "dropout_rate",
        "hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout",
    }
)  # fmt: skip
ACTIVATIONS_AND_EPS = frozenset(
    {
        "hidden_act", "hidden_activation", "activation_function", "activation", "dense_act_fn",
        "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon",
    }
)  # fmt: skip
BASE_IGNORED = COMMON_IGNORED | DROPOUTS | ACTIVATIONS_AND_EPS

REQUIRED = object()


class Fields:
    """Typed reads from a config dict. Every key read is recorded, so the keys left over can be refused."""

    def __init__(self, config: dict[str, Any], model_type: str) -> None:
        self.config, self.model_type, self.read = config, model_type, {"model_type"}

    def raw(self, key: str, default: Any) -> Any:
        self.read.add(key)
        value = self.config.get(key)
        if value is None:
            if default is REQUIRED:
                raise TfcostError(f"{self.model_type} config: missing field '{key}'")
            return default
        return value

    def wrong(self, key: str, expected: str, value: Any) -> TfcostError:
        return TfcostError(f"{self.model_type} config: field '{key}' should be {expected}, not {value!r}")

    def int(self, key: str, default: Any = REQUIRED) -> Any:
        value = self.raw(key, default)
        if value is not default and (not isinstance(value, int) or isinstance(value, bool)):
            raise self.wrong(key, "an integer", value)
        return value

    def nullable_int(self, key: str, default: builtins.int | None) -> builtins.int | None:
        """An integer that a config may set to null on purpose: `default` applies only when the key is absent."""
        if key in self.config and self.config[key] is None:
            self.read.add(key)
            return None
        return self.int(key, default)

    def bool(self, key: str, default: bool | None) -> Any:
        value = self.raw(key, default)
        if value is not default and not isinstance(value, bool):
            raise self.wrong(key, "true or false", value)
        return value

    def number(self, key: str, default: float) -> float:
        return self.finite(key, self.raw(key, default))

    def number_in(self, mapping: dict[str, Any], key: str, label: str, default: float) -> float:
        """A number inside a nested mapping (`label` names it in errors)."""
        return self.finite(label, mapping.get(key, default))

    def finite(self, label: str, value: Any) -> float:
        """A JSON number as a float: a 400-digit integer or 1e400 (read as infinity) is no number tfcost can use."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.wrong(label, "a number", value)
        try:
            number = float(value)
        except OverflowError:
            raise self.wrong(label, "a finite number", f"{len(str(value))} digits") from None
        if not math.isfinite(number):
            raise self.wrong(label, "a finite number", value)
        return number

    def text(self, key: str, default: Any = REQUIRED) -> Any:
        value = self.raw(key, default)
        if value is not default and not isinstance(value, str):
            raise self.wrong(key, "a string", value)
        return value

    def list_of(self, key: str, kind: type, default: Any) -> Any:
        value = self.raw(key, default)
        if value is not default and (
            not isinstance(value, list) or any(not isinstance(item, kind) or isinstance(item, bool) for item in value)
        ):
            raise self.wrong(key, f"a list of {kind.__name__}", value)
        return value

    def require(self, key: str, allowed: object, value: object) -> None:
        """A field whose other values would change costs in a way tfcost does not model."""
        if value != allowed:
            raise TfcostError(f"{self.model_type} config: field '{key}' = {value!r} is not supported ({allowed!r} is)")

    def refuse_unknown(self, ignored: frozenset[str]) -> None:
        unknown = sorted(set(self.config) - self.read - ignored)
        if unknown:
            raise TfcostError(
                f"{self.model_type} config: unrecognised field '{unknown[0]}'"
                + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else "")
                + "; tfcost cannot tell whether it changes costs"
            )


def causal_lm_head(fields: Fields, suffixes: tuple[str, ...] = ("ForCausalLM", "LMHeadModel")) -> None:
    """The reader prices a language-model head; a config saved for another task head is refused."""
    architectures = fields.list_of("architectures", str, None)
    for name in architectures or ():
        if not name.endswith(suffixes):
            raise TfcostError(
                f"{fields.model_type} config: architectures '{name}' has a task head tfcost does not price "
                f"(supported: *{', *'.join(suffixes)})"
            )


def rotary_fraction(fields: Fields, key: str = "partial_rotary_factor", default: float = 1.0) -> float:
    """Share of each head rotated: a top-level key (`partial_rotary_factor`, GPT-NeoX's `rotary_pct`), else the
    one in transformers 5's `rope_parameters`."""
    if key in fields.config:
        return fields.number(key, default)
    nested = fields.config.get("rope_parameters")
    if isinstance(nested, dict) and "partial_rotary_factor" in nested:
        return fields.number_in(nested, "partial_rotary_factor", "rope_parameters.partial_rotary_factor", default)
    return default


def sliding_layers_from_types(fields: Fields, layers: int) -> list[int] | None:
    """Indices of "sliding_attention" layers in an explicit `layer_types` list, or None if there is none."""
    types = fields.list_of("layer_types", str, None)
    if types is None:
        return None
    if len(types) != layers:
        raise TfcostError(
            f"{fields.model_type} config: field 'layer_types' has {len(types)} entries for {layers} layers"
        )
    for kind in types:
        if kind not in ("full_attention", "sliding_attention"):
            raise TfcostError(f"{fields.model_type} config: layer type '{kind}' in 'layer_types' is not supported")
    return [i for i, kind in enumerate(types) if kind == "sliding_attention"]


def windows(window: int | None, layers: list[int], total: int) -> dict[str, Any]:
    """The schema's sliding-window fields: none when no layer slides, no list when every layer does."""
    if window is None or not layers:
        return {}
    return {"sliding_window": window, **({} if len(layers) == total else {"sliding_layers": layers})}


# Readers build per-layer lists (which layers slide, which stay dense), so a config may not claim more layers than
# a list can hold; a preset or --set may still ask for 10^15 layers, as those lists are then not built.
MAX_CONFIG_LAYERS = 1_000_000


def sizes(fields: Fields) -> dict[str, Any]:
    """The sizes under their usual transformers names: vocab_size, hidden_size, num_hidden_layers and
    num_attention_heads."""
    layers = fields.int("num_hidden_layers")
    if layers > MAX_CONFIG_LAYERS:
        raise TfcostError(
            f"{fields.model_type} config: num_hidden_layers ({layers:,}) is more than a config.json is read for "
            f"({MAX_CONFIG_LAYERS:,}); write a preset, or use --set n_layers=..."
        )
    return {
        "vocab_size": fields.int("vocab_size"),
        "d_model": fields.int("hidden_size"),
        "n_layers": layers,
        "n_heads": fields.int("num_attention_heads"),
    }


def decoder_core(fields: Fields, *, head_dim: int | None = None) -> dict[str, Any]:
    """The fields every Llama-like decoder shares: sizes, GQA, rotary positions, RMSNorm, a gated MLP."""
    shape = sizes(fields)
    return {
        **shape,
        "n_kv_heads": fields.int("num_key_value_heads", shape["n_heads"]),
        **({"head_dim": head_dim} if head_dim is not None else {}),
        "d_ff": fields.int("intermediate_size"),
        "mlp": "gated",
        "norm": "rmsnorm",
        "position": "rotary",
        "max_seq_len": fields.int("max_position_embeddings"),
    }


def llama_like(fields: Fields, *, head_dim_default: int | None, tied_default: bool, biases: bool) -> dict[str, Any]:
    """Llama and its close relatives: optional head_dim, tied or untied head, attention_bias/mlp_bias flags."""
    causal_lm_head(fields)
    head_dim = fields.int("head_dim", head_dim_default)
    shape = decoder_core(fields, head_dim=head_dim)
    shape["tied_embeddings"] = fields.bool("tie_word_embeddings", tied_default)
    if biases:
        attention_bias = fields.bool("attention_bias", False)
        shape["bias"] = {"qkv": attention_bias, "attn_out": attention_bias, "mlp": fields.bool("mlp_bias", False)}
    fraction = rotary_fraction(fields)
    if fraction != 1:
        shape["rotary_fraction"] = fraction
    return shape


def read_gpt2(fields: Fields) -> dict[str, Any]:
    causal_lm_head(fields)
    fields.require("add_cross_attention", False, fields.bool("add_cross_attention", False))
    width = fields.int("n_embd")
    return {
        "vocab_size": fields.int("vocab_size"),
        "d_model": width,
        "n_layers": fields.int("n_layer"),
        "n_heads": fields.int("n_head"),
        "d_ff": fields.int("n_inner", 4 * width),  # GPT2MLP: n_inner, or 4 * n_embd when null
        "mlp": "plain",
        "norm": "layernorm",
        "bias": {"qkv": True, "attn_out": True, "mlp": True},
        "tied_embeddings": fields.bool("tie_word_embeddings", True),
        "position": "learned",
        "max_seq_len": fields.int("n_positions"),
    }


def read_llama(fields: Fields) -> dict[str, Any]:
    return llama_like(fields, head_dim_default=None, tied_default=False, biases=True)


def read_mistral(fields: Fields) -> dict[str, Any]:
    shape = llama_like(fields, head_dim_default=None, tied_default=False, biases=False)
    # MistralConfig's default window is 4096, on every layer; later Mistral configs say null.
    window = fields.nullable_int("sliding_window", 4096)
    return {**shape, **windows(window, list(range(shape["n_layers"])), shape["n_layers"])}


def read_mixtral(fields: Fields) -> dict[str, Any]:
    shape = llama_like(fields, head_dim_default=None, tied_default=False, biases=False)
    window = fields.int("sliding_window", None)
    shape["moe"] = {
        "n_experts": fields.int("num_local_experts"),
        "experts_per_token": fields.int("num_experts_per_tok"),
        "expert_d_ff": shape["d_ff"],  # every Mixtral block is sparse; its experts have the intermediate_size
    }
    return {**shape, **windows(window, list(range(shape["n_layers"])), shape["n_layers"])}


def qwen_windows(fields: Fields, layers: int, pattern: Callable[[int, int], bool]) -> dict[str, Any]:
    """Qwen's sliding windows: only with use_sliding_window (the configs carry a window they do not use), on the
    layers `layer_types` names or, without it, those `pattern(index, max_window_layers)` picks."""
    use = fields.bool("use_sliding_window", False)
    window = fields.int("sliding_window", None)
    max_window_layers = fields.int("max_window_layers", 28)
    explicit = sliding_layers_from_types(fields, layers)
    if not use:
        return {}
    chosen = explicit if explicit is not None else [i for i in range(layers) if pattern(i, max_window_layers)]
    return windows(window, chosen, layers)


def read_qwen2(fields: Fields) -> dict[str, Any]:
    shape = llama_like(fields, head_dim_default=None, tied_default=False, biases=False)
    shape["bias"] = {"qkv": True, "attn_out": False, "mlp": False}  # Qwen2Attention: q/k/v biases, always
    # Qwen2Config: layers from max_window_layers on slide.
    return {**shape, **qwen_windows(fields, shape["n_layers"], lambda i, top: i >= top)}


def read_qwen2_moe(fields: Fields) -> dict[str, Any]:
    shape = llama_like(fields, head_dim_default=None, tied_default=False, biases=False)
    qkv_bias = fields.bool("qkv_bias", True)
    shape["bias"] = {"qkv": qkv_bias, "attn_out": False, "mlp": False}
    layers = shape["n_layers"]
    experts = fields.int("num_experts")
    step = fields.int("decoder_sparse_step", 1)
    if step < 1:  # every step-th layer is sparse: transformers itself divides by it
        raise fields.wrong("decoder_sparse_step", "a positive integer", step)
    dense_only = set(fields.list_of("mlp_only_layers", int, []))  # a set: one look-up per layer, not one search
    if experts > 0:  # Qwen2MoeDecoderLayer: sparse unless in mlp_only_layers or off the decoder_sparse_step grid
        dense = [i for i in range(layers) if i in dense_only or (i + 1) % step]
        if len(dense) < layers:
            shape["moe"] = {
                "n_experts": experts,
                "experts_per_token": fields.int("num_experts_per_tok"),
                "expert_d_ff": fields.int("moe_intermediate_size"),
                "n_shared_experts": 1,
                "shared_expert_d_ff": fields.int("shared_expert_intermediate_size"),
                "shared_expert_gate": True,
                **({"dense_layers": dense} if dense else {}),
            }
    # Without sparse layers the expert sizes are unused, and so not unknown either.
    fields.read.update({"num_experts_per_tok", "moe_intermediate_size", "shared_expert_intermediate_size"})
    # Qwen2MoeConfig: even-numbered layers below max_window_layers slide.
    return {**shape, **qwen_windows(fields, layers, lambda i, top: (i + 1) % 2 == 1 and i < top)}


def read_qwen3(fields: Fields) -> dict[str, Any]:
    shape = llama_like(fields, head_dim_default=128, tied_default=False, biases=False)
    attention_bias = fields.bool("attention_bias", False)
    shape["bias"] = {"qkv": attention_bias, "attn_out": attention_bias, "mlp": False}
    shape["qk_norm"] = True
    return {**shape, **qwen_windows(fields, shape["n_layers"], lambda i, top: i >= top)}


def read_gemma(fields: Fields) -> dict[str, Any]:
    shape = llama_like(fields, head_dim_default=256, tied_default=True, biases=False)
    attention_bias = fields.bool("attention_bias", False)
    shape["bias"] = {"qkv": attention_bias, "attn_out": attention_bias, "mlp": False}
    # Bidirectional Gemma changes which score entries the mask keeps.
    fields.require("use_bidirectional_attention", False, bool(fields.bool("use_bidirectional_attention", None)))
    return shape


def read_gemma2(fields: Fields) -> dict[str, Any]:
    shape = read_gemma(fields)
    shape["block_norms"] = 4  # input, post-attention, pre-feedforward and post-feedforward RMSNorms
    layers = shape["n_layers"]
    explicit = sliding_layers_from_types(fields, layers)
    chosen = explicit if explicit is not None else list(range(0, layers, 2))  # Gemma2Config: even layers slide
    return {**shape, **windows(fields.int("sliding_window", 4096), chosen, layers)}


def read_phi3(fields: Fields) -> dict[str, Any]:
    shape = llama_like(fields, head_dim_default=None, tied_default=False, biases=False)
    window = fields.int("sliding_window", None)
    return {**shape, **windows(window, list(range(shape["n_layers"])), shape["n_layers"])}


def read_falcon(fields: Fields) -> dict[str, Any]:
    causal_lm_head(fields)
    shape = sizes(fields)
    heads, width = shape["n_heads"], shape["d_model"]
    new_architecture = fields.bool("new_decoder_architecture", False)
    multi_query = fields.bool("multi_query", True)
    parallel = fields.bool("parallel_attn", True)
    # FalconAttention: grouped K/V heads in the new architecture, one shared K/V head with multi_query, else MHA.
    kv_heads = fields.int("num_kv_heads", heads) if new_architecture else 1 if multi_query else heads
    # FalconDecoderLayer: two norms unless the block is parallel with one input norm (Falcon-7B).
    norms_in_parallel = fields.int("num_ln_in_parallel_attn", 2 if new_architecture else None)
    bias = fields.bool("bias", False)
    return {
        **shape,
        "n_kv_heads": kv_heads,
        "d_ff": fields.int("ffn_hidden_size", 4 * width),
        "mlp": "plain",
        "norm": "layernorm",
        "bias": {"qkv": bias, "attn_out": bias, "mlp": bias},
        "tied_embeddings": fields.bool("tie_word_embeddings", True),
        "position": "alibi" if fields.bool("alibi", False) else "rotary",
        "max_seq_len": fields.int("max_position_embeddings", 2048),
        "block_norms": 1 if parallel and norms_in_parallel != 2 else 2,
        "parallel_block": parallel,
    }


def read_gpt_neox(fields: Fields) -> dict[str, Any]:
    causal_lm_head(fields)
    attention_bias = fields.bool("attention_bias", True)
    fraction = rotary_fraction(fields, "rotary_pct", 0.25)
    shape = {
        **sizes(fields),
        "d_ff": fields.int("intermediate_size"),
        "mlp": "plain",
        "norm": "layernorm",
        "bias": {"qkv": attention_bias, "attn_out": attention_bias, "mlp": True},
        "tied_embeddings": fields.bool("tie_word_embeddings", False),
        "position": "rotary",
        "max_seq_len": fields.int("max_position_embeddings"),
        "parallel_block": fields.bool("use_parallel_residual", True),
    }
    return {**shape, **({"rotary_fraction": fraction} if fraction != 1 else {})}


# BERT classes tfcost prices: their head and whether they build the pooler.
BERT_CLASSES = {"BertModel": ("none", True), "BertForMaskedLM": ("mlm", False)}


def read_bert(fields: Fields) -> dict[str, Any]:
    architectures = fields.list_of("architectures", str, ["BertModel"])
    if len(architectures) != 1 or architectures[0] not in BERT_CLASSES:
        raise TfcostError(
            f"bert config: architectures {architectures} is not supported (one of {', '.join(BERT_CLASSES)})"
        )
    head, pooler = BERT_CLASSES[architectures[0]]
    fields.require("position_embedding_type", "absolute", fields.text("position_embedding_type", "absolute"))
    fields.require("is_decoder", False, fields.bool("is_decoder", False))
    fields.require("add_cross_attention", False, fields.bool("add_cross_attention", False))
    return {
        "architecture": "encoder",
        **sizes(fields),
        "d_ff": fields.int("intermediate_size"),
        "mlp": "plain",
        "norm": "layernorm",
        "bias": {"qkv": True, "attn_out": True, "mlp": True},
        "tied_embeddings": fields.bool("tie_word_embeddings", True),
        "position": "learned",
        "max_seq_len": fields.int("max_position_embeddings"),
        "token_types": fields.int("type_vocab_size", 2),
        "embedding_norm": True,
        "final_norm": False,  # post-norm blocks: the last block already ends in a LayerNorm
        "pooler": pooler,
        "head": head,
    }


def read_t5(fields: Fields) -> dict[str, Any]:
    causal_lm_head(fields, ("ForConditionalGeneration",))
    fields.require("is_encoder_decoder", True, fields.bool("is_encoder_decoder", True))
    fields.require("is_decoder", False, fields.bool("is_decoder", False))
    fields.require("tie_encoder_decoder", False, fields.bool("tie_encoder_decoder", False))
    projection = fields.text("feed_forward_proj", "relu")
    parts = projection.split("-")
    if len(parts) > 2 or (len(parts) == 2 and parts[0] != "gated"):
        raise TfcostError(f"t5 config: field 'feed_forward_proj' = {projection!r} is not 'ACT' or 'gated-ACT'")
    layers = fields.int("num_layers")
    heads = fields.int("num_heads")
    fields.read.add("is_gated_act")  # derived from feed_forward_proj by T5Config
    return {
        "architecture": "encoder-decoder",
        "vocab_size": fields.int("vocab_size"),
        "d_model": fields.int("d_model"),
        "n_layers": layers,
        "n_decoder_layers": fields.int("num_decoder_layers", layers),
        "n_heads": heads,
        "head_dim": fields.int("d_kv"),
        "d_ff": fields.int("d_ff"),
        "mlp": "gated" if parts[0] == "gated" else "plain",
        "norm": "rmsnorm",  # T5LayerNorm: a scale, no shift, no mean subtraction
        # T5 v1.1 (tie_word_embeddings false) has its own lm_head in the checkpoint.
        "tied_embeddings": fields.bool("tie_word_embeddings", True),
        "position": "relative",
        "relative_attention_buckets": fields.int("relative_attention_num_buckets", 32),
        "max_seq_len": fields.int("n_positions", 512),  # T5 was pre-trained on 512-token inputs
    }


def read_deepseek(fields: Fields, *, first_dense_default: int) -> dict[str, Any]:
    causal_lm_head(fields)
    # transformers' DeepSeek blocks are sparse from first_k_dense_replace on and ignore moe_layer_freq, which
    # DeepSeek's own code honours; only the value on which the two agree is accepted.
    fields.require("moe_layer_freq", 1, fields.int("moe_layer_freq", 1))
    fields.require("mlp_bias", False, fields.bool("mlp_bias", False))
    fields.read.add("num_key_value_heads")  # MLA rebuilds keys and values for every query head
    shape = sizes(fields)
    attention_bias = fields.bool("attention_bias", False)
    first_dense = fields.int("first_k_dense_replace", first_dense_default)
    nope, rope = fields.int("qk_nope_head_dim"), fields.int("qk_rope_head_dim")
    return {
        **shape,
        "n_kv_heads": shape["n_heads"],
        "head_dim": nope + rope,
        "d_ff": fields.int("intermediate_size"),
        "mlp": "gated",
        "norm": "rmsnorm",
        "bias": {"qkv": attention_bias, "attn_out": attention_bias, "mlp": False},
        "tied_embeddings": fields.bool("tie_word_embeddings", False),
        "position": "rotary",
        "max_seq_len": fields.int("max_position_embeddings"),
        "moe": {
            "n_experts": fields.int("n_routed_experts"),
            "experts_per_token": fields.int("num_experts_per_tok"),
            "expert_d_ff": fields.int("moe_intermediate_size"),
            "n_shared_experts": fields.int("n_shared_experts"),
            "dense_layers": list(range(min(first_dense, shape["n_layers"]))),
        },
        "mla": {
            # The DeepSeek configs' default is 1536: a config without the key gets a low-rank query.
            "q_lora_rank": fields.nullable_int("q_lora_rank", 1536),
            "kv_lora_rank": fields.int("kv_lora_rank"),
            "qk_nope_head_dim": nope,
            "qk_rope_head_dim": rope,
            "v_head_dim": fields.int("v_head_dim"),
        },
    }


# Per family: the reader, and the keys it ignores on purpose because they change no count.
Reader = Callable[[Fields], dict[str, Any]]
LLAMA_IGNORED = ROTARY_IGNORED | {"pretraining_tp", "partial_rotary_factor"}
QWEN_IGNORED = LLAMA_IGNORED | {"use_mrope"}
MOE_ROUTING = frozenset({"output_router_logits", "router_aux_loss_coef", "router_jitter_noise", "norm_topk_prob"})
DEEPSEEK_ROUTING = MOE_ROUTING | {
    "n_group", "topk_group", "topk_method", "scoring_func", "routed_scaling_factor", "aux_loss_alpha", "seq_aux",
    "ep_size", "rope_interleave", "head_dim",
    # The multi-token-prediction module (DeepSeek-V3 §2.2) is a training-time extra transformers does not build.
    "num_nextn_predict_layers",
}  # fmt: skip
GPT2_IGNORED = frozenset(
    {
        "n_ctx", "summary_type", "summary_use_proj", "summary_activation", "summary_proj_to_labels",
        "summary_first_dropout", "scale_attn_weights", "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn",
        "n_special", "predict_special_tokens",
    }
)  # fmt: skip
FAMILIES: dict[str, tuple[Reader, frozenset[str]]] = {
    "gpt2": (read_gpt2, GPT2_IGNORED),
    "llama": (read_llama, LLAMA_IGNORED),
    "mistral": (read_mistral, LLAMA_IGNORED),
    "mixtral": (read_mixtral, LLAMA_IGNORED | MOE_ROUTING),
    "qwen2": (read_qwen2, QWEN_IGNORED),
    "qwen2_moe": (read_qwen2_moe, QWEN_IGNORED | MOE_ROUTING),
    "qwen3": (read_qwen3, QWEN_IGNORED),
    "gemma": (read_gemma, LLAMA_IGNORED),
    "gemma2": (
        read_gemma2,
        LLAMA_IGNORED
        | {"query_pre_attn_scalar", "attn_logit_softcapping", "final_logit_softcapping", "cache_implementation"},
    ),
    "phi3": (read_phi3, LLAMA_IGNORED | {"original_max_position_embeddings"}),
    "falcon": (read_falcon, ROTARY_IGNORED | {"apply_residual_connection_post_layernorm"}),
    "gpt_neox": (read_gpt_neox, ROTARY_IGNORED | {"rotary_emb_base", "partial_rotary_factor", "is_decoder"}),
    "bert": (read_bert, frozenset()),
    "t5": (read_t5, frozenset({"relative_attention_max_distance", "initializer_factor"})),
    "deepseek_v2": (lambda fields: read_deepseek(fields, first_dense_default=0), LLAMA_IGNORED | DEEPSEEK_ROUTING),
    "deepseek_v3": (lambda fields: read_deepseek(fields, first_dense_default=3), LLAMA_IGNORED | DEEPSEEK_ROUTING),
}


def shape_mapping(config: dict[str, Any]) -> dict[str, Any]:
    """The preset mapping (without name or source) equivalent to a Hugging Face config dict."""
    model_type = config.get("model_type")
    if model_type is None:
        raise TfcostError("missing field 'model_type'; is this a Hugging Face config.json?")
    if not isinstance(model_type, str) or model_type not in FAMILIES:  # a list or a mapping cannot even be looked up
        raise TfcostError(f"unsupported model_type {model_type!r}; supported: {', '.join(sorted(FAMILIES))}")
    reader, ignored = FAMILIES[model_type]
    fields = Fields(config, model_type)
    mapping = reader(fields)
    fields.refuse_unknown(BASE_IGNORED | ignored)
    return mapping
