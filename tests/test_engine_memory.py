"""KV capacity as vLLM budgets it (tfcost.costs.engine_memory, issue 22): gpu_memory_utilization x the memory the
driver reports, less the weights, the profile run's activation peak and the memory outside PyTorch's allocator."""

from __future__ import annotations

import json

import pytest

from tfcost.cli.main import main
from tfcost.costs.engine_memory import profile_activation_bytes, vllm_kv_cache_bytes
from tfcost.readers.presets import load_model

GIB = 2**30


def test_budget_is_vllms_arithmetic_on_a_logged_run() -> None:
    """vllm-project/vllm#12126 (H100 80GB): "total_gpu_memory (79.22GiB) x gpu_memory_utilization (0.90) =
    71.29GiB"; "model weights take 19.86GiB; non_torch_memory takes 0.16GiB; PyTorch activation peak memory takes
    36.63GiB; the rest of the memory reserved for KV Cache is 14.65GiB"."""
    kv = vllm_kv_cache_bytes(int(79.22 * 0.90 * GIB), int(19.86 * GIB), int(36.63 * GIB), int(0.16 * GIB))
    assert kv / GIB == pytest.approx(14.65, abs=0.01)
    assert vllm_kv_cache_bytes(GIB, GIB, 1, 0) == 0  # the weights and activations fill it: no cache, never below


def test_profile_peak_is_the_mlps_live_tensors() -> None:
    """Llama-2-7B (config.json: hidden_size 4096, intermediate_size 11008, vocab_size 32000): at the down projection
    vLLM holds the layer's input, the residual, the attention output and down_proj's output (4 x 4096) besides
    gate_up (2 x 11008) and SiluAndMul's output (11008), 16-bit; then fp32 logits of the sampled rows."""
    shape = load_model("llama-2-7b")
    assert profile_activation_bytes(shape, 4096, 1, 1) == 4096 * (4 * 4096 + 3 * 11008) * 2 + 32000 * 4
    assert profile_activation_bytes(shape, 0, 256, 1) == 256 * 32000 * 4


def test_profile_peak_splits_the_column_parallel_tensors_only() -> None:
    """Llama-2-70B (hidden 8192, intermediate 28672) on 4 GPUs: gate_up and its activation split 4 ways, the d-wide
    tensors and the gathered logits whole on each GPU."""
    shape = load_model("llama-2-70b")
    assert profile_activation_bytes(shape, 4096, 2, 4) == 4096 * (4 * 8192 + 3 * 28672 // 4) * 2 + 2 * 32000 * 4


def test_plain_mlp_activation_is_as_wide_as_fc1() -> None:
    """GPT-2 XL (n_embd 1600, fc1 4 x 1600 = 6400 wide, wider than its 3 x 1600 QKV): the layer's input and
    residual besides fc1's output and GELU's, as vLLM's OPT layer holds them."""
    shape = load_model("gpt2-xl")
    assert profile_activation_bytes(shape, 1024, 0, 1) == 1024 * (2 * 1600 + 2 * 6400) * 2


def test_llama_2_7b_on_an_a100_matches_vllms_block_count(capsys: pytest.CaptureFixture[str]) -> None:
    """vllm-project/vllm PR #2031 (Dec 2023), Llama-2-7B, TP=1, 1 x A100-80GB, gpu_memory_utilization 0.9:
    "# GPU blocks: 7351" of 16 tokens. The profile run: max_num_batched_tokens = max_model_len 4096."""
    argv = ["serve", "llama-2-7b", "--gpu", "a100-80gb", "--weights-dtype", "fp16", "--kv-dtype", "fp16"]
    with pytest.raises(SystemExit) as done:
        main([*argv, "-B", "1", "-P", "4095", "-G", "1", "--format", "json"])
    assert not done.value.code
    blocks = json.loads(capsys.readouterr().out)["expected"]["max_kv_tokens"] / 16
    assert blocks == pytest.approx(7351, rel=0.02)
