"""The words every config family reader is written in: `Fields` (typed reads with transformers' defaults),
`Family` and `Refusal` rows, the key sets each family ignores, the readers shared by the Llama-like families, and the
FAMILIES those readers cover. The other modules of this package add their families in the same terms;
tfcost.readers.hf_config joins them all and reads a config with them. Pure: a dict in, a mapping out, no I/O.
"""

from __future__ import annotations

import builtins  # Fields.int shadows the name inside the class
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from tfcost.errors import TfcostError

# Keys of transformers' PretrainedConfig, in 4.x full dumps (`to_dict()`, generation settings included) and in 5.x
# files, that never change a count whatever their value.
GENERIC_IGNORED = frozenset(
    {
        "_name_or_path", "_commit_hash", "_attn_implementation", "_attn_implementation_internal",
        "_attn_implementation_autoset", "_experts_implementation", "transformers_version", "torch_dtype", "dtype",
        "use_bfloat16", "tf_legacy_loss", "xla_device", "torchscript", "return_dict", "output_hidden_states",
        "output_attentions", "output_scores", "return_dict_in_generate", "use_return_dict", "use_cache",
        "output_past", "chunk_size_feed_forward", "gradient_checkpointing", "auto_map", "custom_pipelines",
        "base_model_tp_plan", "base_model_pp_plan", "base_model_ep_plan",
        "id2label", "label2id", "num_labels", "_num_labels", "problem_type", "finetuning_task", "tokenizer_class",
        "prefix", "task_specific_params", "initializer_range",
        "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id",
        "forced_bos_token_id", "forced_eos_token_id", "suppress_tokens", "begin_suppress_tokens", "bad_words_ids",
        # generation settings that 4.x configs carried
        "max_length", "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups",
        "diversity_penalty", "temperature", "top_k", "top_p", "typical_p", "repetition_penalty", "length_penalty",
        "no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "num_return_sequences", "remove_invalid_values",
        "exponential_decay_length_penalty",
    }
)  # fmt: skip
# Generic keys that are harmless at PretrainedConfig's default and change the model otherwise (a decoder given
# cross-attention, pruned heads); a family that reads one of them takes precedence.
GENERIC_DEFAULTS: dict[str, Any] = {
    "is_encoder_decoder": False,
    "is_decoder": False,
    "add_cross_attention": False,
    "tie_encoder_decoder": False,
    "cross_attention_hidden_size": None,
    "pruned_heads": {},
}
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
BASE_IGNORED = GENERIC_IGNORED | DROPOUTS | ACTIVATIONS_AND_EPS

REQUIRED = object()
Reader = Callable[["Fields"], dict[str, Any]]

# A key tfcost does not know whose name says it sizes something: an error unless --lenient.
STRUCTURAL_NAME = re.compile(r"^(num|n)_|_(size|dim)$|layer|expert")


def looks_structural(key: str, value: Any) -> bool:
    """An integer under a name like num_*, n_*, *_size, *_dim, *layer*, *expert*, or a per-layer/per-expert list
    (`layer_types`, `mlp_only_layers`)."""
    if not STRUCTURAL_NAME.search(key):
        return False
    if isinstance(value, list):
        return bool(value) and ("layer" in key or "expert" in key)
    return isinstance(value, int) and not isinstance(value, bool)


class Fields:
    """Typed reads from a config dict. Every key read is recorded, so the keys left over can be sorted into
    ignored and unknown; refusals are collected, so that all of them are named in one error."""

    def __init__(self, config: dict[str, Any], model_type: str) -> None:
        self.config, self.model_type, self.read = config, model_type, {"model_type"}
        self.problems: list[str] = []

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

    def require(self, key: str, allowed: object, value: object, reason: str = "") -> None:
        """A field whose other values would change costs in a way tfcost does not model: noted, not raised, so that
        every such field of a config is named together."""
        if value != allowed:
            why = f": {reason}" if reason else ""
            self.problems.append(f"field '{key}' = {value!r} is not supported ({allowed!r} is){why}")


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


