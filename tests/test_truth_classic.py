"""The classic families (tfcost/readers/families/classic.py, issue 38) against transformers 5.24 on the meta device.

For each model_type, transformers' default config in the two forms a config.json holds it ("saved": what
`save_pretrained` writes, `to_diff_dict()`; "full": `to_dict()`), and variants that turn on what the default
leaves off (biases, multi-query, parallel residuals, query/key norms, local-attention layers), each read by tfcost
as `--config` reads it: parameters, FlopCounterMode's forward FLOPs at T = 100 and the cache bytes per token must
be exactly what transformers builds, and a recurrent model's state per sequence (Falcon-Mamba's) too. The
variants are cut to two layers (the counts are per layer) to stay quick.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

WHY = "the truth tests need torch and transformers: pip install -e '.[test]'"
torch = pytest.importorskip("torch", reason=WHY)
pytest.importorskip("transformers", reason=WHY)

from truth_harness import config_from_dict, measure, saved_forms  # noqa: E402

from tfcost.core.flops import forward_flops  # noqa: E402
from tfcost.core.memory import kv_cache_bytes_per_token, state_bytes  # noqa: E402
from tfcost.core.params import total_params  # noqa: E402
from tfcost.errors import TfcostError  # noqa: E402
from tfcost.readers.families import classic  # noqa: E402
from tfcost.readers.hf_config import read_config  # noqa: E402
from tfcost.schema import ModelShape  # noqa: E402

T = 100
TWO_LAYERS = {"num_hidden_layers": 2, "num_layers": 2, "n_layer": 2}
# What each variant turns on; {} is the default config itself, at its own depth.
VARIANTS: dict[str, list[dict[str, Any]]] = {
    "bloom": [{}, {"hidden_size": 128, "n_head": 4, "tie_word_embeddings": False}],
    "gptj": [{}, {"rotary_dim": 64, "n_inner": 1024, "n_embd": 256, "n_head": 4}],
    "codegen": [{}, {"rotary_dim": 32, "n_embd": 256, "n_head": 4}],
    "phi": [{}, {"qk_layernorm": True, "num_key_value_heads": 8}],
    "gpt_bigcode": [{}, {"multi_query": False, "num_key_value_heads": 12}],
    "gpt_neo": [{}, {"attention_types": [[["local"], 2]], "attention_layers": ["local", "local"], "window_size": 64}],
    "cohere": [{}, {"use_qk_norm": True, "num_key_value_heads": 4}],
    "helium": [{}, {"attention_bias": True, "mlp_bias": True}],
    "glm": [{}, {"attention_bias": False}],
    "starcoder2": [{}, {"use_bias": False, "sliding_window": 4096}],
    "exaone": [{}, {"attention_bias": True, "mlp_bias": True}],
    "internlm3": [{}, {"attention_bias": True, "mlp_bias": True}],
    "stablelm": [{}, {"use_qkv_bias": True, "use_parallel_residual": True, "num_key_value_heads": 8}],
    "persimmon": [{}, {"qk_layernorm": False}],
    "falcon_mamba": [{}, {"use_bias": True, "use_conv_bias": False, "state_size": 8}],
    "opt": [
        {},
        {"enable_bias": False, "layer_norm_elementwise_affine": False, "tie_word_embeddings": False},
        {"do_layer_norm_before": False},
    ],
    "minicpm3": [{}, {"attention_bias": True, "mlp_bias": True}, {"q_lora_rank": None}],
    "arcee": [{}, {"attention_bias": True, "mlp_bias": True}],
    "iquestcoder": [{}, {"attention_bias": True, "mlp_bias": True}],
    "nemotron": [{"num_key_value_heads": 48}, {"attention_bias": True, "mlp_bias": True, "num_key_value_heads": 8}],
    "jais2": [{}, {"attention_bias": False, "mlp_bias": False}],
    "vaultgemma": [{}],
    "olmo": [{}, {"attention_bias": True, "clip_qkv": 8.0, "num_key_value_heads": 8}],
}
CASES = [(model_type, index) for model_type, patches in VARIANTS.items() for index in range(len(patches))]


def forms(model_type: str, index: int) -> dict[str, dict[str, Any]]:
    patch = VARIANTS[model_type][index]
    out = {}
    for form, data in saved_forms(model_type).items():
        data = json.loads(json.dumps(data))  # as a file holds it
        if patch:
            data.update({key: value for key, value in TWO_LAYERS.items() if key in saved_forms(model_type)["full"]})
            data.update(patch)
        out[form] = data
    return out


def priced(data: dict[str, Any]) -> tuple[int, int, int, int]:
    reading = read_config(data)
    shape = ModelShape.model_validate({"name": reading.model_type, **reading.mapping})
    return (
        total_params(shape),
        forward_flops(shape, T),
        kv_cache_bytes_per_token(shape, "bf16"),
        state_bytes(shape, 1, "bf16"),
    )


def test_every_classic_family_is_checked():
    assert set(VARIANTS) == set(classic.FAMILIES)


@pytest.mark.parametrize(("model_type", "index"), CASES, ids=[f"{t}-{i}" for t, i in CASES])
def test_prices_exactly_what_transformers_builds(model_type, index):
    both = forms(model_type, index)
    measured = measure(config_from_dict(both["full"]), T, whole=False)
    assert measured.notes == []
    expected = (measured.params, measured.forward_flops, measured.kv_bytes_per_token, measured.state_bytes)
    for form, data in both.items():
        assert priced(data) == expected, form


def test_stablelm_per_head_norms_are_refused_by_name():
    """StableLM-2-12B's qk_layernorm builds a bias-free LayerNorm per head beside block norms with a shift: no
    shape field says that, so the reader names the field rather than miscount it."""
    data = {**saved_forms("stablelm")["saved"], "qk_layernorm": True}
    with pytest.raises(TfcostError, match="qk_layernorm"):
        read_config(data)


def test_gpt_bigcode_refuses_a_key_value_count_transformers_would_not_build():
    data = {**saved_forms("gpt_bigcode")["full"], "num_key_value_heads": 4}
    with pytest.raises(TfcostError, match="num_key_value_heads"):
        read_config(data)


# bigscience/bloom-560m's config.json as published (transformers_version 4.26.0): Megatron-DeepSpeed's keys beside
# BloomConfig's, none of which changes a count.
BLOOM_560M = {
    "_name_or_path": "bigscience/bloom-560m", "apply_residual_connection_post_layernorm": False,
    "architectures": ["BloomForCausalLM"], "attention_dropout": 0.0, "attention_softmax_in_fp32": True,
    "bias_dropout_fusion": True, "bos_token_id": 1, "eos_token_id": 2, "hidden_dropout": 0.0, "hidden_size": 1024,
    "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "masked_softmax_fusion": True, "model_type": "bloom",
    "n_head": 16, "n_inner": None, "n_layer": 24, "offset_alibi": 100, "pad_token_id": 3, "pretraining_tp": 1,
    "skip_bias_add": True, "skip_bias_add_qkv": False, "slow_but_exact": False, "transformers_version": "4.26.0",
    "unk_token_id": 0, "use_cache": True, "vocab_size": 250880,
}  # fmt: skip


def test_a_published_bloom_config_is_read_as_transformers_builds_it():
    """The config.json `tfcost estimate` refused before: read silently (no key reported), exactly transformers'
    model; and at BLOOM-176B's sizes (70 layers of 14,336, 112 heads) the count is the preset's published
    176,247,271,424 (bigscience/bloom's model card)."""
    from tfcost.readers.presets import load_model

    reading = read_config(BLOOM_560M)
    assert reading.ignored == []
    measured = measure(config_from_dict(BLOOM_560M), T, whole=False)
    expected = (measured.params, measured.forward_flops, measured.kv_bytes_per_token, measured.state_bytes)
    assert priced(BLOOM_560M) == expected
    big = {**BLOOM_560M, "hidden_size": 14336, "n_head": 112, "n_layer": 70, "pretraining_tp": 4}
    published = load_model("bloom-176b").published_params
    assert published == 176_247_271_424 and priced(big)[0] == published


@pytest.mark.parametrize("name", ["deepseek-v2-lite", "deepseek-v3"])
def test_deepseek_configs_without_their_class_defaults_read_the_same(name):
    """A config as save_pretrained can write it, every key equal to the config class's default left out
    (DeepSeek-V2-Lite's n_routed_experts 64, kv_lora_rank 512, vocab_size 102400, ...): read as the whole file is.
    It was refused for the first missing key before (issue 38)."""
    from pathlib import Path

    from transformers import AutoConfig

    data = json.loads((Path(__file__).parent / "data" / "hf_configs" / f"{name}.json").read_text())
    defaults = AutoConfig.for_model(data["model_type"]).to_dict()
    sparse = {key: value for key, value in data.items() if key == "model_type" or defaults.get(key, object()) != value}
    left_out = set(data) - set(sparse)
    assert {"kv_lora_rank", "qk_rope_head_dim", "v_head_dim"} <= left_out  # the MLA widths are the defaults
    assert read_config(sparse).mapping == read_config(data).mapping
