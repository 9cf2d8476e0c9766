"""Quantized releases as published (tests/data/hf_configs/quantized/, sources in SOURCES.md): their
quantization_config module lists name norms, biases, routers and gates that no quantizer converts, and are read,
never refused; an entry that might change the bytes and that tfcost cannot place is a note. And the active count
as model cards give it (params.active_non_embedding)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tfcost.core.params import active_params, active_params_less_input_embeddings, total_params
from tfcost.core.weights import checkpoint_weight_bytes
from tfcost.errors import TfcostError
from tfcost.readers.hf_config import read_config
from tfcost.readers.presets import load_model

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
QUANTIZED = CONFIGS / "quantized"


def reading(name: str) -> Any:
    return read_config(json.loads((QUANTIZED / name).read_text()))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # Qwen3-*-FP8 list lm_head and, per layer, input_layernorm, mlp.gate and post_attention_layernorm: all
        # stay 16-bit anyway, so every projection is fp8 in 128 x 128 blocks.
        ("qwen3-30b-a3b-fp8.json", {"method": "fp8", "bits": 8, "block": [128, 128]}),
        ("qwen3-235b-a22b-fp8.json", {"method": "fp8", "bits": 8, "block": [128, 128]}),
        # MiniMax-M2: ["gate", "e_score_correction_bias", "lm_head"]: the router, its bias and the head.
        ("minimax-m2-fp8.json", {"method": "fp8", "bits": 8, "block": [128, 128]}),
        # modelopt NVFP4 (config_groups: 4-bit floats in groups of 16); 'model.layers.61*' is DeepSeek-V3's
        # multi-token-prediction layer, past the 61 layers priced.
        ("deepseek-v3-nvfp4.json", {"method": "nvfp4", "bits": 4, "group_size": 16}),
        # gpt-oss: attention, router, embeddings and head stay bf16; the experts are mxfp4.
        ("gpt-oss-20b-mxfp4.json", {"method": "mxfp4", "bits": 4, "group_size": 32, "not_converted": ["attention"]}),
        # Llama 4 (the wrapper's quantization_config covers its language model): attention and the shared expert
        # stay bf16; the router, its stats, the head and the vision tower are passed over.
        ("llama-4-maverick-fp8.json", {"method": "fp8", "bits": 8, "not_converted": ["attention", "shared_experts"]}),
        # compressed-tensors FP8 (per channel), its ignore list in regexes and a class name.
        ("llama-4-scout-fp8-dynamic.json", {"method": "fp8", "bits": 8, "not_converted": ["attention"]}),
        ("glm-4.5-fp8.json", {"method": "fp8", "bits": 8}),
    ],
)
def test_published_quantized_releases_are_read(name, expected):
    found = reading(name)
    assert found.mapping["quantization"] == expected
    assert found.notes == []


def test_deepseek_v3_fp8_as_published_is_read():
    found = read_config(json.loads((CONFIGS / "deepseek-v3.json").read_text()))
    assert found.mapping["quantization"] == {"method": "fp8", "bits": 8, "block": [128, 128]} and not found.notes


def test_qwen3_235b_fp8_prices_as_its_block_fp8_checkpoint():
    # By hand from the config's sizes (d 4096, 94 layers, 64 query heads and 4 key-value heads of 128, 128 experts
    # of 1536, vocabulary 151,936, untied): the projections are fp8 (1 byte) with one fp32 scale per 128 x 128
    # block; embeddings, head, norms (q/k-norm too) and routers stay at 2 bytes.
    d, layers, q, kv, experts, expert_ff, vocab = 4096, 94, 64 * 128, 4 * 128, 128, 1536, 151_936
    attention = d * q + 2 * d * kv + q * d
    expert_weights = experts * 3 * d * expert_ff
    fp8_bytes = layers * (attention + (attention // 128**2) * 4 + expert_weights + (expert_weights // 128**2) * 4)
    bf16 = 2 * (2 * vocab * d + d + layers * (2 * d + 2 * 128 + d * experts))
    shape = load_model(str(QUANTIZED / "qwen3-235b-a22b-fp8.json"))
    assert checkpoint_weight_bytes(shape) == fp8_bytes + bf16


@pytest.mark.parametrize(
    ("skip", "note"),
    [
        (["model.layers.0.mlp"], "leaves the mlp of layer 0 unconverted; tfcost prices every layer alike"),
        (["vision_adapter.proj"], "names module tfcost cannot place ('vision_adapter.proj'); priced as converted"),
        (["model.layers.*.self_attn.q_proj"], "leaves single projections unconverted"),
    ],
)
def test_entries_that_could_change_the_bytes_are_notes_not_errors(skip, note):
    config = json.loads((CONFIGS / "llama-3-8b.json").read_text())
    found = read_config({**config, "quantization_config": {"quant_method": "awq", "modules_to_not_convert": skip}})
    assert len(found.notes) == 1 and note in found.notes[0]
    assert "not_converted" not in found.mapping["quantization"]


def test_a_part_listed_in_every_layer_is_that_part_unconverted():
    config = json.loads((CONFIGS / "llama-3-8b.json").read_text())
    skip = [f"model.layers.{i}.self_attn" for i in range(config["num_hidden_layers"])]
    found = read_config({**config, "quantization_config": {"quant_method": "awq", "modules_to_not_convert": skip}})
    assert found.mapping["quantization"]["not_converted"] == ["attention"] and not found.notes


def test_a_module_list_that_is_no_list_is_still_refused():
    config = json.loads((CONFIGS / "llama-3-8b.json").read_text())
    with pytest.raises(TfcostError, match="should be a list of names"):
        read_config({**config, "quantization_config": {"quant_method": "awq", "modules_to_not_convert": "lm_head"}})


def test_notes_reach_the_user_on_stderr(tfcost, tmp_path):
    config = json.loads((CONFIGS / "llama-3-8b.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(
        json.dumps({**config, "quantization_config": {"quant_method": "awq", "ignore": ["model.layers.3.mlp"]}})
    )
    result = tfcost("estimate", str(path), "-f", "json")
    assert "leaves the mlp of layer 3 unconverted" in result.stderr
    assert json.loads(result.stdout)["params"]["total"] == 8_030_261_248


@pytest.mark.parametrize("name", sorted(path.name for path in QUANTIZED.glob("*.json")))
def test_every_quantized_release_prices_in_serve(tfcost, name):
    result = json.loads(tfcost("serve", str(QUANTIZED / name), "--gpus", "8", "--gpu", "h200", "-f", "json").stdout)
    shape = load_model(str(QUANTIZED / name))
    assert result["memory"]["weights_bytes"] == checkpoint_weight_bytes(shape) < 2 * total_params(shape)


@pytest.mark.parametrize(
    ("name", "card"),
    [
        # gpt-oss model card (arXiv:2508.10925; OpenAI's release page): 20.9B total with 3.6B active, 116.8B with
        # 5.1B active; the token table (201,088 x 2880 = 0.58 B) is the difference from the active count.
        ("gpt-oss-20b.json", 3.6e9),
        ("gpt-oss-120b.json", 5.1e9),
    ],
)
def test_active_less_input_embeddings_is_the_cards_active_count(name, card):
    shape = load_model(str(CONFIGS / name))
    counted = active_params_less_input_embeddings(shape)
    assert round(counted / 1e8) == round(card / 1e8)
    assert active_params(shape) - counted == 201_088 * 2880


def test_a_tied_table_is_the_head_and_stays_active():
    shape = load_model("gpt2-small")
    assert active_params_less_input_embeddings(shape) == active_params(shape) - 1024 * 768  # the position table


def test_estimate_and_list_show_the_active_counts(tfcost):
    estimate = json.loads(tfcost("estimate", str(CONFIGS / "gpt-oss-20b.json"), "-f", "json").stdout)
    assert estimate["params"]["active_non_embedding"] == 3_608_307_264
    table = tfcost("list", "-f", "markdown").stdout
    assert "| active |" in table.replace("  ", " ").replace("  ", " ") or "active" in table.splitlines()[2]
    row = next(line for line in table.splitlines() if line.startswith("| deepseek-v3 "))
    assert "671.03 G" in row and "37.55 G" in row