@dataclass(frozen=True)
class LlamaFlags:
    """How a Llama-like family differs from Llama, as data: a new "Llama plus a few flags" family is a row of
    FAMILIES with its flags, not a new reader.

    bias: "attention+mlp" reads attention_bias (q/k/v and output) and mlp_bias (Llama); "attention" reads
    attention_bias only (Qwen3, Gemma); "qkv" is q/k/v biases always (Qwen2); "none" builds none (Mistral, Phi-3).
    window: "none"; "every-layer" reads sliding_window (default none) for every layer (Phi-3); "every-layer-4096"
    the same with MistralConfig's default of 4096, a null meaning none; "qwen" Qwen's use_sliding_window with
    layers from max_window_layers on (or `layer_types`).
    """

    head_dim_default: int | None = None
    tied_default: bool = False
    bias: Literal["attention+mlp", "attention", "qkv", "none"] = "none"
    qk_norm: bool = False
    window: Literal["none", "every-layer", "every-layer-4096", "qwen"] = "none"


def llama_family(flags: LlamaFlags) -> Reader:
    """The reader of a Llama-like family with these flags."""

    def read(fields: Fields) -> dict[str, Any]:
        shape = llama_like(
            fields, head_dim_default=flags.head_dim_default, tied_default=flags.tied_default,
            biases=flags.bias == "attention+mlp",
        )  # fmt: skip
        if flags.bias in ("attention", "qkv"):
            on = True if flags.bias == "qkv" else fields.bool("attention_bias", False)
            shape["bias"] = {"qkv": on, "attn_out": on and flags.bias == "attention", "mlp": False}
        if flags.qk_norm:
            shape["qk_norm"] = True
        layers = shape["n_layers"]
        if flags.window == "qwen":  # Qwen2Config and Qwen3Config: layers from max_window_layers on slide
            return {**shape, **qwen_windows(fields, layers, lambda i, top: i >= top)}
        if flags.window != "none":
            window = (
                fields.nullable_int("sliding_window", 4096)
                if flags.window == "every-layer-4096"
                else fields.int("sliding_window", None)
            )
            return {**shape, **windows(window, list(range(layers)), layers)}
        return shape

    return read


read_gemma = llama_family(LlamaFlags(head_dim_default=256, tied_default=True, bias="attention"))


# Phi4MultimodalConfig's defaults (models/phi4_multimodal/configuration_phi4_multimodal.py): a config may leave
# any of them out.
PHI4_MULTIMODAL = {
    "vocab_size": 200064, "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 131072,
}  # fmt: skip


def read_phi4_multimodal(fields: Fields) -> dict[str, Any]:
    """Phi-4-multimodal's language model, Phi-3's reader over the config with the class's defaults beneath it (a new
    dict: the user's is not changed)."""
    fields.config = PHI4_MULTIMODAL | {key: value for key, value in fields.config.items() if value is not None}
    return llama_family(LlamaFlags(window="every-layer"))(fields)


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


def read_gemma2(fields: Fields) -> dict[str, Any]:
    shape = read_gemma(fields)
    shape["block_norms"] = 4  # input, post-attention, pre-feedforward and post-feedforward RMSNorms
    layers = shape["n_layers"]
    explicit = sliding_layers_from_types(fields, layers)
    chosen = explicit if explicit is not None else list(range(0, layers, 2))  # Gemma2Config: even layers slide
    return {**shape, **windows(fields.int("sliding_window", 4096), chosen, layers)}


def read_falcon(fields: Fields) -> dict[str, Any]:
    causal_lm_head(fields)
    shape = sizes(fields)
    heads, width = shape["n_heads"], shape["d_model"]
    new_architecture = fields.bool("new_decoder_architecture", False)
    multi_query = fields.bool("multi_query", True)
    parallel = fields.bool("parallel_attn", True)
    # FalconAttention: grouped K/V heads in the new architecture, one shared K/V head with multi_query, else MHA.
    kv_heads = fields.int("num_kv_heads", heads) if new_architecture else 1 if multi_query else heads
    fields.int("num_kv_heads", heads)  # FalconConfig fills it in; only the new architecture uses it
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


