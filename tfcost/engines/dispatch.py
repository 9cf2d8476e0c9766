"""Which engine answers for a model: tfcost's own reader (analytic) or transformers' implementation.

`auto` uses the analytic core whenever tfcost has a reader for the model, and the transformers engine for a
config.json whose model_type it has none for. A shipped preset read from a Hugging Face config.json ships that file
beside it (presets/hf_configs/NAME.json, a copy of its tests/data/hf_configs fixture), and transformers builds that:
`tfcost check NAME` then verifies the preset's hand-written shape against the published model's real
implementation. Any other preset (or one changed with --set) is given to transformers through `hf_config_for`, the
one place that says which transformers config a shape is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from tfcost.errors import TfcostError, UsageError
from tfcost.schema import GpuSpec, ModelShape, ServingSetup, TrainingSetup, Workload
from tfcost.units import Dtype

if TYPE_CHECKING:
    from tfcost.engines.hf import EngineTotals
    from tfcost.engines.report import CheckReport, EngineEstimate, EngineServeReport, EngineTrainReport
    from tfcost.reports.estimate import Estimate

Engine = Literal["auto", "analytic", "transformers"]


def has_reader(config: dict[str, Any]) -> bool:
    """Whether tfcost's analytic core reads this config.json (a multimodal wrapper through its text_config). The
    one test `auto` makes: a config tfcost has no reader for goes to transformers, and every other failure stays
    tfcost's own error."""
    from tfcost.readers import hf_config

    return hf_config.has_reader(config)


def config_path(model: str | None, config: str | None) -> Path | None:
    """The config.json a command was given, as MODEL or as --config; None for a preset name or YAML file."""
    if config is not None:
        return Path(config)
    if model is not None and model.endswith(".json"):
        return Path(model)
    return None


def recorded_config(model: str | None) -> dict[str, Any] | None:
    """The config.json a shipped preset was read from (presets/hf_configs/NAME.json), or None: a preset without one,
    a user's own file, a config.json or a Hub id."""
    from tfcost.readers.files import read_json_mapping
    from tfcost.readers.presets import model_preset_paths, presets_dir

    if model is None or model not in model_preset_paths():
        return None
    path = presets_dir() / "hf_configs" / f"{model}.json"
    return read_json_mapping(path) if path.is_file() else None


def language_model(data: dict[str, Any]) -> dict[str, Any]:
    """The part of a config.json that tfcost's reader prices (a multimodal wrapper's text_config), so that both
    engines build the same model; the towers around it are priced by neither."""
    from tfcost.readers.hf_config import language_model_config

    return language_model_config(data)


