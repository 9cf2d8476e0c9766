"""The Mamba, Mamba-2 and hybrid families (issue 14) against transformers 5.24 on the meta device.

For every model_type read by tfcost/families/ssm.py: the default config in the two forms a config.json holds
(what save_pretrained writes, and the full to_dict() dump) and each published fixture in tests/data/hf_configs
price exactly: parameters, FlopCounterMode's forward FLOPs at T = 100, KV cache bytes per token and the
per-sequence state (conv states at bf16, SSM states in fp32, as transformers' cache holds them). The ground truth
is tests/truth_harness.py (the same measurements as docs/family-truth.md).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

WHY = "the truth tests need torch and transformers: pip install -e '.[test]'"
torch = pytest.importorskip("torch", reason=WHY)
pytest.importorskip("transformers", reason=WHY)
FlopCounterMode = pytest.importorskip("torch.utils.flop_counter", reason=WHY).FlopCounterMode

import truth_harness as harness  # noqa: E402

import tfcost.hf_config  # noqa: E402, F401  (registers the families below; imported first, as the CLI does)
from tfcost.families.ssm import FAMILIES  # noqa: E402
from tfcost.flops import forward_flops, forward_flops_breakdown  # noqa: E402
from tfcost.hf_config import read_config  # noqa: E402
from tfcost.memory import kv_cache_bytes_per_token, state_bytes  # noqa: E402
from tfcost.params import total_params  # noqa: E402
from tfcost.presets import model_from_mapping  # noqa: E402
from tfcost.schema import ModelShape  # noqa: E402

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
TYPES = sorted(FAMILIES)
FIXTURES = sorted(
    path.stem for path in CONFIGS.glob("*.json") if json.loads(path.read_text())["model_type"] in FAMILIES
)
# Their defaults have no attention layer at all, and transformers 5.24 then cannot return the cache
# (DynamicCache.get_seq_length: "can only be called on Attention layers"); the fixtures cover their caches.
CACHE_NOT_RETURNED = {"bamba", "granitemoehybrid"}


def priced(data: dict[str, Any], name: str) -> ModelShape:
    reading = read_config(data)
    return model_from_mapping(reading.mapping, "test", name)


@cache
def default_truth(model_type: str) -> harness.Truth:
    return harness.measure(harness.default_config(model_type), whole=False)


@cache
def fixture_truth(name: str) -> harness.Truth:
    data = json.loads((CONFIGS / f"{name}.json").read_text())
    return harness.measure(harness.config_from_dict(data), whole=False)


def assert_prices(shape: ModelShape, truth: harness.Truth, cache_returned: bool = True) -> None:
    assert total_params(shape) == truth.params
    assert forward_flops(shape, harness.T_LONG) == truth.forward_flops
    if cache_returned:
        assert kv_cache_bytes_per_token(shape, "bf16") == truth.kv_bytes_per_token
        assert state_bytes(shape, 1, "bf16") == truth.state_bytes
    else:
        assert truth.kv_bytes_per_token == -1  # transformers could not return it (see CACHE_NOT_RETURNED)


def test_every_family_has_a_fixture():
    assert {json.loads((CONFIGS / f"{name}.json").read_text())["model_type"] for name in FIXTURES} == set(TYPES)


@pytest.mark.parametrize("form", ["saved", "full"])
@pytest.mark.parametrize("model_type", TYPES)
def test_default_config_prices_exactly(model_type, form):
    data = harness.saved_forms(model_type)[form]
    shape = priced(data, model_type)
    assert_prices(shape, default_truth(model_type), model_type not in CACHE_NOT_RETURNED)


@pytest.mark.thorough
@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_state_and_cache_exactly(name):
    """Parameters, FLOPs and KV bytes of the fixtures are also in tests/test_truth.py; the state is here."""
    data = json.loads((CONFIGS / f"{name}.json").read_text())
    assert_prices(priced(data, name), fixture_truth(name))


def test_recurrent_states_are_fp32_and_conv_states_follow_the_dtype():
    """Codestral-7B (64 Mamba-2 layers): conv (8192 + 2*8*128) x 4 positions at the cache dtype, SSM state
    128 heads x 64 x 128 in fp32 whatever the model's dtype (docs/family-truth.md finding 9)."""
    shape = priced(json.loads((CONFIGS / "mamba-codestral-7b.json").read_text()), "codestral")
    conv, ssm = 64 * 10240 * 4, 64 * 128 * 64 * 128
    assert state_bytes(shape, 1, "bf16") == conv * 2 + ssm * 4 == 273_678_336  # the truth table's figure
    assert state_bytes(shape, 3, "fp8") == 3 * (conv + ssm * 4)


TINY_MAMBA2 = {
    "model_type": "mamba2", "hidden_size": 64, "num_heads": 4, "head_dim": 32, "n_groups": 2, "state_size": 16,
    "chunk_size": 32, "num_hidden_layers": 2, "vocab_size": 100, "expand": 2,
}  # fmt: skip


@cache
def tiny_mamba2(device: str) -> Any:
    return harness.build(harness.config_from_dict(TINY_MAMBA2), device=device)


@pytest.mark.parametrize("tokens", [1, 31, 32, 33, 64, 100])
def test_chunked_scan_flops_follow_the_padding_to_whole_chunks(tokens):
    """The SSD scan pads T up to whole chunks of C = 32: the count jumps at T = 33, not smoothly in T."""
    shape = priced(TINY_MAMBA2, "tiny")
    assert forward_flops(shape, tokens) == harness.forward_flops(tiny_mamba2("meta"), tokens)[0]


def test_causal_convention_is_one_recurrent_step():
    """A decode step (transformers' selective_state_update, on CPU with a real cache) runs one readout bmm of
    2*H*P*N per layer and the projections and head as matmuls; forward(T) - forward(T - 1) in the causal
    convention gives the same. (Its convolution runs over 2 outputs, tfcost's over 1: not compared.)"""
    model, tokens = tiny_mamba2("cpu"), 10
    with torch.no_grad():
        out = model(input_ids=torch.zeros((1, tokens - 1), dtype=torch.long), use_cache=True)
        step = {"input_ids": torch.zeros((1, 1), dtype=torch.long), "cache": out.cache_params, "use_cache": True}
        with FlopCounterMode(display=False) as counter:
            model(**step)
    counted = {str(op): int(n) for op, n in counter.get_flop_counts()["Global"].items()}
    shape = priced(TINY_MAMBA2, "tiny")
    after, before = (forward_flops_breakdown(shape, t, causal=True) for t in (tokens, tokens - 1))
    step_parts = {part: after[part] - before.get(part, 0) for part in after}
    assert step_parts["mamba/scan"] == counted["aten.bmm"]
    matmuls = ("mamba/in_proj", "mamba/out_proj", "output_head")
    assert sum(step_parts[part] for part in matmuls) == counted["aten.mm"]


def test_hybrid_kv_cache_is_only_the_attention_layers():
    """Nemotron-H-8B: 4 of its 52 layers are attention (8 KV heads x 128), the other 48 hold no KV cache."""
    shape = priced(json.loads((CONFIGS / "nemotron-h-8b.json").read_text()), "nemotron-h-8b")
    assert kv_cache_bytes_per_token(shape, "bf16") == 4 * 2 * 8 * 128 * 2
