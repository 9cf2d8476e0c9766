"""`serve` with recurrent state (issue 14): memory = weights + KV of the attention layers x tokens + state x
sequences; the largest batch and the longest context use both; a decode step reads the state once.

The state and KV figures are transformers 5.24's, from the caches it returns (docs/family-truth.md): Codestral-7B
273,678,336 B of state per sequence and no KV cache; Nemotron-H-8B 102,629,376 B of state per sequence and
16,384 B of KV cache per token (its 4 attention layers)."""

from __future__ import annotations

import pytest

from tfcost.core import memory
from tfcost.readers.presets import load_gpu, load_model
from tfcost.reports.serve import serve
from tfcost.schema import ServingSetup

H100_USABLE = 77_309_411_328  # 80 GiB x 0.9
CODESTRAL_STATE = 273_678_336
NEMOTRON_STATE, NEMOTRON_KV_PER_TOKEN = 102_629_376, 16_384


def test_a_pure_mamba_model_is_bounded_by_its_state_not_its_context():
    shape = load_model("mamba-codestral-7b")
    report = serve(shape, load_gpu("h100-sxm"), ServingSetup(batch=4))
    weights = 2 * 7_285_403_648
    assert report.memory.kv_cache_bytes == 0
    assert report.memory.state_bytes == 4 * CODESTRAL_STATE
    assert report.memory.total_bytes_per_gpu == weights + 4 * CODESTRAL_STATE
    assert report.max_batch == (H100_USABLE - weights) // CODESTRAL_STATE == 229
    assert report.max_context == shape.max_seq_len  # memory sets no limit without a KV cache
    assert report.latency.decode_bytes_per_gpu == weights + 4 * CODESTRAL_STATE


def test_a_hybrid_pays_kv_per_token_and_state_per_sequence():
    report = serve(load_model("nemotron-h-8b"), load_gpu("h100-sxm"), ServingSetup(batch=8, prompt=2048, generate=512))
    weights = 2 * 8_100_852_736
    kv = 8 * 2560 * NEMOTRON_KV_PER_TOKEN
    assert report.memory.kv_cache_bytes == kv
    assert report.memory.state_bytes == 8 * NEMOTRON_STATE
    assert report.memory.total_bytes_per_gpu == weights + kv + 8 * NEMOTRON_STATE
    budget = H100_USABLE - weights
    assert report.max_batch == budget // (2560 * NEMOTRON_KV_PER_TOKEN + NEMOTRON_STATE) == 422
    assert report.max_context == (budget - 8 * NEMOTRON_STATE) // (8 * NEMOTRON_KV_PER_TOKEN) == 459_950
    assert report.latency.decode_bytes_per_gpu == report.memory.total_bytes_per_gpu


@pytest.mark.parametrize("gpus", [1, 2, 4])
def test_tensor_parallel_splits_the_state(gpus):
    report = serve(load_model("nemotron-h-8b"), load_gpu("h100-sxm"), ServingSetup(batch=2, gpus=gpus))
    assert report.memory.state_bytes_per_gpu == 2 * NEMOTRON_STATE // gpus


def test_attention_only_models_hold_no_state():
    shape = load_model("llama-3-8b")
    assert memory.state_bytes(shape, 16, "bf16") == 0
    assert serve(shape, load_gpu("h100-sxm"), ServingSetup()).memory.state_bytes == 0


def test_tensor_parallel_must_split_the_ssm_heads():
    from tfcost.errors import UsageError

    falcon = load_model("falcon-h1-7b")  # 12 query heads, 2 KV heads, 24 SSM heads
    serve(falcon, load_gpu("h100-sxm"), ServingSetup(gpus=4))
    with pytest.raises(UsageError, match="SSM heads"):
        serve(falcon.model_copy(update={"n_heads": 16, "n_kv_heads": 16}), load_gpu("h100-sxm"), ServingSetup(gpus=16))
