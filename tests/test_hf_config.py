"""Reading Hugging Face config.json files: the mapping of each family, every way a file can be wrong, the
preset YAML that `import` writes, and --set overrides. (tests/test_truth.py checks the numbers against transformers.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tfcost.core.params import total_params
from tfcost.errors import TfcostError, UsageError
from tfcost.readers.hf_config import FAMILIES, shape_mapping
from tfcost.readers.presets import apply_overrides, load_model, model_from_mapping, resolve_model
from tfcost.schema import ModelShape

CONFIGS = Path(__file__).parent / "data" / "hf_configs"


def config(name: str, **changes: Any) -> dict[str, Any]:
    data = json.loads((CONFIGS / f"{name}.json").read_text())
    for key, value in changes.items():
        if value is ...:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def shape_of(data: dict[str, Any]) -> ModelShape:
    return ModelShape.model_validate({"name": "x", **shape_mapping(data)})


def error_of(data: dict[str, Any]) -> str:
    with pytest.raises(TfcostError) as caught:
        shape_mapping(data)
    assert "\n" not in str(caught.value)
    return str(caught.value)


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.json")), ids=lambda p: p.stem)
def test_import_writes_a_preset_that_reads_back_as_the_same_model(path, capsys, tmp_path):
    from tfcost.cli.main import main

    with pytest.raises(SystemExit) as done:
        main(["import", str(path)])
    out = capsys.readouterr().out
    assert done.value.code == 0
    preset = tmp_path / "imported.yaml"
    preset.write_text(out)
    from_config = load_model(str(path))
    assert yaml.safe_load(out)["name"] == from_config.name
    assert load_model(str(preset)) == from_config


def test_unknown_model_type_lists_the_known_ones():
    message = error_of(config("llama-3-8b", model_type="rwkv"))
    assert "unsupported model_type 'rwkv'" in message
    assert all(name in message for name in FAMILIES)
    assert "missing field 'model_type'" in error_of(config("llama-3-8b", model_type=...))


@pytest.mark.parametrize(
    ("name", "changes", "expected"),
    [
        ("llama-3-8b", {"hidden_size": ...}, "llama config: missing field 'hidden_size'"),
        ("llama-3-8b", {"hidden_size": "4096"}, "field 'hidden_size' should be an integer, not '4096'"),
        ("llama-3-8b", {"num_hidden_layers": 32.0}, "field 'num_hidden_layers' should be an integer"),
        ("llama-3-8b", {"num_hidden_layers": True}, "field 'num_hidden_layers' should be an integer"),
        ("llama-3-8b", {"tie_word_embeddings": "no"}, "field 'tie_word_embeddings' should be true or false"),
        ("llama-3-8b", {"attention_bias": 1}, "field 'attention_bias' should be true or false"),
        ("llama-3-8b", {"num_experts": 8}, "unrecognised field 'num_experts' looks structural"),
        ("llama-3-8b", {"n_foo": 1, "bar_size": 2}, "unrecognised fields 'bar_size', 'n_foo' look structural"),
        ("llama-3-8b", {"architectures": ["LlamaForSequenceClassification"]}, "task head tfcost does not price"),
        ("mistral-7b", {"layer_types": ["full_attention"] * 32}, "unrecognised field 'layer_types'"),
        ("gemma-2-9b", {"layer_types": ["full_attention"] * 3}, "'layer_types' has 3 entries for 42 layers"),
        ("gemma-2-9b", {"layer_types": ["chunked_attention"] * 42}, "layer type 'chunked_attention'"),
        ("gemma-2-9b", {"use_bidirectional_attention": True}, "'use_bidirectional_attention' = True"),
        ("deepseek-v3", {"moe_layer_freq": 2}, "field 'moe_layer_freq' = 2 is not supported"),
        ("bert-base", {"position_embedding_type": "relative_key"}, "'position_embedding_type' = 'relative_key'"),
        ("bert-base", {"architectures": ["BertForSequenceClassification"]}, "is not supported"),
        ("bert-base", {"add_cross_attention": True}, "'add_cross_attention' = True"),
        ("gpt2-small", {"add_cross_attention": True}, "'add_cross_attention' = True"),
        ("gpt2-small", {"head_dim": 32}, "unrecognised field 'head_dim' looks structural"),
        ("t5-small", {"feed_forward_proj": "gelu-relu"}, "'feed_forward_proj' = 'gelu-relu'"),
        ("qwen2.5-7b", {"layer_types": "sliding_attention"}, "'layer_types' should be a list of str"),
        ("phi-3-mini", {"rope_parameters": {"partial_rotary_factor": "half"}}, "rope_parameters.partial_rotary_factor"),
    ],
)
def test_bad_fields_are_named(name, changes, expected):
    assert expected in error_of(config(name, **changes))


def test_fields_that_change_no_count_are_ignored_on_purpose():
    base = shape_mapping(config("llama-3-8b"))
    noisy = config("llama-3-8b", rope_theta=1.0, attention_dropout=0.3, initializer_range=1.0, eos_token_id=[1, 2])
    assert shape_mapping(noisy) == base


def test_qwen_sliding_window_needs_use_sliding_window():
    assert shape_of(config("qwen2.5-7b")).sliding_window is None  # the config's 131072 is not used
    slid = shape_of(config("qwen2.5-7b", use_sliding_window=True, sliding_window=4096, max_window_layers=20))
    assert (slid.sliding_window, slid.sliding_layers) == (4096, tuple(range(20, 28)))
    moe = shape_of(config("qwen1.5-moe-a2.7b", use_sliding_window=True, sliding_window=4096, max_window_layers=6))
    assert moe.sliding_layers == (0, 2, 4)  # Qwen2MoeConfig: even layers below max_window_layers


def test_window_defaults_follow_transformers():
    assert shape_of(config("mistral-7b", sliding_window=...)).sliding_window == 4096  # MistralConfig's default
    assert shape_of(config("mistral-7b", sliding_window=None)).sliding_window is None
    gemma2 = shape_of(config("gemma-2-9b"))
    assert gemma2.sliding_layers == tuple(range(0, 42, 2))
    explicit = ["full_attention", "sliding_attention"] * 21
    assert shape_of(config("gemma-2-9b", layer_types=explicit)).sliding_layers == tuple(range(1, 42, 2))
    assert shape_of(config("phi-3-mini")).sliding_layers is None  # every layer


def test_falcon_variants():
    falcon_7b = shape_of(config("falcon-7b"))
    assert (falcon_7b.n_kv_heads, falcon_7b.block_norms, falcon_7b.parallel_block) == (1, 1, True)
    # Falcon-40B's layout: grouped K/V heads and two norms in its parallel block.
    falcon_40b = shape_of(config("falcon-7b", new_decoder_architecture=True, num_kv_heads=8, hidden_size=8192,
                                 num_attention_heads=128))  # fmt: skip
    assert (falcon_40b.n_kv_heads, falcon_40b.block_norms) == (8, 2)
    sequential = shape_of(config("falcon-7b", parallel_attn=False, multi_query=False, alibi=True))
    assert (sequential.n_kv_heads, sequential.block_norms, sequential.position) == (71, 2, "alibi")


def test_rotary_fraction_is_recorded():
    assert shape_of(config("pythia-160m")).rotary_fraction == 0.25
    phi = config("phi-3-mini", rope_parameters={"rope_theta": 1e4, "partial_rotary_factor": 0.75})
    assert shape_of(phi).rotary_fraction == 0.75
    assert shape_of(config("pythia-160m", rotary_pct=1)).rotary_fraction == 1


def test_deepseek_query_projection_and_dense_layers():
    lite = shape_of(config("deepseek-v2-lite"))
    assert lite.mla is not None and lite.mla.q_lora_rank is None
    assert lite.moe is not None and lite.moe.dense_layers == (0,)
    # A config without q_lora_rank gets DeepseekV2Config's default, 1536, as transformers builds it.
    defaulted = shape_of(config("deepseek-v2-lite", q_lora_rank=...))
    assert defaulted.mla is not None and defaulted.mla.q_lora_rank == 1536


def test_bert_classes():
    assert shape_of(config("bert-base")).head == "mlm"
    base = shape_of(config("bert-base", architectures=["BertModel"]))
    assert (base.head, base.pooler) == ("none", True)
    assert total_params(base) == 109_482_240


# --- files and overrides


def load_error(tmp_path: Path, text: str | bytes, name: str = "config.json") -> str:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(TfcostError) as caught:
        load_model(str(path))
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    return message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"model_type": "llama", ', "malformed JSON at line 1"),
        ("[1, 2]", "must hold a JSON object, this file holds a list"),
        (b"\xff\xfe{}", "not UTF-8"),
        ("{}", "missing field 'model_type'"),
        ('{"model_type": "llama"}', "missing field"),
        ("[" * 100_000 + "]" * 100_000, "JSON"),
    ],
)
def test_bad_config_files_give_one_line(tmp_path, text, expected):
    assert expected in load_error(tmp_path, text)


def test_config_name_comes_from_its_folder_or_name_or_path(tmp_path):
    folder = tmp_path / "my-llama"
    folder.mkdir()
    data = config("llama-3-8b")
    (folder / "config.json").write_text(json.dumps(data))
    assert load_model(str(folder / "config.json")).name == "my-llama"
    assert resolve_model(None, str(CONFIGS / "llama-2-13b.json")).name == "Llama-2-13b-hf"  # its _name_or_path


def test_overrides_are_validated_like_a_preset():
    shape = resolve_model("llama-3-8b", overrides=["n_kv_heads=16", "bias.qkv=true", "sliding_layers=[0, 1]",
                                                   "sliding_window=512"])  # fmt: skip
    assert (shape.n_kv_heads, shape.bias.qkv, shape.sliding_layers) == (16, True, (0, 1))
    assert shape.name == "llama-3-8b (n_kv_heads=16, bias.qkv=true, sliding_layers=[0, 1], sliding_window=512)"
    assert shape.published_params is None  # no longer the published model
    moe = resolve_model("mixtral-8x7b", overrides=["moe.experts_per_token=1"])
    assert moe.moe is not None and moe.moe.experts_per_token == 1
    added = resolve_model("llama-3-8b", overrides=["moe.n_experts=4", "moe.experts_per_token=2", "moe.expert_d_ff=64"])
    assert added.moe is not None and added.moe.n_experts == 4


@pytest.mark.parametrize(
    ("overrides", "error", "expected"),
    [
        (["n_kv_heads"], UsageError, "--set expects KEY=VALUE"),
        (["=3"], UsageError, "--set expects KEY=VALUE"),
        (["n_kv_heads=[1"], UsageError, "cannot read the value"),
        (["d_model.x=1"], UsageError, "'d_model' is not a mapping"),
        (["n_kv_heads=3"], TfcostError, "n_kv_heads (3) must divide n_heads (32)"),
        (["n_kv_heads='8'"], TfcostError, "n_kv_heads"),
        (["n_kv_head=8"], TfcostError, "unknown key 'n_kv_head'"),
        (["moe.n_experts=4"], TfcostError, "missing key 'moe.experts_per_token'"),
    ],
)
def test_bad_overrides_are_named(overrides, error, expected):
    with pytest.raises(error) as caught:
        resolve_model("llama-3-8b", overrides=overrides)
    assert expected in str(caught.value)


def test_overrides_do_not_touch_the_source_mapping():
    mapping = {"name": "m", "bias": {"qkv": False}, "published_params": 5}
    changed = apply_overrides(mapping, ["bias.qkv=true"])
    assert mapping == {"name": "m", "bias": {"qkv": False}, "published_params": 5}
    assert changed == {"name": "m (bias.qkv=true)", "bias": {"qkv": True}}
    assert apply_overrides(mapping, []) == mapping


def test_model_source_must_be_one_of_model_and_config():
    with pytest.raises(UsageError, match="not both"):
        resolve_model("gpt2-small", str(CONFIGS / "gpt2-small.json"))
    with pytest.raises(UsageError, match="no model given"):
        resolve_model(None)
    assert resolve_model(None, str(CONFIGS / "gpt2-small.json")) == model_from_mapping(
        shape_mapping(config("gpt2-small")) | {"source": load_model(str(CONFIGS / "gpt2-small.json")).source},
        "x",
        "gpt2-small",
    )


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"num_attention_heads": 0}, "n_heads: Input should be greater than 0"),
        ({"num_hidden_layers": 40}, "'layers_block_type' must list the type of each of 40 layers"),
        ({"layers_block_type": ["mamba"] * 37 + ["attention"]}, "layer type 'attention' in 'layers_block_type'"),
        ({"num_mem_blocks": 0}, "field 'num_mem_blocks' should be a positive integer"),
        # transformers 5.24 ties nothing without it, the shared blocks included (docs/family-truth.md, finding 5)
        ({"tie_word_embeddings": False}, "field 'tie_word_embeddings' = False is not supported"),
    ],
)
def test_zamba2_configs_tfcost_does_not_price_are_one_error(changes, expected):
    with pytest.raises(TfcostError) as error:
        model_from_mapping(shape_mapping(config("zamba2-1.2b", **changes)), "test", "zamba2")
    assert expected in str(error.value)
