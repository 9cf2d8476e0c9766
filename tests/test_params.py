"""Parameter counts against the lesson's worked GPT-2 numbers and the published counts of every preset."""

from __future__ import annotations

import pytest

from tfcost.core.params import (
    embedding_params,
    layer_params,
    non_embedding_params,
    parameter_breakdown,
    params_per_layer,
    total_params,
)
from tfcost.readers.presets import all_models, load_model


def test_gpt2_small_matches_the_lesson(gpt2):
    # The lesson's "Costs" section: attention 2,362,368, MLP 4,722,432, norms 3,072 per block.
    per_layer = layer_params(gpt2)
    attention = sum(v for k, v in per_layer.items() if k.startswith("attention/"))
    mlp = sum(v for k, v in per_layer.items() if k.startswith("mlp/"))
    norms = sum(v for k, v in per_layer.items() if k.startswith("norm/"))
    assert (attention, mlp, norms) == (2_362_368, 4_722_432, 3_072)
    assert params_per_layer(gpt2) == 7_087_872
    assert embedding_params(gpt2) == 39_383_808
    assert total_params(gpt2) == 124_439_808


def test_non_embedding_count_is_the_lesson_s(gpt2):
    # N = the 12 blocks plus the final LayerNorm's 2*768 (the lesson's "Costs" section).
    assert non_embedding_params(gpt2) == 12 * 7_087_872 + 1_536


def test_nanogpt_notebook_without_biases(gpt2):
    # transformer_sizing.ipynb: GPT-2 124M with bias=False has 124,337,664 parameters, 7,079,424 per block.
    # nanoGPT's bias=False also drops the LayerNorm shifts, leaving RMSNorm-sized (scale-only) norms.
    no_bias = gpt2.model_copy(
        update={"bias": gpt2.bias.model_copy(update={"qkv": False, "attn_out": False, "mlp": False}), "norm": "rmsnorm"}
    )
    assert params_per_layer(no_bias) == 7_079_424
    assert total_params(no_bias) == 124_337_664


@pytest.mark.parametrize("model", all_models(), ids=lambda m: m.name)
def test_every_preset_reproduces_its_published_count(model):
    assert model.published_params is not None, f"{model.name} has no published_params"
    assert model.source, f"{model.name} has no source"
    assert total_params(model) == model.published_params


def test_gqa_shrinks_only_k_and_v():
    llama3 = load_model("llama-3-8b")
    mha = llama3.model_copy(update={"n_kv_heads": 32})
    diff = {k: layer_params(mha)[k] - layer_params(llama3)[k] for k in layer_params(llama3)}
    assert diff["attention/k"] == diff["attention/v"] == 4096 * (4096 - 1024)
    assert all(v == 0 for k, v in diff.items() if k not in ("attention/k", "attention/v"))


def test_untied_head_counts_as_embedding():
    llama2 = load_model("llama-2-7b")
    parts = parameter_breakdown(llama2)
    assert parts["output_head"] == parts["embedding/tokens"] == 32_000 * 4_096
    assert embedding_params(llama2) == 2 * 32_000 * 4_096
