"""Configs as the Hub and transformers write them: every fixture re-saved by transformers 5.24 prices as before,
generic PretrainedConfig keys are ignored, unknown keys are reported (or refused with --strict), structural-looking
ones refused unless --lenient, and multimodal wrappers are priced for their language model."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from tfcost.core.params import total_params
from tfcost.errors import TfcostError
from tfcost.readers.hf_config import read_config
from tfcost.readers.presets import model_from_mapping
from tfcost.schema import ModelShape

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
NAMES = sorted(path.stem for path in CONFIGS.glob("*.json"))
# auto_map points at remote code: not for AutoConfig (quantization_config travels through it as it is).
NOT_FOR_TRANSFORMERS = ("auto_map", "model_type")

# The keys transformers 4.x's PretrainedConfig.to_dict() writes into every full dump, at their defaults
# (configuration_utils.py of 4.4x: __init__'s attributes and the generation settings it still carried).
V4_FULL_DUMP: dict[str, Any] = {
    "return_dict": True, "output_hidden_states": False, "output_attentions": False, "torchscript": False,
    "torch_dtype": "bfloat16", "use_bfloat16": False, "tf_legacy_loss": False, "pruned_heads": {},
    "chunk_size_feed_forward": 0, "is_encoder_decoder": False, "is_decoder": False,
    "cross_attention_hidden_size": None, "add_cross_attention": False, "tie_encoder_decoder": False,
    "max_length": 20, "min_length": 0, "do_sample": False, "early_stopping": False, "num_beams": 1,
    "num_beam_groups": 1, "diversity_penalty": 0.0, "temperature": 1.0, "top_k": 50, "top_p": 1.0, "typical_p": 1.0,
    "repetition_penalty": 1.0, "length_penalty": 1.0, "no_repeat_ngram_size": 0, "encoder_no_repeat_ngram_size": 0,
    "bad_words_ids": None, "num_return_sequences": 1, "output_scores": False, "return_dict_in_generate": False,
    "forced_bos_token_id": None, "forced_eos_token_id": None, "remove_invalid_values": False,
    "exponential_decay_length_penalty": None, "suppress_tokens": None, "begin_suppress_tokens": None,
    "finetuning_task": None, "id2label": {"0": "LABEL_0", "1": "LABEL_1"}, "label2id": {"LABEL_0": 0, "LABEL_1": 1},
    "tokenizer_class": None, "prefix": None, "sep_token_id": None, "decoder_start_token_id": None,
    "task_specific_params": None, "problem_type": None, "_name_or_path": "", "_attn_implementation_autoset": True,
    "transformers_version": "4.46.3",
}  # fmt: skip


def raw(name: str) -> dict[str, Any]:
    return json.loads((CONFIGS / f"{name}.json").read_text())


def shape(data: dict[str, Any], **options: bool) -> ModelShape:
    return model_from_mapping(read_config(data, **options).mapping, "test", "x")


def transformers_config(data: dict[str, Any]) -> Any:
    transformers = pytest.importorskip("transformers", reason="re-saving needs transformers: pip install -e '.[test]'")
    rest = {key: value for key, value in data.items() if key not in NOT_FOR_TRANSFORMERS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return transformers.AutoConfig.for_model(data["model_type"], **rest)


@pytest.mark.parametrize("name", NAMES)
def test_configs_resaved_by_transformers_price_as_before(name, tmp_path):
    data = raw(name)
    before = shape(data)
    config = transformers_config(data)
    config.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    full = config.to_dict()  # every attribute, defaults included
    # Keys of the file itself that tfcost reports as unused (phi-4's attention_bias), transformers keeps as they are.
    own = read_config(data).ignored
    for resaved in (saved, full):
        reading = read_config(resaved)
        assert model_from_mapping(reading.mapping, "test", "x") == before
        assert reading.ignored == own  # transformers writes nothing else tfcost does not know
    assert total_params(shape(without(full, own), strict=True)) == total_params(before)


def without(data: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if key not in keys}


@pytest.mark.parametrize("name", NAMES)
def test_a_transformers_4_full_dump_prices_as_before(name):
    data = raw(name)
    dump = {**V4_FULL_DUMP, **data}  # the family's own values win (t5 is an encoder-decoder)
    assert shape(without(dump, read_config(data).ignored), strict=True) == shape(data)


@pytest.mark.parametrize(
    ("file", "published", "ignored"),
    [
        # Published counts: the checkpoints' safetensors metadata on the Hub (3.82B and 9.24B on the model cards).
        ("Phi-3-mini-4k-instruct", 3_821_079_552, ["attention_bias"]),
        ("gemma-2-9b", 9_241_705_984, ["sliding_window_size"]),
    ],
)
def test_hub_files_price_exactly_and_report_what_they_ignore(file, published, ignored, tfcost):
    path = CONFIGS / "hub-files" / f"{file}.json"
    reading = read_config(json.loads(path.read_text()))
    assert reading.ignored == ignored
    assert total_params(model_from_mapping(reading.mapping, "test", "x")) == published
    run = tfcost("estimate", str(path), "--format", "json")
    assert run.code == 0 and json.loads(run.stdout)["ignored_fields"] == ignored
    assert f"note: {file}: ignored config fields" in run.stderr and ignored[0] in run.stderr
    strict = tfcost("estimate", str(path), "--strict")
    assert strict.code == 1 and f"--strict: ignored field '{ignored[0]}'" in strict.stderr


def test_an_unknown_harmless_key_is_reported_and_strict_refuses_it(tmp_path, tfcost):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**raw("llama-3-8b"), "my_training_note": "v2", "use_flux_capacitor": True}))
    run = tfcost("estimate", str(path), "--format", "json")
    assert run.code == 0
    assert json.loads(run.stdout)["ignored_fields"] == ["my_training_note", "use_flux_capacitor"]
    assert json.loads(run.stdout)["params"]["total"] == 8_030_261_248  # Llama-3-8B, as without the keys
    assert run.stderr.count("\n") == 1 and "my_training_note, use_flux_capacitor" in run.stderr
    strict = tfcost("estimate", str(path), "--strict")
    assert strict.code == 1 and strict.stdout == ""
    assert "'my_training_note', 'use_flux_capacitor'" in strict.stderr and strict.stderr.count("\n") == 1
    imported = tfcost("import", str(path))
    first_line = imported.stdout.split("\n")[0]
    assert first_line.startswith("# ignored config fields") and "my_training_note" in first_line


def test_structural_looking_keys_are_refused_unless_lenient():
    data = {**raw("llama-3-8b"), "num_memory_layers": 4, "n_dense": 2, "adapter_size": 64, "shared_experts": [0, 1]}
    with pytest.raises(TfcostError) as caught:
        read_config(data)
    message = str(caught.value)
    for key in ("num_memory_layers", "n_dense", "adapter_size", "shared_experts"):  # all of them, not the first
        assert f"'{key}'" in message
    assert "--lenient" in message and "\n" not in message
    lenient = read_config(data, lenient=True)
    assert lenient.ignored == ["adapter_size", "n_dense", "num_memory_layers", "shared_experts"]
    # Not structural: a bool, a float, a string under such names, or an integer under another name.
    plain = read_config({**raw("llama-3-8b"), "num_flag": True, "mlp_dim": "wide", "seed": 3})
    assert plain.ignored == ["mlp_dim", "num_flag", "seed"]


def test_every_refusal_is_named_at_once():
    data = {**raw("deepseek-v3"), "moe_layer_freq": 2, "mlp_bias": True, "pruned_heads": {"0": [1]}}
    with pytest.raises(TfcostError) as caught:
        read_config(data)
    message = str(caught.value)
    assert "'moe_layer_freq' = 2" in message and "'mlp_bias' = True" in message and "'pruned_heads'" in message


@pytest.mark.parametrize(
    ("key", "value"),
    [("is_decoder", True), ("add_cross_attention", True), ("tie_encoder_decoder", True), ("is_encoder_decoder", True)],
)
def test_generic_keys_that_would_change_the_model_are_refused(key, value):
    with pytest.raises(TfcostError, match=f"'{key}' = True is not supported"):
        read_config({**raw("llama-3-8b"), key: value})


def test_a_multimodal_wrapper_prices_its_language_model_and_names_its_towers():
    text = raw("llama-2-7b")
    wrapper = {
        "model_type": "llava",
        "architectures": ["LlavaForConditionalGeneration"],
        "text_config": text,
        "vision_config": {"model_type": "clip_vision_model", "hidden_size": 1024, "num_hidden_layers": 24},
        "image_token_index": 32000,
        "projector_hidden_act": "gelu",
        "vision_feature_layer": -2,
        "transformers_version": "4.36.0",
    }
    reading = read_config(wrapper)
    assert model_from_mapping(reading.mapping, "t", "x") == shape(text)
    assert reading.not_priced == ["vision tower (clip_vision_model)", "multimodal projector"]
    with pytest.raises(TfcostError, match="unsupported model_type 'rwkv'"):
        read_config({**wrapper, "text_config": {**text, "model_type": "rwkv"}})
    unknown = read_config({**wrapper, "text_config": {**text, "odd_key": "x"}})
    assert unknown.ignored == ["text_config.odd_key"]


def test_the_towers_not_priced_are_named_on_stderr_and_in_json(tmp_path, tfcost):
    path = tmp_path / "config.json"
    wrapper = {
        "model_type": "llava",
        "text_config": raw("llama-2-7b"),
        "vision_config": {"model_type": "clip_vision_model"},
    }
    path.write_text(json.dumps(wrapper))
    run = tfcost("estimate", str(path), "-f", "json")
    assert run.code == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["params"]["total"] == 6_738_415_616  # Llama-2-7B's language model alone
    assert result["not_priced"] == ["vision tower (clip_vision_model)", "multimodal projector"]
    assert "not priced: vision tower (clip_vision_model), multimodal projector" in run.stderr
