"""KV capacity as vLLM budgets it (tfcost.costs.engine_memory, issue 22): gpu_memory_utilization x the memory the
driver reports, less the weights, the profile run's activation peak and the memory outside PyTorch's allocator; and
as TensorRT-LLM and SGLang budget it (`serve --kv-pool`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tfcost.cli.main import main
from tfcost.costs.engine_memory import (
    SAMPLER_SCATTER_BYTES_PER_LOGIT,
    SAMPLER_SORT_BYTES_PER_LOGIT,
    forward_peak_bytes,
    fused_moe_peak_bytes,
    profile_activation_bytes,
    profile_sequences,
    sglang_kv_cache_bytes,
    trtllm_kv_cache_bytes,
    v1_sampler_bytes,
    vllm_kv_cache_bytes,
    vllm_profile_activation_bytes,
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


def test_fused_moe_caches_share_cache1_and_cache3_when_d_is_wider() -> None:
    """Qwen3-235B-A22B (config.json: hidden_size 4096, moe_intermediate_size 1536, num_experts 128,
    num_experts_per_tok 8) on 4 GPUs, 8192 tokens (vLLM V1's max_num_batched_tokens for `vllm serve` on an H100):
    w1 is (E, N, K) with N = 2 x 1536 / 4 = 768 and K = 4096, so cache13 = M x 8 x max(768, 4096) and cache2 =
    M x 8 x 384, 16-bit; besides the layer's input, residual, the experts' input and output (4 x 4096) and the
    router's 128 logits, 16-bit, and fused_topk's fp32 weights, int32 ids and int32 indices (12 bytes x 8)."""
    shape = load_model("qwen3-235b-a22b")
    m = 8192
    expected = m * 8 * (4096 + 384) * 2 + m * (4 * 4096 + 128) * 2 + m * 8 * 12
    assert fused_moe_peak_bytes(shape, m, 4, fp8_w8a8=False) == expected
    # FP8 weights: the chunk's input (4096) and cache2 (8 x 384) quantized to 1 byte each, besides the 16-bit ones.
    assert fused_moe_peak_bytes(shape, m, 4, fp8_w8a8=True) == expected + m * (4096 + 8 * 384)
    # The MoE layer's peak outweighs its attention's (q, k, v: (64 + 2 x 4) x 128 = 9216 wide), so it is the
    # profile's, with one fp32 logits row (vocab_size 151936) for each of 256 dummy requests.
    assert profile_activation_bytes(shape, m, 256, 4) == expected + 256 * 151936 * 4


def test_fused_moe_cache13_is_as_wide_as_the_wider_of_n_and_d() -> None:
    """Mixtral-8x7B (hidden_size 4096, intermediate_size 14336, 8 experts, top 2) on one GPU: N = 2 x 14336 =
    28672 is wider than K = 4096, so cache13 = M x 2 x 28672; cache2 = M x 2 x 14336."""
    shape = load_model("mixtral-8x7b")
    m = 1000
    assert fused_moe_peak_bytes(shape, m, 1, fp8_w8a8=False) == (
        m * 2 * (28672 + 14336) * 2 + m * (4 * 4096 + 8) * 2 + m * 2 * 12
    )


def test_fused_moe_caches_stop_at_the_chunk() -> None:
    """fused_experts_impl's "M = min(num_tokens, CHUNK_SIZE)", VLLM_FUSED_MOE_CHUNK_SIZE 64 x 1024: past it the
    caches stay at one chunk's while the layer's whole-batch tensors and the routing keep growing."""
    shape = load_model("mixtral-8x7b")
    chunk, m = 64 * 1024, 100_000
    assert fused_moe_peak_bytes(shape, m, 1, fp8_w8a8=False) == (
        chunk * 2 * (28672 + 14336) * 2 + m * (4 * 4096 + 8) * 2 + m * 2 * 12
    )


def test_dense_models_have_no_fused_moe_workspace() -> None:
    """Llama-2-7B has no routed experts: its profile peak stays the MLP's, FP8 or not
    (test_profile_peak_is_the_mlps_live_tensors)."""
    shape = load_model("llama-2-7b")
    assert fused_moe_peak_bytes(shape, 4096, 1, fp8_w8a8=True) == 0
    assert profile_activation_bytes(shape, 4096, 256, 1, fp8_w8a8=True) == profile_activation_bytes(shape, 4096, 256, 1)


def test_profile_run_has_max_num_seqs_requests_or_one_a_token() -> None:
    """vLLM's _dummy_run: "num_reqs = max_num_reqs if num_tokens >= max_num_reqs else num_tokens", max_num_seqs
    256 by default."""
    assert profile_sequences(4096) == 256
    assert profile_sequences(100) == 100
    # vllm/engine/arg_utils.py of mid-2025: "if device_memory >= 70 * GiB_bytes: ... default_max_num_seqs = 1024".
    assert profile_sequences(8192, 1024) == 1024
    assert profile_sequences(512, 1024) == 512


def test_v1_of_jan_2025_computes_every_tokens_logits() -> None:
    """Llama-3.1-70B (config.json: hidden_size 8192, intermediate_size 28672, vocab_size 128256), one GPU, 8192
    tokens (vLLM V1's max_num_batched_tokens for `vllm serve` on an H100). V1's profile_run of that time: "logits =
    self.model.compute_logits(hidden_states, None)" over all max_num_tokens hidden states, no sampler: 16-bit
    logits of 8192 x 128256 and the 8192 x 8192 hidden states, 2,235,564,032 bytes. The forward's busiest layer
    (input, residual, attention output, down_proj's output, gate_up and SiluAndMul's output: 8192 x (4 x 8192 + 3 x
    28672) x 2 = 1,946,157,056 bytes) is freed by then: the peak is the larger, not the sum."""
    shape = load_model("llama-3.1-70b")
    logits = 8192 * (8192 + 128256) * 2
    layer = 8192 * (4 * 8192 + 3 * 28672) * 2
    assert (logits, layer) == (2_235_564_032, 1_946_157_056)
    assert forward_peak_bytes(shape, 8192, 1) == layer
    assert vllm_profile_activation_bytes("v1", shape, 8192, 256, 1) == logits
    # V0's run, as before: the layer's peak plus fp32 logits of 256 rows (sum, one row a dummy request).
    assert vllm_profile_activation_bytes("v0", shape, 8192, 256, 1) == layer + 256 * 128256 * 4
    # Llama-2-70B's 32,000-entry vocabulary: the layer outweighs the logits (4 x 8192 + 3 x 28672 > 8192 + 32000).
    llama2 = load_model("llama-2-70b")
    assert vllm_profile_activation_bytes("v1", llama2, 8192, 256, 1) == layer


def test_v1_sampler_run_holds_38_bytes_a_logit_at_the_sort() -> None:
    """Qwen3-235B-A22B (config.json: hidden_size 4096, vocab_size 151936) on 4 H100s, 8192 tokens and max_num_seqs
    1024. _dummy_sampler_run: "hidden_states = torch.rand_like(hidden_states)", "logits =
    self.model.compute_logits(hidden_states, None)" (16-bit, gathered whole); the sampler "logits =
    logits.to(torch.float32)"; apply_top_k_top_p: "logits_sort, logits_idx = logits.sort(...)" (fp32, int64), then
    two bool masks, the softmax and the scatter's output: 2 + 4 + 4 + 8 + 1 + 4 + 1 + 4 = 28 bytes a logit at the
    scatter. The sort itself, PyTorch's segmented radix sort for 1,024 rows (SortStable.cu's segmented_sort_pairs),
    also holds its int64 reverse indices (8) and cub SortPairs' third key and value buffers (4 + 8) beside the
    16-bit logits, the fp32 input and the sorted values and indices: 2 + 4 + 4 + 8 + 8 + 4 + 8 = 38 bytes a logit,
    the peak; besides the 8192 hidden states profile_run holds and the 1024 sampled rows twice (the rows and their
    rand_like copy)."""
    shape = load_model("qwen3-235b-a22b")
    assert SAMPLER_SCATTER_BYTES_PER_LOGIT == 28 and SAMPLER_SORT_BYTES_PER_LOGIT == 38
    hand = 8192 * 4096 * 2 + 2 * 1024 * 4096 * 2 + 1024 * 151936 * 38
    assert hand == 5_996_019_712  # 5.58 GiB a GPU
    assert v1_sampler_bytes(shape, 8192, 1024) == hand
    assert vllm_profile_activation_bytes("v1-sampler", shape, 8192, 1024, 4, fp8_w8a8=True) == hand
    # The MoE forward's caches (test_fused_moe_caches_share_cache1_and_cache3_when_d_is_wider) are the smaller here.
    assert forward_peak_bytes(shape, 8192, 4, fp8_w8a8=True) < hand


def test_vllm_profile_and_max_num_seqs_are_options_v0_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM's profile run and max_num_seqs (conventions of its framework file, here set by --framework-set) reach the
    budget; without them the setup is V0's with 256 dummy requests, as before, and the JSON setup names neither."""

    def figures(*extra: str) -> dict[str, Any]:
        argv = ["serve", "qwen3-235b-a22b", "--gpu", "h100-sxm", "--gpus", "4", "--weights-dtype", "fp8"]
        with pytest.raises(SystemExit) as done:
            main([*argv, "-B", "1", "-P", "8191", "-G", "1", *extra, "--format", "json"])
        assert not done.value.code
        return json.loads(capsys.readouterr().out)

    plain, v0 = figures(), figures("--framework-set", "vllm_profile=v0", "--framework-set", "max_num_seqs=256")
    assert plain.pop("framework")["overridden"] == [] and v0.pop("framework")["overridden"] == [
        "max_num_seqs",
        "vllm_profile",
    ]
    assert plain == v0 and "vllm_profile" not in plain["setup"] and "max_num_seqs" not in plain["setup"]
    sampler = figures("--framework-set", "vllm_profile=v1-sampler", "--framework-set", "max_num_seqs=1024")
    assert sampler["setup"]["vllm_profile"] == "v1-sampler" and sampler["setup"]["max_num_seqs"] == 1024
    # test_v1_sampler_run_holds_38_bytes_a_logit_at_the_sort's sum at B x P = 8191 tokens, one hidden row fewer
    assert sampler["expected"]["workspace_bytes"] == 5_996_019_712 - 4096 * 2
    grown = sampler["expected"]["workspace_bytes"] - plain["expected"]["workspace_bytes"]
    per_token = plain["memory"]["kv_cache_bytes_per_token"] // 4  # one GPU's share of the 4-way split heads
    lost = plain["expected"]["max_kv_tokens"] - sampler["expected"]["max_kv_tokens"]
    assert abs(lost * per_token - grown) < 16 * per_token  # the budget gives up just what the profile grew, in blocks


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--framework-set", "vllm_profile=v2"),
        ("--framework-set", "max_num_seqs=0"),
        ("--framework-set", "max_num_seqs=many"),
    ],
)
def test_bad_profile_options_fail_in_one_line(tfcost: Any, option: str, value: str) -> None:
    """A profile or request count vLLM never had: one line on stderr naming the field, a non-zero exit."""
    run = tfcost("serve", "llama-3.1-8b", option, value)
    assert run.code != 0 and not run.stdout
    assert "Traceback" not in run.stderr and option in run.stderr and value.split("=")[0] in run.stderr


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
    argv = [
        "serve",
        "llama-2-7b",
        "--gpu",
        "a100-80gb",
        "-B",
        "1",
        "-P",
        "4095",
        "-G",
        "1",
        "--framework-set",
        f"kv_pool={pool}",
    ]
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