# BERT classes tfcost prices: their head and whether they build the pooler. BertLMHeadModel is the masked-LM
# model again (BertOnlyMLMHead, no pooler); with is_decoder it is a causal decoder that returns a KV cache.
BERT_CLASSES = {"BertModel": ("none", True), "BertForMaskedLM": ("mlm", False), "BertLMHeadModel": ("mlm", False)}


def read_bert(fields: Fields) -> dict[str, Any]:
    architectures = fields.list_of("architectures", str, ["BertModel"])
    if len(architectures) != 1 or architectures[0] not in BERT_CLASSES:
        raise TfcostError(
            f"bert config: architectures {architectures} is not supported (one of {', '.join(BERT_CLASSES)})"
        )
    head, pooler = BERT_CLASSES[architectures[0]]
    decoder = fields.bool("is_decoder", False)
    if decoder and architectures[0] != "BertLMHeadModel":
        fields.problems.append("field 'is_decoder' = True is only supported with BertLMHeadModel")
    return {
        "architecture": "decoder" if decoder else "encoder",
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


# DeepseekV2Config's and DeepseekV3Config's defaults (transformers 5.24, `AutoConfig.for_model(...).to_dict()`) for
# the keys read_deepseek reads: `save_pretrained` leaves out every key equal to its default (DeepSeek-V2-Lite's
# n_routed_experts 64, kv_lora_rank 512, vocab_size 102400, ...), so a saved config is read over them (issue 38).
# V2's num_experts_per_tok defaults to None, which transformers cannot build either: a saved V2 config holds it.
DEEPSEEK_DEFAULTS: dict[int, dict[str, Any]] = {
    2: {"vocab_size": 102400, "hidden_size": 4096, "intermediate_size": 11008, "moe_intermediate_size": 1407,
        "num_hidden_layers": 32, "num_attention_heads": 32, "n_shared_experts": 2, "n_routed_experts": 64,
        "num_experts_per_tok": None, "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64, "v_head_dim": 128, "max_position_embeddings": 2048},
    3: {"vocab_size": 129280, "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048,
        "num_hidden_layers": 61, "num_attention_heads": 128, "n_shared_experts": 1, "n_routed_experts": 256,
        "num_experts_per_tok": 8, "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64, "v_head_dim": 128, "max_position_embeddings": 4096},
}  # fmt: skip


def read_deepseek(fields: Fields, *, first_dense_default: int, version: int | None = None) -> dict[str, Any]:
    """DeepSeek-V2 and V3 (`version`: over that config class's defaults) and the MLA families built on them."""
    if version is not None:
        fields.config = DEEPSEEK_DEFAULTS[version] | fields.config  # a new dict: the user's is not changed
    causal_lm_head(fields)
    fields.read.add("num_key_value_heads")  # MLA rebuilds keys and values for every query head
    shape = sizes(fields)
    attention_bias = fields.bool("attention_bias", False)
    first_dense = fields.int("first_k_dense_replace", first_dense_default)
    nope, rope = fields.int("qk_nope_head_dim"), fields.int("qk_rope_head_dim")
    # transformers 5 writes the derived query/key head width; any other value is not the model transformers builds.
    fields.require(
        "qk_head_dim", nope + rope, fields.int("qk_head_dim", nope + rope), "qk_nope_head_dim + qk_rope_head_dim"
    )
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


# quantization_config ------------------------------------------------------------------------------------------

# Components of a module name (`model.layers.*.self_attn`) and the part of a block they name.
MODULE_PARTS: dict[str, tuple[str, ...]] = {
    "self_attn": ("attention",), "attn": ("attention",), "attention": ("attention",),
    "mlp": ("mlp", "experts", "shared_experts"), "feed_forward": ("mlp", "experts", "shared_experts"),
    "block_sparse_moe": ("experts",), "experts": ("experts",),
    "shared_expert": ("shared_experts",), "shared_experts": ("shared_experts",),
}  # fmt: skip
# Names of what no format converts anyway: tfcost.core.weights keeps embeddings, norms, routers (a MoE `gate`,
# its `e_score_correction_bias`), biases and the output head at their own dtype whatever a list says, so a list
# that names them changes no byte. Matched against each component of a name, a component containing "norm" or
# ending in "bias" included (input_layernorm, q_norm, e_score_correction_bias).
NEVER_CONVERTED = frozenset(
    {
        "lm_head", "embed_tokens", "wte", "wpe", "embedding", "embeddings", "norm", "router", "gate",
        "shared_expert_gate", "global_gate_stats", "bias", "biases", "sinks",
    }
)  # fmt: skip
# Multimodal towers and projectors: never part of the language model whose bytes the quantization prices.
TOWER_PARTS = frozenset(
    {
        "vision_model", "vision_tower", "visual", "vision", "multi_modal_projector", "mm_projector", "audio_tower",
        "audio_model", "vision_encoder", "image_newline", "patch_embed", "merger",
    }
)  # fmt: skip
# The projections of one part: an entry naming one of them keeps only part of that part at 16 bits.
PROJECTIONS = frozenset(
    {"q_proj", "k_proj", "v_proj", "o_proj", "qkv_proj", "gate_proj", "up_proj", "down_proj", "gate_up_proj", "w1",
     "w2", "w3", "q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj"}
)  # fmt: skip


def harmless_component(part: str) -> bool:
    """A module-name component that names what stays at its own dtype anyway (a norm, a bias, a router)."""
    return part in NEVER_CONVERTED or "norm" in part or part.endswith("_bias") or part in TOWER_PARTS


def module_components(name: str) -> list[str]:
    """The words of a module name or pattern: `re:.*mlp\\.gate$` and `model.layers.*.mlp.gate` both give
    ['mlp', 'gate'] (after 'model', 'layers'); digits stay, as layer indices."""
    body = name.removeprefix("re:")
    return [part for part in re.split(r"[^A-Za-z0-9_]+", body) if part]


@dataclass
class Unconverted:
    """What a quantization_config's module lists leave at 16 bits, as tfcost prices it: whole parts of every
    block, and notes on the entries that might change the bytes but that tfcost cannot place or price."""

    parts: list[str]
    notes: list[str]


def not_converted(model_type: str, names: Any, n_layers: int | None = None) -> Unconverted:
    """The block parts a modules_to_not_convert-style list keeps at 16 bits.

    Entries naming norms, biases, routers or gates, embeddings, the output head or a multimodal tower change no
    byte tfcost counts (they stay at their dtype anyway) and are passed over. An entry naming a part in every layer
    (`model.layers.*.self_attn`, or the same part listed once per layer) keeps that part at 16 bits. An entry that
    names only some layers' part, one projection of a part, or no weight tfcost knows could change the bytes: it
    is noted, and the part is priced converted like the rest. Never an error but for a list that is no list."""
    if names is None:
        return Unconverted([], [])
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise TfcostError(f"{model_type} config: quantization_config's module list should be a list of names")
    parts: list[str] = []
    by_layer: dict[str, tuple[list[str], set[int]]] = {}  # the part's word -> (its kinds, the layers named)
    partial: list[str] = []
    unknown: list[str] = []
    for name in names:
        components = module_components(name)
        if not components or any(harmless_component(part) for part in components):
            continue
        # The innermost part named decides (`feed_forward.shared_expert` is the shared expert, not all the MLP).
        placed = [part for part in components if part in MODULE_PARTS]
        word = placed[-1] if placed else ""
        named = list(MODULE_PARTS[word]) if placed else []
        if any(part.endswith("Attention") for part in components):  # compressed-tensors names a class
            word, named = "attention", ["attention"]
        indices = [int(part) for part in components if part.isdigit()]
        if indices and n_layers is not None and min(indices) >= n_layers:
            continue  # a layer past the last (DeepSeek-V3's layer 61: its multi-token-prediction module)
        if not named:
            unknown.append(name)
            continue
        if any(part in PROJECTIONS for part in components):
            partial.append(name)
            continue
        if indices:
            by_layer.setdefault(word, (named, set()))[1].update(indices)
            continue
        parts += [kind for kind in named if kind not in parts]
    notes = []
    for word, (kinds, layers) in by_layer.items():
        if n_layers is not None and layers >= set(range(n_layers)):
            parts += [kind for kind in kinds if kind not in parts]
        elif not set(kinds) <= set(parts):
            shown = ", ".join(map(str, sorted(layers)[:8])) + (", ..." if len(layers) > 8 else "")
            notes.append(
                f"quantization_config leaves the {word} of layer{'s' if len(layers) > 1 else ''} {shown} "
                "unconverted; tfcost prices every layer alike, converted"
            )
    if partial:
        notes.append(
            f"quantization_config leaves single projections unconverted ({', '.join(map(repr, partial[:4]))}"
            f"{', ...' if len(partial) > 4 else ''}); tfcost prices their parts converted"
        )
    if unknown:
        notes.append(
            f"quantization_config names module{'s' if len(unknown) > 1 else ''} tfcost cannot place "
            f"({', '.join(map(repr, unknown[:4]))}{', ...' if len(unknown) > 4 else ''}); priced as converted"
        )
    return Unconverted(parts, notes)


def compressed_tensors(where: str, config: dict[str, Any]) -> dict[str, Any]:
    """The schema's quantization of a compressed-tensors (llm-compressor) or modelopt `config_groups` block: 8-bit
    float weights are fp8 (per block, channel or tensor); 4-bit float weights in groups of 16 are nvfp4."""
    groups = config.get("config_groups")
    weights = [
        group.get("weights")
        for group in (groups.values() if isinstance(groups, dict) else ())
        if isinstance(group, dict)
    ]
    kinds = {(w.get("type"), w.get("num_bits"), w.get("group_size")) for w in weights if isinstance(w, dict)}
    if len(kinds) != 1:
        raise TfcostError(f"{where}: config_groups should give one weight format (found {len(kinds)})")
    kind, bits, group = kinds.pop()
    if (kind, bits) == ("float", 8):
        block = next((w.get("block_structure") for w in weights if isinstance(w, dict)), None)
        return {"method": "fp8", "bits": 8, **({"block": block} if block is not None else {})}
    if (kind, bits) == ("float", 4):
        return {"method": "nvfp4", "bits": 4, "group_size": group or 16}
    raise TfcostError(f"{where}: config_groups weights of type {kind!r} with {bits!r} bits are not supported")


def quantization(model_type: str, config: Any, n_layers: int | None = None) -> tuple[dict[str, Any], list[str]]:
    """The schema's quantization from a checkpoint's quantization_config (transformers' quantizers' keys, and
    compressed-tensors' and modelopt's `config_groups`), and the notes on its module lists (not_converted)."""
    where = f"{model_type} config: quantization_config"
    if not isinstance(config, dict):
        raise TfcostError(f"{where} should be a mapping")
    method = config.get("quant_method")
    algo = str(config.get("quant_algo", "")).upper()
    skip: Any = None
    for key in ("modules_to_not_convert", "exclude_modules", "ignore", "ignored_layers"):
        listed = config.get(key)
        if listed is not None:  # a list joins the others; anything else is refused by not_converted
            skip = [*skip, *listed] if isinstance(skip, list) and isinstance(listed, list) else listed
    if method == "mxfp4":
        result: dict[str, Any] = {"method": "mxfp4", "bits": 4, "group_size": 32}
    elif method in ("fp8", "finegrained_fp8", "fbgemm_fp8") or (method == "modelopt" and algo == "FP8"):
        block = config.get("weight_block_size")
        result = {"method": "fp8", "bits": 8, **({"block": block} if block is not None else {})}
    elif method == "modelopt" and algo == "NVFP4":
        group = config.get("group_size")
        result = compressed_tensors(where, config) if group is None and "config_groups" in config else {}
        result = result or {"method": "nvfp4", "bits": 4, "group_size": group or 16}
    elif method == "compressed-tensors":
        result = compressed_tensors(where, config)
    elif method in ("awq", "gptq"):
        group = config.get("group_size", config.get("q_group_size", 128))
        result = {"method": method, "bits": config.get("bits", config.get("w_bit", 4))}
        if group != -1:
            result["group_size"] = group
    elif method == "bitsandbytes":
        four = config.get("load_in_4bit") is True
        result = {"method": "bnb-4bit" if four else "bnb-8bit", "bits": 4 if four else 8}
        if four and config.get("bnb_4bit_use_double_quant") is True:
            result["double_quant"] = True
        skip = config.get("llm_int8_skip_modules", skip)
    else:
        supported = (
            "mxfp4, fp8 (finegrained_fp8, fbgemm_fp8), modelopt FP8/NVFP4, compressed-tensors float 8/4-bit, awq, "
            "gptq, bitsandbytes"
        )
        raise TfcostError(f"{where}: quant_method {method!r} is not supported ({supported})")
    unconverted = not_converted(model_type, skip, n_layers)
    return {**result, **({"not_converted": unconverted.parts} if unconverted.parts else {})}, unconverted.notes


# Per family, as data ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    """A field whose values other than `allowed` change costs in a way tfcost does not model."""

    key: str
    kind: str  # "bool", "int" or "text": how the value is type-checked
    default: Any  # transformers' default, when the config leaves the key out
    allowed: tuple[Any, ...]
    reason: str


@dataclass(frozen=True)
class Family:
    """One model_type: its reader, the keys that change no count (ignored silently), the keys transformers itself
    does not read for this family (ignored and reported, even when they look structural), and the refusals."""

    read: Reader
    harmless: frozenset[str] = frozenset()
    unused: frozenset[str] = frozenset()
    refused: tuple[Refusal, ...] = ()


def refusal_check(fields: Fields, refusal: Refusal) -> None:
    reader = {"bool": fields.bool, "int": fields.int, "text": fields.text}[refusal.kind]
    value = reader(refusal.key, refusal.default)
    if value not in refusal.allowed:
        allowed = " or ".join(repr(item) for item in refusal.allowed)
        fields.problems.append(f"field '{refusal.key}' = {value!r} is not supported ({allowed} is): {refusal.reason}")


CROSS_ATTENTION = Refusal("add_cross_attention", "bool", False, (False,), "cross-attention blocks are not modelled")
IS_DECODER = Refusal("is_decoder", "bool", False, (False,), "a decoder with cross-attention is not modelled")
LLAMA_IGNORED = ROTARY_IGNORED | {"pretraining_tp", "partial_rotary_factor"}
QWEN_IGNORED = LLAMA_IGNORED | {"use_mrope"}
MOE_ROUTING = frozenset({"output_router_logits", "router_aux_loss_coef", "router_jitter_noise", "norm_topk_prob"})
DEEPSEEK_ROUTING = MOE_ROUTING | {
    "n_group", "topk_group", "topk_method", "scoring_func", "routed_scaling_factor", "aux_loss_alpha", "seq_aux",
    "ep_size", "rope_interleave", "head_dim",
    # The multi-token-prediction module (DeepSeek-V3 §2.2) is a training-time extra transformers does not build.
    "num_nextn_predict_layers",
}  # fmt: skip
DEEPSEEK_REFUSED = (
    # transformers' DeepSeek blocks are sparse from first_k_dense_replace on and ignore moe_layer_freq, which
    # DeepSeek's own code honours; only the value on which the two agree is accepted.
    Refusal("moe_layer_freq", "int", 1, (1,), "transformers and DeepSeek's code place the MoE layers differently"),
    Refusal("mlp_bias", "bool", False, (False,), "biases on DeepSeek's MLPs are not modelled"),
)
GPT2_IGNORED = frozenset(
    {
        "n_ctx", "summary_type", "summary_use_proj", "summary_activation", "summary_proj_to_labels",
        "summary_first_dropout", "scale_attn_weights", "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn",
        "n_special", "predict_special_tokens",
    }
)  # fmt: skip
FAMILIES: dict[str, Family] = {
    "gpt2": Family(read_gpt2, GPT2_IGNORED, refused=(CROSS_ATTENTION,)),
    "llama": Family(llama_family(LlamaFlags(bias="attention+mlp")), LLAMA_IGNORED),
    "mistral": Family(llama_family(LlamaFlags(window="every-layer-4096")), LLAMA_IGNORED),
    "mixtral": Family(read_mixtral, LLAMA_IGNORED | MOE_ROUTING),
    "qwen2": Family(llama_family(LlamaFlags(bias="qkv", window="qwen")), QWEN_IGNORED),
    "qwen2_moe": Family(read_qwen2_moe, QWEN_IGNORED | MOE_ROUTING),
    "qwen3": Family(
        llama_family(LlamaFlags(head_dim_default=128, bias="attention", qk_norm=True, window="qwen")), QWEN_IGNORED
    ),
    "gemma": Family(
        read_gemma,
        LLAMA_IGNORED,
        refused=(
            Refusal("use_bidirectional_attention", "bool", None, (None, False), "it changes which scores are kept"),
        ),
    ),
    "gemma2": Family(
        read_gemma2,
        LLAMA_IGNORED
        | {"query_pre_attn_scalar", "attn_logit_softcapping", "final_logit_softcapping", "cache_implementation"},
        # Gemma-2's Hub files carry the window twice; transformers reads only `sliding_window`.
        unused=frozenset({"sliding_window_size"}),
        refused=(
            Refusal("use_bidirectional_attention", "bool", None, (None, False), "it changes which scores are kept"),
        ),
    ),
    # Phi3Attention has no bias whatever `attention_bias` says (Phi-3-mini's Hub file sets it).
    "phi3": Family(
        llama_family(LlamaFlags(window="every-layer")),
        LLAMA_IGNORED | {"original_max_position_embeddings"},
        unused=frozenset({"attention_bias"}),
    ),
    # Phi-4-multimodal's language model: Phi-3's (fused qkv and gate_up, no biases) with Phi4MultimodalConfig's
    # defaults; its vision and audio towers are read by tfcost.readers.families.towers.
    "phi4_multimodal": Family(
        read_phi4_multimodal,
        LLAMA_IGNORED | {"original_max_position_embeddings"},
        unused=frozenset({"attention_bias"}),
    ),
    "falcon": Family(read_falcon, ROTARY_IGNORED | {"apply_residual_connection_post_layernorm"}),
    "gpt_neox": Family(read_gpt_neox, ROTARY_IGNORED | {"rotary_emb_base", "partial_rotary_factor", "is_decoder"}),
    "bert": Family(
        read_bert,
        refused=(
            Refusal(
                "position_embedding_type", "text", "absolute", ("absolute",), "relative positions are not modelled"
            ),
            CROSS_ATTENTION,
        ),
    ),
    "t5": Family(
        read_t5,
        frozenset({"relative_attention_max_distance", "initializer_factor", "scale_decoder_outputs"}),
        refused=(
            Refusal("is_encoder_decoder", "bool", True, (True,), "tfcost prices T5 as encoder and decoder"),
            IS_DECODER,
            Refusal("tie_encoder_decoder", "bool", False, (False,), "shared encoder and decoder weights"),
        ),
    ),
    "deepseek_v2": Family(
        lambda fields: read_deepseek(fields, first_dense_default=0, version=2),
        LLAMA_IGNORED | DEEPSEEK_ROUTING,
        refused=DEEPSEEK_REFUSED,
    ),
    "deepseek_v3": Family(
        lambda fields: read_deepseek(fields, first_dense_default=3, version=3),
        LLAMA_IGNORED | DEEPSEEK_ROUTING,
        refused=DEEPSEEK_REFUSED,
    ),
}
