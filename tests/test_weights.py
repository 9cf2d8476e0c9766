"""Quantized checkpoints: each format's bytes per weight against its specification, quantization_config read into
the schema, and `serve` pricing the weights as stored unless --weights-dtype says otherwise."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from tfcost.core.params import parameter_breakdown, total_params
from tfcost.core.weights import UNQUANTIZED_BYTES, checkpoint_weight_bytes, quantized_bytes
from tfcost.errors import TfcostError
from tfcost.readers.hf_config import read_config
from tfcost.readers.presets import load_model
from tfcost.schema import Quantization

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
N = 128 * 128 * 64  # a multiple of every group and block


def bits_per_weight(**fields: Any) -> Fraction:
    return Fraction(8 * quantized_bytes(N, Quantization(**fields)), N)


@pytest.mark.parametrize(
    ("fields", "bits"),
    [
        # OCP MX v1.0: 32 E2M1 elements share one E8M0 scale -> 4 + 8/32 bits.
        ({"method": "mxfp4", "bits": 4, "group_size": 32}, Fraction(17, 4)),
        # NVFP4: 16 E2M1 elements share one E4M3 scale -> 4 + 8/16 bits.
        ({"method": "nvfp4", "bits": 4, "group_size": 16}, Fraction(9, 2)),
        # DeepSeek-V3 §3.3.2: fp8 weights, one fp32 scale per 128 x 128 block.
        ({"method": "fp8", "bits": 8, "block": (128, 128)}, 8 + Fraction(32, 128 * 128)),
        # AWQ/GPTQ, 4 bits, group 128: an fp16 scale and a 4-bit zero point per group.
        ({"method": "awq", "bits": 4, "group_size": 128}, 4 + Fraction(16 + 4, 128)),
        # QLoRA §3: NF4 with an fp32 absmax per 64 costs 32/64 = 0.5 bits more; double quantization
        # 8/64 + 32/(64*256) = 0.127 bits.
        ({"method": "bnb-4bit", "bits": 4}, 4 + Fraction(32, 64)),
        ({"method": "bnb-4bit", "bits": 4, "double_quant": True}, 4 + Fraction(8, 64) + Fraction(32, 64 * 256)),
    ],
)
def test_bits_per_weight_follow_each_format(fields, bits):
    assert bits_per_weight(**fields) == bits


def llama_with(quantization_config: dict[str, Any]) -> dict[str, Any]:
    return {**json.loads((CONFIGS / "llama-3-8b.json").read_text()), "quantization_config": quantization_config}


def test_quantization_config_is_read_into_the_schema():
    # gpt-oss's list: attention, router, embeddings and head stay 16-bit; only the MLP weights are mxfp4.
    gpt_oss = {
        "quant_method": "mxfp4",
        "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens",
                                   "lm_head"],
    }  # fmt: skip
    assert read_config(llama_with(gpt_oss)).mapping["quantization"] == {
        "method": "mxfp4", "bits": 4, "group_size": 32, "not_converted": ["attention"]
    }  # fmt: skip
    fp8 = read_config(json.loads((CONFIGS / "deepseek-v3.json").read_text())).mapping["quantization"]
    assert fp8 == {"method": "fp8", "bits": 8, "block": [128, 128]}
    gptq = {"quant_method": "gptq", "bits": 4, "group_size": -1, "desc_act": False, "sym": True}
    assert read_config(llama_with(gptq)).mapping["quantization"] == {"method": "gptq", "bits": 4}
    bnb = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_use_double_quant": True}
    assert read_config(llama_with(bnb)).mapping["quantization"]["method"] == "bnb-4bit"


@pytest.mark.parametrize(
    ("quantization_config", "expected"),
    [
        ({"quant_method": "hqq"}, "quant_method 'hqq' is not supported"),
        # Entries that name single layers or no known weight are notes since issue 24 (test_quantized_releases).
        ("fp8", "should be a mapping"),
    ],
)
def test_quantization_configs_tfcost_cannot_price_are_refused(quantization_config, expected):
    with pytest.raises(TfcostError, match=expected):
        read_config(llama_with(quantization_config))


def test_unconverted_parts_stay_16_bit(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(llama_with({"quant_method": "mxfp4", "modules_to_not_convert": ["self_attn"]})))
    shape = load_model(str(path))
    parts = parameter_breakdown(shape)
    mlp = sum(count for name, count in parts.items() if "/mlp/" in name)
    assert mlp % 32 == 0
    expected = mlp * 17 // 32 + (total_params(shape) - mlp) * UNQUANTIZED_BYTES  # 4.25 bits = 17/32 bytes
    assert checkpoint_weight_bytes(shape) == expected


def test_serve_prices_the_checkpoint_as_stored_unless_told(tfcost):
    path = str(CONFIGS / "deepseek-v3.json")
    stored = json.loads(tfcost("serve", path, "--gpus", "8", "--gpu", "h200", "-f", "json").stdout)
    shape = load_model(path)
    assert stored["memory"]["weights_bytes"] == checkpoint_weight_bytes(shape)
    assert stored["weights_format"].startswith("fp8") and stored["compute_dtype"] == "fp8"
    # Nearly all of DeepSeek-V3 is fp8 (1 byte): its 671.0 B parameters store in about 673 GB, where the Hub's
    # checkpoint (with its 14 B multi-token-prediction module, which tfcost does not count) holds 688.6 GB.
    assert 1.0 < stored["memory"]["weights_bytes"] / total_params(shape) < 1.01
    asked = json.loads(
        tfcost("serve", path, "--gpus", "8", "--gpu", "h200", "--weights-dtype", "bf16", "-f", "json").stdout
    )
    assert asked["memory"]["weights_bytes"] == 2 * total_params(shape)
    assert asked["weights_format"] == "bf16" and asked["setup"]["weights_dtype"] == "bf16"
    preset = json.loads(tfcost("serve", "llama-3-8b", "-f", "json").stdout)  # no quantization: bf16 as before
    assert preset["weights_format"] == "bf16" and preset["memory"]["weights_bytes"] == 2 * 8_030_261_248
