"""KV capacity as vLLM budgets it (tfcost.costs.engine_memory, issue 22): gpu_memory_utilization x the memory the
driver reports, less the weights, the profile run's activation peak and the memory outside PyTorch's allocator; and
as TensorRT-LLM and SGLang budget it (`serve --kv-pool`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tfcost.cli.main import main
from tfcost.costs.engine_memory import (
    profile_activation_bytes,
    sglang_kv_cache_bytes,
    trtllm_kv_cache_bytes,
    vllm_kv_cache_bytes,
)
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


def test_trtllm_budget_is_the_fraction_of_what_is_free_on_a_logged_run() -> None:
    """A trtllm-serve log (TensorRT-LLM 1.1.0rc3, PyTorch backend, gpt-oss-120b; a public log, stored file id
    2263047771): "Memory used after loading model weights (inside torch) ...: 63.52 GiB", "Memory dynamically
    allocated during inference (inside torch) ...: 0.85 GiB", "Memory used outside torch (e.g., NCCL and CUDA
    graphs) ...: 49.28 GiB", "Peak memory ... 113.65 GiB, available KV cache memory when calculating max tokens:
    5.95 GiB, fraction is set 0.8999999761581421, ... device total memory 119.70 GiB, , tmp kv_mem 0.56 GiB". The
    profiling run's own KV blocks (0.56 GiB, allocated outside torch) are given back: 49.28 - 0.56 outside torch."""
    fraction = 0.9
    usable = int(119.70 * fraction * GIB)
    kv = trtllm_kv_cache_bytes(usable, fraction, int(63.52 * GIB), int(0.85 * GIB), int((49.28 - 0.56) * GIB))
    assert kv / GIB == pytest.approx(5.95, abs=0.01)
    # vLLM's convention at the same fraction leaves nothing here: it takes all 113.09 GiB from 107.73.
    assert vllm_kv_cache_bytes(usable, int(63.52 * GIB), int(0.85 * GIB), int((49.28 - 0.56) * GIB)) == 0
    assert trtllm_kv_cache_bytes(GIB, 0.5, 2 * GIB, 0, 0) == 0  # more used than the card has: none, never below


def test_sglang_budget_is_the_static_fraction_less_the_weights_on_a_logged_run() -> None:
    """An SGLang log (Qwen3-14B, --tp-size 4, --mem-fraction-static 0.80; stored file id 55529353766): "Load weight
    end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=16.00 GB, mem usage=7.08 GB." (so 23.08 GB were free
    before the weights) and "KV Cache is allocated. #tokens: 298447, K size: 5.69 GB, V size: 5.69 GB". With the
    free memory before loading as the card (no context): 0.8 x 23.08 - 7.08 = 11.38."""
    kv = sglang_kv_cache_bytes(int(23.08 * 0.8 * GIB), 0.8, int(7.08 * GIB), 0)
    assert kv / GIB == pytest.approx(5.69 + 5.69, abs=0.01)
    # The context is measured before the fraction is taken: f x (T - C) - W; 0.5 x (100 - 10) - 20 = 25.
    assert sglang_kv_cache_bytes(50 * GIB, 0.5, 20 * GIB, 10 * GIB) == 25 * GIB


def pool_figures(capsys: pytest.CaptureFixture[str], pool: str) -> dict[str, Any]:
    argv = ["serve", "llama-2-7b", "--gpu", "a100-80gb", "-B", "1", "-P", "4095", "-G", "1", "--kv-pool", pool]
    with pytest.raises(SystemExit) as done:
        main([*argv, "--format", "json"])
    assert not done.value.code
    return json.loads(capsys.readouterr().out)


def test_the_three_pools_differ_by_what_each_takes_whole(capsys: pytest.CaptureFixture[str]) -> None:
    """At the same fraction f = 0.9: TensorRT-LLM takes f of the weights, activations and context where vLLM takes
    them whole, so its pool is (1 - f) x those more; SGLang does not profile activations and takes f of the context,
    so its pool is the activations + (1 - f) x the context more. Both within one 16-token block."""
    vllm, trtllm, sglang = (pool_figures(capsys, pool) for pool in ("vllm", "trtllm", "sglang"))
    assert "kv_pool" not in vllm["setup"] and trtllm["setup"]["kv_pool"] == "trtllm"
    expected = vllm["expected"]
    weights, workspace = vllm["memory"]["weights_bytes_per_gpu"], expected["workspace_bytes"]
    context = expected["cuda_context_bytes"]
    per_token = vllm["memory"]["kv_cache_bytes_per_token"]  # one GPU holds every head
    block = 16 * per_token
    v, t, s = (report["expected"]["max_kv_tokens"] for report in (vllm, trtllm, sglang))
    assert abs((t - v) * per_token - 0.1 * (weights + workspace + context)) < block
    assert abs((s - v) * per_token - (workspace + 0.1 * context)) < block
    assert t > s > v  # a tenth of the weights (12.6 GiB) outweighs the profile's 0.4 GiB here
