"""KV cache and score-matrix sizes against the lesson and published anchors."""

from __future__ import annotations

import pytest

from tfcost.core.memory import (
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    score_matrix_bytes,
    score_matrix_bytes_per_layer,
    score_matrix_entries_per_head,
)
from tfcost.readers.presets import load_model


def test_gpt2_kv_cache_matches_the_lesson(gpt2):
    assert kv_cache_bytes(gpt2, tokens=1024, batch=1, dtype="bf16") == 37_748_736  # 36 MiB


@pytest.mark.parametrize(
    ("preset", "per_token"),
    [("llama-2-7b", 524_288), ("llama-3-8b", 131_072), ("mistral-7b", 131_072)],
)
def test_published_kv_cache_per_token_in_bf16(preset, per_token):
    assert kv_cache_bytes_per_token(load_model(preset), "bf16") == per_token


def test_kv_cache_scales_with_dtype_tokens_and_batch(gpt2):
    one = kv_cache_bytes(gpt2, 100, 1, "fp8")
    assert kv_cache_bytes(gpt2, 100, 1, "fp32") == 4 * one
    assert kv_cache_bytes(gpt2, 300, 7, "fp8") == 21 * one


def test_llm_analysis_llama7b_example():
    # llm-analysis's llama-7b reference output: 285,212,672 B of KV cache for 512 + 32 tokens in fp16.
    assert kv_cache_bytes(load_model("llama-2-7b"), 544, 1, "fp16") == 285_212_672


def test_score_matrix_sizes(gpt2):
    assert score_matrix_entries_per_head(1024) == 1_048_576
    assert score_matrix_entries_per_head(32768) == 1_073_741_824
    assert score_matrix_bytes_per_layer(gpt2, 1024, 1, "bf16") == 12 * 1_048_576 * 2
    assert score_matrix_bytes(gpt2, 1024, 3, "fp32") == 12 * 3 * 12 * 1_048_576 * 4