def preset_config(model: str | None, shape: ModelShape, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The transformers config of a preset: the config.json it was read from, unless --set changed the shape."""
    recorded = None if overrides else recorded_config(model)
    return language_model(recorded) if recorded is not None else hf_config_for(shape)


def hf_config_for(shape: ModelShape) -> dict[str, Any]:
    """The transformers config.json of a preset's shape, for the families whose shape maps onto one exactly:
    Llama (gated MLP, RMSNorm, rotary, no bias or bias on every attention projection), Qwen2 (bias on q, k, v
    only), Mistral (a sliding window on every layer), Mixtral (top-k experts, no shared ones), GPT-2 and BLOOM."""
    bias = shape.bias
    plain_decoder = decoder(shape, embedding_norm=False)
    sizes = {
        "vocab_size": shape.vocab_size,
        "hidden_size": shape.d_model,
        "num_hidden_layers": shape.n_layers,
        "num_attention_heads": shape.n_heads,
        "num_key_value_heads": shape.n_kv_heads,
        "head_dim": shape.head_dim,
        "intermediate_size": shape.d_ff,
        "max_position_embeddings": shape.max_seq_len,
        "tie_word_embeddings": shape.tied_embeddings,
    }
    llama_like = plain_decoder and (shape.mlp, shape.norm, shape.position) == ("gated", "rmsnorm", "rotary")
    if llama_like and not bias.mlp:
        moe, window = shape.moe, shape.sliding_window
        if moe is not None and not (moe.n_shared_experts or moe.dense_layers or bias.qkv or bias.attn_out):
            experts = {"num_local_experts": moe.n_experts, "num_experts_per_tok": moe.experts_per_token}
            return {"model_type": "mixtral", **sizes, "intermediate_size": moe.expert_d_ff, **experts,
                    "sliding_window": window}  # fmt: skip
        if moe is None and window is not None and not (bias.qkv or bias.attn_out):
            return {"model_type": "mistral", **sizes, "sliding_window": window}
        if moe is None and window is None and bias.qkv and not bias.attn_out:
            return {"model_type": "qwen2", **sizes}
        if moe is None and window is None and bias.qkv == bias.attn_out:
            return {"model_type": "llama", **sizes, "attention_bias": bias.qkv}
    if (
        plain_decoder
        and shape.moe is None
        and shape.mlp == "plain"
        and shape.norm == "layernorm"
        and shape.position == "learned"
        and shape.sliding_window is None
        and bias.qkv
        and bias.attn_out
        and bias.mlp
        and shape.tied_embeddings
        and shape.head_dim * shape.n_heads == shape.d_model
        and shape.n_kv_heads == shape.n_heads
    ):
        return {
            "model_type": "gpt2",
            "vocab_size": shape.vocab_size,
            "n_embd": shape.d_model,
            "n_layer": shape.n_layers,
            "n_head": shape.n_heads,
            "n_inner": shape.d_ff,
            "n_positions": shape.max_seq_len,
        }
    if (
        decoder(shape, embedding_norm=True)
        and shape.moe is None
        and (shape.mlp, shape.norm, shape.position) == ("plain", "layernorm", "alibi")
        and shape.sliding_window is None
        and bias.qkv
        and bias.attn_out
        and bias.mlp
        and shape.tied_embeddings
        and shape.d_ff == 4 * shape.d_model  # BloomMLP's width is fixed at 4 d
        and shape.head_dim * shape.n_heads == shape.d_model
        and shape.n_kv_heads == shape.n_heads
    ):
        return {"model_type": "bloom", "vocab_size": shape.vocab_size, "hidden_size": shape.d_model,
                "n_layer": shape.n_layers, "n_head": shape.n_heads}  # fmt: skip
    raise TfcostError(
        f"{shape.name}: no transformers config is known for this preset's shape; give its config.json with --config"
    )


def decoder(shape: ModelShape, embedding_norm: bool) -> bool:
    """A decoder-only LM of plain blocks (two norms, no qk-norm, no MLA, no per-layer windows), with a norm on the
    embeddings (BLOOM) or without one (the others)."""
    return (
        shape.architecture == "decoder"
        and shape.head == "lm"
        and shape.final_norm
        and shape.block_norms == 2
        and shape.embedding_norm == embedding_norm
        and not (shape.qk_norm or shape.pooler or shape.token_types)
        and shape.mla is None
        and shape.sliding_layers is None
    )


def refuse_overrides(overrides: Sequence[str]) -> None:
    if overrides:
        raise UsageError("--set changes tfcost's own fields; for the transformers engine, edit the config.json")


def refuse_causal(workload: Workload) -> None:
    if workload.causal:
        raise UsageError("--causal: the transformers engine counts what FlopCounterMode sees, the full T x T scores")


@dataclass(frozen=True)
class EngineModel:
    """A model the transformers engine is to price: its config.json mapping, its name and source, and the file it
    was read from (None for a preset's)."""

    data: dict[str, Any]
    name: str
    source: str | None
    file_name: str | None = None


def engine_model(
    model: str | None, config: str | None, overrides: Sequence[str], engine: Engine, revision: str | None = None
) -> EngineModel | None:
    """The model the transformers engine prices for a command, or None when tfcost's own reader answers: `auto`
    sends a config.json (a file, or a Hub id's) to transformers only when tfcost has no reader for its model_type."""
    from tfcost.readers.files import read_json_mapping
    from tfcost.readers.presets import names_hub_model, resolve_model

    if engine == "analytic":
        return None
    path = config_path(model, config)
    if model is not None and config is None and names_hub_model(model):
        from tfcost.readers.presets import fetch_hub_config

        fetched = fetch_hub_config(model, revision)
        source = f"{fetched.described(revision)}, built by transformers"
        found = EngineModel(fetched.config, model.rsplit("/", 1)[-1], source)
    elif path is not None:
        if model is not None and config is not None:
            resolve_model(model, config)  # the usual one-line refusal of both
        data = read_json_mapping(path)
        found = EngineModel(data, config_name_of(path, data), None, path.name)
    elif engine == "auto":  # a preset: tfcost's own reader
        return None
    else:
        shape = resolve_model(model, config, overrides)
        return EngineModel(preset_config(model, shape, overrides), shape.name, shape.source)
    if engine == "auto" and has_reader(found.data):
        return None
    refuse_overrides(overrides)
    return found


def engine_answer(
    model: str | None,
    config: str | None,
    overrides: Sequence[str],
    workload: Workload,
    engine: Engine,
    analytic: Callable[[], Estimate],
    revision: str | None = None,
) -> Estimate | EngineEstimate:
    """`tfcost estimate`'s result from the engine asked for: `analytic()` (tfcost's own reader, with everything a
    source can carry: ignored fields, quantization, a Hub checkpoint's size) or the transformers engine's."""
    found = engine_model(model, config, overrides, engine, revision)
    if found is None:
        return analytic()
    return transformers_estimate(found, workload)


def config_name_of(path: Path, data: dict[str, Any]) -> str:
    from tfcost.readers.presets import config_name

    return config_name(path, data)


def measured(found: EngineModel, seq_len: int, dtype: Dtype) -> tuple[EngineTotals, str | None]:
    """The engine's totals for a model at T, and its source in words (a config.json named once transformers has
    accepted its model_type)."""
    from tfcost.engines.hf import measure

    totals = measure(found.data, seq_len, dtype)
    source = found.source
    if found.file_name is not None:
        source = f"Hugging Face {totals.model_type} config.json ({found.file_name}), built by transformers"
    return totals, source


def transformers_estimate(found: EngineModel, workload: Workload) -> EngineEstimate:
    """The transformers engine's estimate of a model."""
    from tfcost.engines.report import engine_estimate

    refuse_causal(workload)
    totals, source = measured(found, workload.seq_len, workload.dtype)
    return engine_estimate(found.name, source, totals, workload)


# What `train` prices from tfcost's reader only: each field of TrainingSetup the engine's totals (parameters, FLOPs,
# what autograd saves) cannot split, with its option.
TRAIN_NEEDS_READER = {
    "tp": "--tp", "pp": "--pp", "cp": "--cp", "ep": "--ep", "etp": "--etp", "pp_layout": "--pp-layout",
    "virtual_stages": "--virtual-stages",
    "pp_first_layers": "--pp-first-layers", "pp_last_layers": "--pp-last-layers",
    "sequence_parallel": "--sequence-parallel", "recompute": "--recompute", "precision": "--precision",
    "lora_rank": "--lora", "qlora": "--qlora", "offload": "--offload",
    "optimizer_in_backward": "--optimizer-in-backward", "memory_convention": "--memory-convention", "loss": "--loss",
    "reshard_after_forward": "--reshard-after-forward", "accumulate_unsharded": "--accumulate-unsharded",
    "frozen_gradients": "--frozen-gradients", "offload_activations": "--offload-activations",
}  # fmt: skip
# And what `serve` does: tensor parallelism splits heads the engine does not know, and KV blocks size the expected
# engine's memory, which the engine's bound does not report.
SERVE_NEEDS_READER = {"gpus": "--gpus", "kv_block": "--kv-block"}


def refuse_for_engine(setup: BaseModel, needs_reader: dict[str, str], command: str) -> None:
    """One line for the first option the transformers engine cannot price, given a value other than its default."""
    fields = type(setup).model_fields
    for name, option in needs_reader.items():
        if getattr(setup, name) != fields[name].default:
            raise UsageError(
                f"{option}: {command} prices it with tfcost's own reader only; the transformers engine gives the "
                "model's totals (parameters, FLOPs, cache)"
            )


def check(model: str | None, config: str | None, workload: Workload, revision: str | None = None) -> CheckReport:
    """`tfcost check`: the analytic estimate and the transformers engine's, for the same config (a file's, a Hub
    id's or a preset's, as `engine_model` finds it), side by side (of a multimodal config, the language model both
    price)."""
    from tfcost.core import memory
    from tfcost.engines.report import check_report
    from tfcost.readers.presets import resolve_model
    from tfcost.reports.estimate import estimate

    refuse_causal(workload)
    shape = resolve_model(model, config, revision=revision)
    found = engine_model(model, config, (), "transformers", revision)
    assert found is not None  # the transformers engine, asked for, always answers
    language = EngineModel(language_model(found.data), shape.name, shape.source)
    t, b, dtype = workload.seq_len, workload.batch, workload.dtype
    # A compressed-attention cache (DeepSeek-V4's own cache class) is compared on what it holds at T, as its truth
    # test pins; a plain sliding layer on what transformers holds between steps.
    held = (
        memory.kv_cache_held_between_steps_bytes(shape, t, b, dtype) + memory.state_bytes(shape, b, dtype)
        if memory.sliding_windows_full(shape, t) and not memory.cache_steps(shape)
        else None
    )
    return check_report(estimate(shape, workload), transformers_estimate(language, workload), held)


def train_report(
    found: EngineModel, gpu: GpuSpec, make_setup: Callable[[int, int], TrainingSetup], explained: bool = False
) -> EngineTrainReport:
    """`tfcost train` by the transformers engine. `make_setup(default T, default D)` is the user's setup with the
    model's defaults: T = 4,096 or the config's context if shorter, D = 20 N of the parameters measured at T."""
    from tfcost.costs import training
    from tfcost.engines import hf as engine_hf
    from tfcost.engines.report import engine_train

    default_seq = training.default_seq_len_of(engine_hf.max_positions(engine_hf.hf_config(found.data)))
    seq_len = make_setup(default_seq, 1).seq_len  # T as asked, or its default: D's default needs N, measured at T
    totals, source = measured(found, seq_len, "bf16")
    setup = make_setup(default_seq, training.chinchilla_optimal_tokens_of(totals.params_total))
    refuse_for_engine(setup, TRAIN_NEEDS_READER, "train")
    saved = engine_hf.training_activation_bytes(found.data, setup.seq_len, setup.micro_batch)
    return engine_train(found.name, source, totals, saved, gpu, setup, default_seq, explained)


def serve_report(found: EngineModel, gpu: GpuSpec, setup: ServingSetup, explained: bool = False) -> EngineServeReport:
    """`tfcost serve` by the transformers engine, its totals measured at T = P on one GPU."""
    from tfcost.engines.report import engine_serve

    refuse_for_engine(setup, SERVE_NEEDS_READER, "serve")
    if setup.weights_dtype is None:
        if "quantization_config" in found.data:
            raise UsageError(
                "--weights-dtype: the transformers engine does not read a quantization_config; say what the "
                "weights are stored as"
            )
        setup = setup.model_copy(update={"weights_dtype": "bf16"})
    totals, source = measured(found, setup.prompt, setup.kv_dtype)
    return engine_serve(found.name, source, totals, gpu, setup, explained)
