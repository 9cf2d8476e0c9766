"""The linear-attention and short-convolution readers against transformers 5.24 on the meta device.

For every model_type of tfcost.readers.families.linear: the default config in both forms transformers writes (saved and
full dump; lfm2_moe's default cannot be built by transformers itself, so its patched default fixture stands in) and
every fixture must price exactly: parameters, FlopCounterMode's forward FLOPs at T = 100, the cache bytes that grow
per token (attention layers only) and the fixed per-sequence state (conv states at the model's dtype, recurrent
states in fp32), as tests/truth_harness.py measures them. The chunked delta rule is checked at chunk edges, and the
long-context estimate of Qwen3-Next keeps its state fixed while only the 12 full-attention layers cache.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

WHY = "the truth tests need torch and transformers: pip install -e '.[test]'"
pytest.importorskip("torch", reason=WHY)
pytest.importorskip("transformers", reason=WHY)

import truth_harness as th  # noqa: E402

from tfcost.core.flops import forward_flops  # noqa: E402
from tfcost.core.memory import kv_cache_bytes_per_token, state_bytes  # noqa: E402
from tfcost.core.params import language_model_params  # noqa: E402
from tfcost.readers.hf_config import read_config  # noqa: E402
from tfcost.readers.presets import model_from_mapping  # noqa: E402
from tfcost.schema import ModelShape  # noqa: E402

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
DEFAULTS = [
    "qwen3_next",
    "qwen3_5",
    "qwen3_5_text",
    "qwen3_5_moe",
    "qwen3_5_moe_text",
    "lfm2",
    "minimax",
    "kimi_linear",
]
FIXTURES = ["qwen3-next-80b-a3b", "qwen3.5-35b-a3b", "lfm2-1.2b", "lfm2-moe-default", "qwen3-5-text-default"]
T = th.T_LONG


def figures(shape: ModelShape) -> tuple[int, int, int, int]:
    return (
        language_model_params(shape),
        forward_flops(shape, T),
        kv_cache_bytes_per_token(shape, "bf16"),
        state_bytes(shape, 1, "bf16"),
    )


def measured(truth: th.Truth) -> tuple[int, int, int, int]:
    assert not truth.notes, truth.notes
    return truth.params, truth.forward_flops, truth.kv_bytes_per_token, truth.state_bytes


def tfcost_shape(data: dict[str, Any]) -> ModelShape:
    # Through JSON, as a config.json file would be read.
    return model_from_mapping(read_config(json.loads(json.dumps(data))).mapping, "test", "test")


def truth(config: Any) -> th.Truth:
    """What transformers measures for a config, once per distinct language model (a wrapper and its text type,
    a default and the fixture that equals it, share one build)."""
    key = json.dumps(th.text_config(config).to_dict(), sort_keys=True, default=str)
    if key not in MEASURED:
        MEASURED[key] = th.measure(config, whole=False)
    return MEASURED[key]


MEASURED: dict[str, th.Truth] = {}


def default_truth(model_type: str) -> th.Truth:
    return truth(th.default_config(model_type))


@cache
def fixture(name: str) -> dict[str, Any]:
    return json.loads((CONFIGS / f"{name}.json").read_text())


@pytest.mark.parametrize("form", ["saved", "full"])
@pytest.mark.parametrize("model_type", DEFAULTS)
def test_default_config_prices_exactly(model_type, form):
    data = th.saved_forms(model_type)[form]
    assert figures(tfcost_shape(data)) == measured(default_truth(model_type))


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_prices_exactly(name):
    data = fixture(name)
    assert figures(tfcost_shape(data)) == measured(truth(th.config_from_dict(data)))


def test_lfm2_moe_default_is_refused_as_transformers_cannot_build_it():
    from tfcost.errors import TfcostError

    with pytest.raises(TfcostError, match="layer_types"):
        read_config(th.saved_forms("lfm2_moe")["full"])


def tiny_qwen3_next(**sizes: int) -> dict[str, Any]:
    """A small Qwen3-Next: 3 Gated DeltaNet layers and 1 gated attention layer, 4 experts top-2, GQA on both."""
    return {
        "model_type": "qwen3_next",
        "vocab_size": 100,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "linear_num_key_heads": 2,
        "linear_num_value_heads": 4,
        "linear_key_head_dim": 8,
        "linear_value_head_dim": 16,
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 32,
        "shared_expert_intermediate_size": 32,
        **sizes,
    }


@pytest.mark.parametrize("tokens", [1, 63, 64, 65, 129])
def test_chunked_delta_rule_flops_at_chunk_edges(tokens):
    """T is padded to whole chunks of 64: the count jumps at 65, not at 64 (FlopCounterMode on the torch path)."""
    data = tiny_qwen3_next()
    model = small_model(json.dumps(data))
    assert forward_flops(tfcost_shape(data), tokens) == th.forward_flops(model, tokens)[0]


@cache
def small_model(data: str) -> Any:
    return th.build(th.config_from_dict(json.loads(data)))


def test_value_heads_shared_by_key_heads_and_conv_state_of_kernel_positions():
    """H_v = 4 H_k and a kernel of 3: the recurrent state is H_v x d_k x d_v in fp32 per linear layer, the conv
    state K positions of the q, k, v channels at bf16 (what transformers allocates)."""
    data = tiny_qwen3_next(linear_num_value_heads=8, linear_conv_kernel_dim=3)
    measurement = truth(th.config_from_dict(data))
    assert figures(tfcost_shape(data)) == measured(measurement)
    conv, recurrent = (2 * 2 * 8 + 8 * 16) * 3 * 2, 8 * 8 * 16 * 4  # per linear layer, bytes
    assert measurement.state_bytes == 3 * (conv + recurrent)


def test_qwen3_next_long_context_caches_only_full_attention_layers():
    """The done-when check of issue 14, on `tfcost estimate qwen3-next-80b-a3b --seq 262144`: the KV cache is the 12
    full-attention layers' 2 x 2 KV heads x 256 x 2 bytes per token, and the 36 Gated DeltaNet layers' state (conv
    of 4 positions at bf16, 32 x 128 x 128 in fp32) is what transformers allocates, the same at any T."""
    from tests.golden import run

    per_token = 12 * 2 * 2 * 256 * 2
    state = 36 * (8192 * 4 * 2 + 32 * 128 * 128 * 4)
    long = run(["estimate", "qwen3-next-80b-a3b", "--seq", "262144", "-f", "json"])["kv_cache"]
    short = run(["estimate", "qwen3-next-80b-a3b", "--seq", "1024", "-f", "json"])["kv_cache"]
    assert long["bytes_per_token"] == per_token == default_truth("qwen3_next").kv_bytes_per_token
    assert long["bytes"] == 262144 * per_token
    assert long["state_bytes"] == short["state_bytes"] == state == default_truth("qwen3_next").state_bytes


def tiny_minimax() -> dict[str, Any]:
    """A small MiniMax-01: softmax, lightning, lightning, softmax; blocks of 16 positions; 4 experts top-2."""
    return {
        "model_type": "minimax",
        "vocab_size": 100,
        "hidden_size": 64,
        "intermediate_size": 96,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "block_size": 16,
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
        "layer_types": ["full_attention", "linear_attention", "linear_attention", "full_attention"],
    }


@pytest.mark.parametrize("tokens", [1, 15, 16, 17, 100])
def test_lightning_attention_flops_at_block_edges(tokens):
    """Lightning attention does not pad: whole blocks of C and a last block of T mod C positions."""
    data = tiny_minimax()
    assert forward_flops(tfcost_shape(data), tokens) == th.forward_flops(small_model(json.dumps(data)), tokens)[0]


def test_lightning_attention_state_is_heads_by_head_dim_squared():
    data = tiny_minimax()
    measurement = truth(th.config_from_dict(data))
    assert figures(tfcost_shape(data)) == measured(measurement)
    assert measurement.state_bytes == 2 * 4 * 16 * 16 * 2  # two lightning layers, H x Q x Q at bf16


def tiny_kimi_linear() -> dict[str, Any]:
    """A small Kimi Linear as its checkpoint writes it: layers named 1-based in linear_attn_config (MLA at 2 and
    5), a dense first layer, then 4 experts top-2 and one shared expert."""
    return {
        "model_type": "kimi_linear",
        "vocab_size": 100,
        "pad_token_id": 0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "hidden_size": 64,
        "intermediate_size": 96,
        "moe_intermediate_size": 32,
        "num_hidden_layers": 5,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "kv_lora_rank": 16,
        "qk_nope_head_dim": 8,
        "qk_rope_head_dim": 4,
        "v_head_dim": 8,
        "num_experts": 4,
        "num_experts_per_token": 2,
        "num_shared_experts": 1,
        "first_k_dense_replace": 1,
        "linear_attn_config": {
            "full_attn_layers": [2, 5],
            "kda_layers": [1, 3, 4],
            "head_dim": 8,
            "num_heads": 2,
            "short_conv_kernel_size": 3,
        },
    }


@pytest.mark.parametrize("tokens", [1, 64, 65])
def test_kda_flops_at_chunk_edges(tokens):
    data = tiny_kimi_linear()
    assert forward_flops(tfcost_shape(data), tokens) == th.forward_flops(small_model(json.dumps(data)), tokens)[0]


def test_kda_layers_from_linear_attn_config_price_exactly():
    data = tiny_kimi_linear()
    measurement = truth(th.config_from_dict(data))
    assert figures(tfcost_shape(data)) == measured(measurement)
    conv, recurrent = 3 * 2 * 8 * 3 * 2, 2 * 8 * 8 * 4  # per KDA layer: K positions of q, k, v (bf16); fp32 state
    assert measurement.state_bytes == 3 * (conv + recurrent)


@pytest.mark.parametrize(
    ("mixer", "field"),
    [
        ("gated_deltanet", "gated_deltanet"),
        ("kda", "gated_deltanet"),
        ("lightning", "lightning_attention"),
        ("short_conv", "short_conv"),
    ],
)
def test_a_linear_mixer_without_its_sizes_is_an_error_naming_them(mixer, field):
    from pydantic import ValidationError

    from tfcost.readers.presets import load_model_file, model_preset_paths

    llama = load_model_file(model_preset_paths()["llama-3-8b"]).model_dump()
    llama["layers"] = [{"pattern": [{"mixer": mixer}, {}], "repeat": 16}]
    with pytest.raises(ValidationError, match=f"a '{mixer}' layer needs the model's {field}"):
        ModelShape(**llama)
