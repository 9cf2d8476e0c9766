"""The Mamba, Mamba-2 and hybrid families (issue 14) against transformers 5.24 on the meta device.

For every model_type read by tfcost/readers/families/ssm.py: the default config in the two forms a config.json holds
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

import tfcost.readers.hf_config  # noqa: E402, F401  (registers the families below; imported first, as the CLI does)
from tfcost.core.flops import forward_flops, forward_flops_breakdown  # noqa: E402
from tfcost.core.memory import kv_cache_bytes_per_token, state_bytes  # noqa: E402
from tfcost.core.params import parameter_breakdown, total_params  # noqa: E402
from tfcost.errors import TfcostError  # noqa: E402
from tfcost.readers.families.ssm import FAMILIES  # noqa: E402
from tfcost.readers.hf_config import read_config  # noqa: E402
from tfcost.readers.presets import model_from_mapping  # noqa: E402
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


# Zamba2's shared transformer blocks (tfcost.core.layers.shared_transformer): a small model with four uses of the
# blocks,
# every way of sharing them that a config can ask for, each against transformers on the meta device.
TINY_ZAMBA2 = {
    "model_type": "zamba2", "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 96, "n_mamba_heads": 4,
    "mamba_d_state": 16, "chunk_size": 32, "vocab_size": 100, "adapter_rank": 8, "num_hidden_layers": 8,
    "layers_block_type": ["mamba", "hybrid", "mamba", "hybrid", "hybrid", "mamba", "hybrid", "mamba"],
}  # fmt: skip
ZAMBA2_SHARING = {
    "one block": {},
    "two blocks, two SSM groups": {"num_mem_blocks": 2, "mamba_ngroups": 2},
    "three blocks, attention adapters, rotary": {
        "num_mem_blocks": 3, "use_shared_attention_adapter": True, "use_mem_rope": True,
    },
    "more blocks than uses": {"num_mem_blocks": 7},
    "biases, GQA, expand 1": {"add_bias_linear": True, "num_key_value_heads": 2, "mamba_expand": 1},
}  # fmt: skip


@pytest.mark.parametrize("sharing", sorted(ZAMBA2_SHARING))
def test_zamba2_shared_blocks_price_exactly(sharing):
    """Weights held once per shared block (by its first use), matmuls and KV cache at every use, adapters and the
    d x d projection per use: parameters, FLOPs (at T = 100, and T = 1 where no chunk is full), KV cache and state
    as transformers builds them."""
    data = {**TINY_ZAMBA2, **ZAMBA2_SHARING[sharing]}
    shape = priced(data, "tiny-zamba2")
    assert_prices(shape, harness.measure(harness.config_from_dict(data), whole=False))
    model = harness.build(harness.config_from_dict(data))
    assert forward_flops(shape, 1) == harness.forward_flops(model, 1)[0]


def test_zamba2_holds_a_shared_block_once_and_runs_it_at_every_use():
    """The default Zamba2 config (docs/family-truth.md: 2,481,848,336 parameters): 9 hybrid layers use one shared
    block. Its q projection (2d x 2d = 5120 x 5120) is held once, but runs 9 times per token; each use has its own MLP
    adapter (d x r + r x 2F = 2560 x 128 + 128 x 20480) and d x d linear."""
    shape = priced(harness.saved_forms("zamba2")["saved"], "zamba2")
    parts = parameter_breakdown(shape)
    assert parts["layers/attention/q"] == 5120 * 5120
    assert parts["layers/adapter/mlp"] == 9 * (2560 * 128 + 128 * 20480)
    assert parts["layers/shared_transformer/linear"] == 9 * 2560 * 2560
    flops = forward_flops_breakdown(shape, 100)
    assert flops["attention/qkv"] == 9 * 3 * 2 * 100 * 5120 * 5120
    assert total_params(shape) == 2_481_848_336


def test_zamba2_first_use_holds_the_weights():
    """A stack whose every shared-block layer is tied would hold no copy of the block: refused."""
    mapping = read_config(TINY_ZAMBA2).mapping
    layers = [
        dict(group, pattern=[dict(spec, tied=spec["mixer"] != "mamba2") for spec in group["pattern"]])
        for group in mapping["layers"]
    ]
    with pytest.raises(TfcostError, match="first 'shared_transformer\\+mamba2' layer holds the shared weights"):
        model_from_mapping({**mapping, "layers": layers}, "test", "all-tied")
    mamba_tied = [dict(group, pattern=[dict(spec, tied=True) for spec in group["pattern"]]) for group in layers]
    with pytest.raises(TfcostError, match="a 'mamba2' layer has no shared weights to tie"):
        model_from_mapping({**mapping, "layers": mamba_tied}, "test", "mamba-tied")
