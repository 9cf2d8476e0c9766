"""Memory as engines allocate it (issue 22): the device memory the card reports (serving), and what eager PyTorch
keeps beyond the activation fold (training).

vLLM's budget is total_gpu_memory x gpu_memory_utilization, where total_gpu_memory is what the driver reports
(torch.cuda.mem_get_info), not the memory as sold: "total_gpu_memory (79.22GiB)" on an H100 80GB
(vllm-project/vllm#12126 and #10511 logs). From the budget it takes the weights, the peak of a profiling forward
and the memory outside PyTorch's allocator; the KV cache gets the rest.

The budget follows vLLM's own code (`vllm_kv_cache_bytes`), and the profile run's activation peak is read off the
live tensors of vLLM's layer and of what follows it, by vLLM version (`vllm_profile_activation_bytes`, the vLLM
file's vllm_profile: V0's, V1's of Jan 2025 with every token's logits, V1's with the sampler from Feb 2025).
TensorRT-LLM and SGLang size the pool from the same fraction (1 - reserve) by their own conventions
(`trtllm_kv_cache_bytes`, `sglang_kv_cache_bytes`); the engine's framework file picks one (kv_pool,
`kv_pool_bytes`), vLLM's by default.

Not changed here: the memory outside the allocator stays tfcost.costs.expected's assumed 0.5 GiB, because vLLM's
own logs disagree by a factor of ten ("non_torch_memory 1.79GiB", Llama-3-8B on H100, vllm#10511; "0.16GiB",
Llama-3.2-11B-Vision on H100, vllm#12126; "0.20GiB" on 24 GB cards, vllm#14447).
NCCL's buffers under tensor parallelism are not priced either (checked 2026-12-02 for validation case 48). vLLM V1
until Sept 2025 took its first snapshot before NCCL came up (vllm PR #25359: "NCCL buffers (~4.5 GiB for tensor
parallelism) were allocated after the memory snapshot ... The NCCL buffer allocation shows up as non-torch memory
increase"), so they are in the budget's non-torch term, and vLLM's NCCL_CUMEM_ENABLE=0 turns off NCCL's lazy
connection (NCCL v2.26.2 src/init.cc: "comm->runtimeConn = comm->cuMemSupport && ncclParamRuntimeConnect();"), so
ring, tree and NVLS buffers are all made in ncclCommInitRank. Per connection NCCL v2.26.2 allocates 12 MiB on the
two GPUs (the receiver's LL, LL128 and 4 MiB SIMPLE buffers aligned to CUDA_IPC_MIN, 10 MiB; the sender's 2 MiB;
6 + 6 MiB on A100s, which read over P2P) and NVLS, on Hopper for more than 2 GPUs, nvlsTotalSize = NVLS channels
(16 on SM90) x 2 x 1 MiB x heads (the GPUs): 128 MiB for 4. No source fixes the rest a GPU of the run holds: the
ring and tree channels NCCL's topology search gives a 4-GPU communicator, which tree connections reuse the ring's,
how many communicators the vLLM of the run had (its TP group's PyNccl one at least) and NCCL's loaded device code.
docs/serving.md ("NCCL under tensor parallelism") quotes the sources and what was checked.
"""

from __future__ import annotations

from tfcost.core.model import model_of
from tfcost.costs import expected, parallel
from tfcost.hardware.rates import memory_bytes
from tfcost.schema import GpuSpec, KvPool, ModelShape, ServingSetup, TrainingSetup, VllmProfile
from tfcost.units import GIB, ceil_div


def reported_memory_bytes(gpu: GpuSpec) -> int:
    """Device memory as the driver reports it (the table's reported_memory_gib), else as sold."""
    return memory_bytes(gpu) if gpu.reported_memory_gib is None else round(gpu.reported_memory_gib * GIB)


def engine_usable_bytes(gpu: GpuSpec, reserve: float) -> int:
    """vLLM's budget per GPU: the reported memory x gpu_memory_utilization (1 - reserve)."""
    return int(reported_memory_bytes(gpu) * (1 - reserve))


def vllm_kv_cache_bytes(
    requested_bytes: int, weights_bytes: int, activation_peak_bytes: int, non_torch_bytes: int
) -> int:
    """The KV-cache memory of one GPU as vLLM budgets it: what gpu_memory_utilization grants, less the weights, the
    activation peak of the profile run and the memory outside PyTorch's allocator; nothing when they do not fit.

    Follows vLLM V1's Worker.determine_available_memory (vllm/v1/worker/gpu_worker.py at commit 0012cf69, 2025, the
    version before PR #19312 moved it onto V0's memory_profiling):
        peak_memory = torch.cuda.memory_stats()["allocated_bytes.all.peak"]      # weights + profile activations
        non_torch_allocations = total_allocated_bytes - torch_allocated_bytes    # CUDA context, NCCL, cuBLAS
        if non_torch_allocations > 0: peak_memory += non_torch_allocations
        available_kv_cache_memory = (total_gpu_memory * self.cache_config.gpu_memory_utilization - peak_memory)
    V1 from June 2025 (PR #19312, "[V1] Reuse V0's memory_profiling util for gpu worker memory profiling") takes the
    same three terms through vllm/utils/__init__.py's memory_profiling:
        result.non_kv_cache_memory = result.non_torch_increase + result.torch_peak_increase + result.weights_memory
    with the non-torch increase counted from the worker's first snapshot (memory other processes hold no longer
    counts) and the torch peak the allocator's ("allocated_bytes.all.peak") over the profile run.
    Dec 2023's worker after PR #2031 "Fix peak memory profiling" (the version of validation cases 46-47; quoted as
    forks of vLLM 0.2.x carry it) measured the same sum at once:
        free_gpu_memory, total_gpu_memory = torch.cuda.mem_get_info(); peak_memory = total_gpu_memory - free_gpu_memory
        num_gpu_blocks = int((total_gpu_memory * gpu_memory_utilization - peak_memory) // cache_block_size)
    CUDA graphs are captured after the KV cache is allocated, outside this budget, in both versions."""
    return max(requested_bytes - weights_bytes - activation_peak_bytes - non_torch_bytes, 0)


def trtllm_kv_cache_bytes(
    usable_bytes: int, fraction: float, weights_bytes: int, activation_peak_bytes: int, non_torch_bytes: int
) -> int:
    """The KV-cache memory of one GPU as TensorRT-LLM's PyTorch backend (trtllm-bench, trtllm-serve, the LLM API)
    budgets it: free_gpu_memory_fraction of what is left of the card after the weights, the activation peak of a
    profiling forward and the memory outside PyTorch's allocator. `usable_bytes` is the card x the fraction.

    TensorRT-LLM's docs/source/examples/kvcacheconfig.md: "The default value for `free_gpu_memory_fraction` is 0.9,
    which means TensorRT-LLM tries to allocate 90% of free GPU memory (after loading weights) for KV cache";
    trtllm-bench's option is --kv_cache_free_gpu_mem_fraction (docs/source/performance/perf-overview.md: "setting
    `--kv_cache_free_gpu_mem_fraction 0.95` ... better performance than the default setting of `0.90`").
    tensorrt_llm/_torch/pyexecutor/_util.py (KvCacheCreator, 2025) measures after dummy context requests of
    max_num_tokens tokens:
        torch_peak_memory = torch.cuda.memory_stats()["allocated_bytes.all.peak"]
        extra_cost = max(total_used_bytes - torch_used_bytes, 0)       # "outside torch (e.g., NCCL and CUDA graphs)"
        peak_memory = torch_peak_memory + extra_cost
    and in _cal_max_tokens (the KV blocks the dummy requests held are added back, so they do not count as used):
        available_kv_mem = (total_gpu_memory - peak_memory + alloc_kv_tokens * kv_size_per_token) * fraction
    So (T - weights - activations - non-torch) x f = T x f - f x (the same three): (1 - f) x those three more
    than vLLM's budget at the same fraction. Nothing when they do not fit."""
    return max(round(usable_bytes - fraction * (weights_bytes + activation_peak_bytes + non_torch_bytes)), 0)


def sglang_kv_cache_bytes(usable_bytes: int, fraction: float, weights_bytes: int, non_torch_bytes: int) -> int:
    """The KV-cache memory of one GPU as SGLang budgets it: mem_fraction_static of the memory free before the
    weights load holds the weights and the KV pool; the rest (1 - f) is left for activations and CUDA graphs, which
    are not profiled. `usable_bytes` is the card x the fraction.

    SGLang's python/sglang/srt/model_executor/model_runner.py (2025): init_torch_distributed returns
        min_per_gpu_memory = get_available_gpu_memory(self.device, self.gpu_id, distributed=..., cpu_group=...)
    after the CUDA context and NCCL are up, which is passed on as total_gpu_memory; after the weights load,
    profile_max_num_token takes
        available_gpu_memory = get_available_gpu_memory(...)
        rest_memory = available_gpu_memory - total_gpu_memory * (1 - self.mem_fraction_static)
        max_num_token = int(rest_memory * (1 << 30) // cell_size)
    So with T the card and C the context: (T - C - weights) - (T - C)(1 - f) = f x (T - C) - weights = T x f -
    f x C - weights. Nothing when they do not fit."""
    return max(round(usable_bytes - fraction * non_torch_bytes) - weights_bytes, 0)


def kv_pool_bytes(
    pool: KvPool,
    usable_bytes: int,
    fraction: float,
    weights_bytes: int,
    activation_peak_bytes: int,
    non_torch_bytes: int,
) -> int:
    """One GPU's KV-cache memory by the engine's convention (its framework file's kv_pool): `usable_bytes` is the
    reported memory x `fraction` (1 - reserve: vLLM's gpu_memory_utilization, TensorRT-LLM's free_gpu_memory_fraction,
    SGLang's mem_fraction_static)."""
    if pool == "trtllm":
        return trtllm_kv_cache_bytes(usable_bytes, fraction, weights_bytes, activation_peak_bytes, non_torch_bytes)
    if pool == "sglang":
        return sglang_kv_cache_bytes(usable_bytes, fraction, weights_bytes, non_torch_bytes)
    return vllm_kv_cache_bytes(usable_bytes, weights_bytes, activation_peak_bytes, non_torch_bytes)


# vLLM's profile run (vllm/v1/worker/gpu_model_runner.py, V1 of 2025): a forward over max_num_batched_tokens split
# over `num_reqs = max_num_reqs if num_tokens >= max_num_reqs else num_tokens` dummy requests, then
# "logit_indices = np.cumsum(num_scheduled_tokens) - 1" / "return hidden_states[logit_indices]": the LM head and the
# sampler run over one row per request. V0's model_runner.py likewise: "Profile memory usage with max_num_sequences
# sequences and the total number of tokens equal to max_num_batched_tokens." max_num_seqs is 256 by default
# (vllm/engine/arg_utils.py: "default_max_num_seqs = {UsageContext.LLM_CLASS: 256, UsageContext.OPENAI_API_SERVER:
# 256}"; later releases 1024 where "device_memory >= 70 * GiB_bytes and "a100" not in device_name", and the V1 of
# spring-summer 2025 without the A100 test: "if device_memory >= 70 * GiB_bytes: # For GPUs like H100 and MI300x,
# use larger default values. ... default_max_num_seqs = 1024").
# The vLLM file sets it by release (ServingSetup.max_num_seqs, large_card_max_num_seqs).
VLLM_MAX_NUM_SEQS = 256

# vllm/envs.py (commit 001f69f8, mid-2025): "VLLM_FUSED_MOE_CHUNK_SIZE: int = 64 * 1024" (32768 in 2024's
# releases). fused_experts_impl sizes its caches for "M = min(num_tokens, CHUNK_SIZE)" tokens.
FUSED_MOE_CHUNK_TOKENS = 64 * 1024

# fused_topk (fused_moe.py, commit 000d1458): "topk_weights = torch.empty(M, topk, dtype=torch.float32, ...)",
# "topk_ids = torch.empty(M, topk, dtype=torch.int32, ...)", "token_expert_indicies = torch.empty(M, topk,
# dtype=torch.int32, ...)": 12 bytes for each of a token's k choices, alive while the experts run.
ROUTING_BYTES_PER_CHOICE = 4 + 4 + 4

# use_fp8_w8a8: "qcurr_hidden_states, a1q_scale = moe_kernel_quantize_input(A=curr_hidden_states, ...)" and
# "qintermediate_cache2, a2q_scale = moe_kernel_quantize_input(A=intermediate_cache2, ...)" with qtype
# torch.float8_e4m3fn (get_config_qtype): 1-byte copies of the chunk's input and of cache2, besides the 16-bit ones.
FP8_BYTES = 1


# vllm/engine/arg_utils.py of mid-2025: "if device_memory >= 70 * GiB_bytes: # For GPUs like H100 and MI300x, use
# larger default values. ... default_max_num_seqs = 1024", later 'device_memory >= 70 * GiB_bytes and "a100" not in
# device_name' (device_memory is the memory torch reports: reported_memory_bytes). The release of April 2025 that
# brought the large-card default (vllm#16158) named H100 and H200 instead; the test below is the later one.
LARGE_CARD_BYTES = 70 * GIB


def is_large_card(gpu: GpuSpec) -> bool:
    """Whether vLLM gives this card its large-card defaults: 70 GiB or more as the driver reports it, not an A100."""
    return reported_memory_bytes(gpu) >= LARGE_CARD_BYTES and "a100" not in gpu.name.lower()


def with_card_max_num_seqs(setup: ServingSetup, gpu: GpuSpec) -> ServingSetup:
    """The setup with the max_num_seqs vLLM takes on this card: the release's large-card default
    (setup.large_card_max_num_seqs, where its framework file gives one) on a large card, else setup.max_num_seqs."""
    large = setup.large_card_max_num_seqs
    if large is None or large == setup.max_num_seqs or not is_large_card(gpu):
        return setup
    return setup.model_copy(update={"max_num_seqs": large})


def profile_sequences(tokens: int, max_num_seqs: int = VLLM_MAX_NUM_SEQS) -> int:
    """The dummy requests of vLLM's profile run over `tokens` tokens, one logits row each: max_num_seqs (vLLM's
    default VLLM_MAX_NUM_SEQS unless the framework says otherwise) or one a token when there are fewer
    tokens."""
    return min(max_num_seqs, tokens)


def dense_layer_peak_bytes(shape: ModelShape, tokens: int, gpus: int) -> int:
    """The live tensors of a dense layer at its MLP's peak in vLLM's forward over `tokens` tokens on one GPU.

    Gated MLP, vLLM's Llama (vllm/model_executor/models/llama.py). The model's loop,
        hidden_states, residual = layer(positions, hidden_states, kv_caches[i], attn_metadata, residual)
    holds the layer's input and residual (2d a token; the fused add-norms work on them in place); the layer's
        hidden_states = self.self_attn(...)
        hidden_states, residual = self.post_attention_layernorm(hidden_states, residual)
        hidden_states = self.mlp(hidden_states)
    holds the attention output (d) as the MLP's input, and LlamaMLP.forward's
        gate_up, _ = self.gate_up_proj(x)
        x = self.act_fn(gate_up)
        x, _ = self.down_proj(x)
    keeps gate_up (2F) and SiluAndMul's output (F) while down_proj writes d: 4d + 1.5 x the fused output a token.
    Plain MLP, vLLM's OPT (vllm/model_executor/models/opt.py): the loop holds the input (d), the layer its residual
    (d), and "hidden_states, _ = self.fc1(hidden_states)" / "hidden_states = self.activation_fn(hidden_states)"
    rebind, so fc1's input is freed and the peak is fc1's output and the activation's: 2d + 2 x fc1's width.
    The fused output is Model.widest_intermediate (q, k and v; gate and up). Column parallelism splits it and its
    activation over t GPUs; the d-wide tensors are whole on each (the row-parallel output is all-reduced). 16-bit
    activations, as tfcost.costs.expected counts them."""
    widest = model_of(shape).widest_intermediate()
    if shape.mlp == "gated":
        per_token = 4 * shape.d_model + ceil_div(widest + widest // 2, gpus)
    else:
        per_token = 2 * shape.d_model + ceil_div(2 * widest, gpus)
    return tokens * per_token * expected.ACTIVATION_BYTES


def fused_moe_peak_bytes(shape: ModelShape, tokens: int, gpus: int, fp8_w8a8: bool) -> int:
    """The live tensors of an MoE layer at the peak of vLLM's fused_moe over `tokens` tokens on one GPU (tensor
    parallel over `gpus`); 0 for a model without routed experts or with plain (ungated) experts, which fused_moe's
    "silu_and_mul" / "gelu_and_mul" do not run.

    vllm/model_executor/layers/fused_moe/fused_moe.py, fused_experts_impl at commit 000d1458 (mid-2025, vLLM 0.9):
        E, N, _ = w1.shape            # N: gate and up of one expert, 2F / t (column parallel)
        K = w2.shape[1]               # d, whole on each GPU
        M = min(num_tokens, CHUNK_SIZE)
        out_hidden_states = torch.empty_like(hidden_states)
        # We can reuse the memory between cache1 and cache3 because by the time we need cache3, we're done with cache1
        cache13 = torch.empty(M_sum * max(N, K), ...)            # M_sum = M * top_k_num
        intermediate_cache2 = torch.empty((M_sum, N // 2), ...)
    all in the activations' dtype (hidden_states.dtype). So a token holds k x max(2F / t, d) + k x F / t besides the
    layer's 4d (input, residual, the experts' input and out_hidden_states, as a dense layer's), the router's logits
    (fused_topk's gating_output, E a token, 16-bit) and the routing's k choices (ROUTING_BYTES_PER_CHOICE). Earlier
    releases (2024, e.g. v0.6.4) kept intermediate_cache1 (M, topk, N) and intermediate_cache3 (M, topk, K) apart:
    k x (2F / t + d) instead of k x max(2F / t, d). Shared experts and moe_align_block_size's int32 index buffers
    (about k x 4 bytes a token) are not counted."""
    moe = shape.moe
    if moe is None or shape.mlp != "gated":
        return 0
    d, k = shape.d_model, moe.experts_per_token
    n = ceil_div(2 * moe.expert_d_ff, gpus)
    chunk = min(tokens, FUSED_MOE_CHUNK_TOKENS)
    caches = chunk * k * (max(n, d) + n // 2)
    whole = tokens * (4 * d + moe.n_experts)
    held = (caches + whole) * expected.ACTIVATION_BYTES + tokens * k * ROUTING_BYTES_PER_CHOICE
    if fp8_w8a8:
        held += chunk * (d + k * (n // 2)) * FP8_BYTES
    return held


def forward_peak_bytes(shape: ModelShape, tokens: int, gpus: int, fp8_w8a8: bool = False) -> int:
    """The busiest layer's live tensors in vLLM's forward over `tokens` tokens on one GPU: dense_layer_peak_bytes,
    for MoE models the larger of that and fused_moe_peak_bytes. `fp8_w8a8`: the experts run fused_moe's FP8 path
    (FP8 weights)."""
    return max(dense_layer_peak_bytes(shape, tokens, gpus), fused_moe_peak_bytes(shape, tokens, gpus, fp8_w8a8))


def profile_activation_bytes(shape: ModelShape, tokens: int, sequences: int, gpus: int, fp8_w8a8: bool = False) -> int:
    """The activation peak of vLLM's V0 profile run on one GPU (vllm_profile v0, the default): a forward
    over `tokens` tokens, its peak the busiest layer's (forward_peak_bytes), then the fp32 logits of `sequences`
    sampled rows (the LM head runs over one row a request; profile_sequences). The logits are gathered over the
    vocabulary, so whole on each GPU."""
    return forward_peak_bytes(shape, tokens, gpus, fp8_w8a8) + sequences * shape.vocab_size * expected.LOGITS_BYTES


# vLLM V1's profile run in Jan 2025 (before the sampler joined it in Feb 2025, PR #13594), as vLLM's
# vllm/v1/worker/gpu_model_runner.py had it at the end of 2024 (copies of the file kept in the code index):
#     hidden_states = self._dummy_run(self.model, self.max_num_tokens, dummy_kv_caches)
#     logits = self.model.compute_logits(hidden_states, None)
#     logits = logits[:self.max_num_tokens]
#     # TODO(woosuk): Consider the memory usage of the sampler.
# The LM head runs over every one of the max_num_tokens rows (one 16-bit logit a row and vocabulary entry) while
# the forward's last hidden states are still held; the layers' own tensors are freed by then, so the peak is the
# larger of the two, not their sum. The commit of 30 Jan 2025 itself (validation #84) was not read: an XPU port of
# the same function of early 2025 (KVCacheConfig groups, `self._dummy_run(self.max_num_tokens, dummy_kv_caches)`,
# `torch.xpu.synchronize()`) still computes every token's logits, and the one-row-a-request form
# (`hidden_states = hidden_states[logit_indices]`) first appears with V1's LoRA profiling
# (`with self.maybe_profile_with_lora(self.lora_config, num_scheduled_tokens)`), as context of PR #13594
# (20 Feb 2025).
#
# From Feb 2025 (PR #13594, "V1 Memory Profiling: V0 Sampler Integration"; PR #13721 moved it into
# `_dummy_sampler_run`) the dummy requests' rows also go through the sampler. gpu_model_runner.py of mid-2025
# (v0.9/v0.10: `self.eplb_step(is_dummy=True, is_profile=is_profile)`, `logitsprocs=LogitsProcessorManager()`):
#     logit_indices = np.cumsum(num_scheduled_tokens) - 1
#     return hidden_states, hidden_states[logit_indices]
#   def _dummy_sampler_run(self, hidden_states):
#     hidden_states = torch.rand_like(hidden_states)
#     logits = self.model.compute_logits(hidden_states, None)
#     dummy_metadata = SamplingMetadata(temperature=dummy_tensors(0.5), all_greedy=False, all_random=False,
#         top_p=dummy_tensors(0.9), top_k=dummy_tensors(logits.size(1) - 1), ..., no_penalties=True, ...)
#     sampler_output = self.sampler(logits=logits, sampling_metadata=dummy_metadata)
# vllm/v1/sample/sampler.py of the same period: "# Use float32 for the logits." / "logits = logits.to(torch.float32)",
# the temperature "logits.div_(temp.unsqueeze(dim=1))" in place, then top-k and top-p; PyTorch's path
# (vllm/v1/sample/ops/topk_topp_sampler.py, apply_top_k_top_p, used where FlashInfer is not installed):
#     logits_sort, logits_idx = logits.sort(dim=-1, descending=False)
#     top_k_mask = logits_sort < top_k_mask                      # bool
#     probs_sort = logits_sort.softmax(dim=-1)
#     probs_sum = torch.cumsum(probs_sort, dim=-1, out=probs_sort)
#     top_p_mask = probs_sum <= 1 - p.unsqueeze(dim=1)           # bool
#     logits = logits_sort.scatter(dim=-1, index=logits_idx, src=logits_sort)
# At that scatter each vocabulary entry of each row holds: the caller's 16-bit logits (2 bytes), the sampler's fp32
# copy (4), logits_sort (4), logits_idx (int64, 8), top_k_mask (1), probs_sort (4), top_p_mask (1) and the
# scatter's output (4): 28 bytes. The sort itself holds more while it runs. PyTorch sorts a [rows, V] fp32 tensor of
# 128 rows or more by a segmented radix sort (aten/src/ATen/native/cuda/SortStable.cu, launch_stable_sort_kernel:
# "} else { segmented_sort_pairs(...)" past the "nsegments < 128" case; at pytorch/pytorch 420d374), which first
# allocates an int64 index per entry ("auto reverse_indices = cuda_allocator->allocate(numel * sizeof(int64_t))")
# and then calls cub's DeviceSegmentedRadixSort::SortPairs through CUB_WRAPPER, whose temporary storage comes from
# the caching allocator ("auto temp_storage = caching_allocator.allocate(temp_storage_bytes)", ATen/cuda/cub.cuh);
# not sorting in place, cub's segmented dispatch asks for a third keys and values buffer ("// bytes needed for 3rd
# keys buffer ... num_items * sizeof(KeyT)", "// bytes needed for 3rd values buffer ... num_items * sizeof(ValueT)",
# DispatchSegmentedRadixSort::InvokePasses). So during the sort each entry holds the 16-bit logits (2), the fp32
# input (4), the sorted values (4) and indices (8), the reverse indices (8) and cub's key and value buffers (4 + 8):
# 38 bytes, the sampler's peak (issue 22: found while examining held-out #48 after its figure had been seen; every
# byte is an allocation of the code quoted, none sized from a measurement).
SAMPLER_SCATTER_BYTES_PER_LOGIT = 2 + 4 + 4 + 8 + 1 + 4 + 1 + 4
SAMPLER_SORT_BYTES_PER_LOGIT = 2 + 4 + 4 + 8 + 8 + 4 + 8
SAMPLER_PEAK_BYTES_PER_LOGIT = max(SAMPLER_SORT_BYTES_PER_LOGIT, SAMPLER_SCATTER_BYTES_PER_LOGIT)
# What the sampler path holds besides: the sampled rows' hidden states and _dummy_sampler_run's rand_like copy.
SAMPLER_HIDDEN_COPIES = 2


def v1_logits_bytes(shape: ModelShape, tokens: int) -> int:
    """V1's profile run of Jan 2025 after its forward over `tokens` tokens: the hidden states it returned and the
    16-bit logits of every token (no sampler), on one GPU."""
    return tokens * (shape.d_model + shape.vocab_size) * expected.ACTIVATION_BYTES


def v1_sampler_bytes(shape: ModelShape, tokens: int, sequences: int) -> int:
    """V1's profile run from Feb 2025 after its forward over `tokens` tokens: the hidden states it returned, then
    the sampler's dummy run over `sequences` rows at its peak (SAMPLER_PEAK_BYTES_PER_LOGIT a vocabulary entry, the
    rows' hidden states twice), on one GPU."""
    hidden = (tokens + SAMPLER_HIDDEN_COPIES * sequences) * shape.d_model * expected.ACTIVATION_BYTES
    return hidden + sequences * shape.vocab_size * SAMPLER_PEAK_BYTES_PER_LOGIT


def vllm_profile_activation_bytes(
    profile: VllmProfile, shape: ModelShape, tokens: int, sequences: int, gpus: int, fp8_w8a8: bool = False
) -> int:
    """The activation peak of the vLLM profile run `profile` (the vLLM file's vllm_profile) on one GPU over `tokens`
    tokens and `sequences` dummy requests: V0's (profile_activation_bytes), or V1's, where what follows the forward
    (v1_logits_bytes, v1_sampler_bytes) peaks after the layers' tensors are freed, so the larger of the two."""
    if profile == "v0":
        return profile_activation_bytes(shape, tokens, sequences, gpus, fp8_w8a8)
    after = v1_logits_bytes(shape, tokens) if profile == "v1" else v1_sampler_bytes(shape, tokens, sequences)
    return max(forward_peak_bytes(shape, tokens, gpus, fp8_w8a8), after)


# vLLM of late 2023 under tensor parallelism (validation #47): its profile run left the KV cache 20,865 blocks on
# each of 4 A100s for Llama-2-70B where the allocator's own peak had given 31,615, and 7,351 against 7,449 on one GPU
# for Llama-2-7B (vllm-project/vllm PR #2031, "Fix peak memory profiling": "NOTE: This significantly affects the KV
# cache size, especially when TP > 1"; the fix measures the peak as total - free after the profile run). Why, in
# vllm-project/vllm#2248: "There are evidences of more memory fragmentation when tp > 1 ... Seems that the
# `record_stream` (called for NCCL communication) makes the cached memory blocks of activations cannot be reused, so
# the memory consumption of one forward grows substantially. Setting `TORCH_NCCL_AVOID_RECORD_STREAMS=1` can fix this
# problem". A tensor handed to NCCL's stream goes back to the cache only once that stream's work on it is done, and
# the host queues the whole profile forward long before the GPU gets there, so every all-reduced activation is a
# block of its own until the forward ends: each layer's two row-parallel outputs (o_proj's and down_proj's,
# "output = tensor_model_parallel_all_reduce(output_parallel)" in RowParallelLinear) and the vocabulary-parallel
# embedding's output (the same call in VocabParallelEmbedding.forward), tokens x d 16-bit each.
EMBEDDING_ALLREDUCES = 1


def record_stream_held_bytes(shape: ModelShape, tokens: int, gpus: int) -> int:
    """What vLLM's profile run over `tokens` tokens holds besides its busiest layer when every all-reduced activation
    stays a block of its own until the forward ends (nccl_record_stream, vLLM 0.2.7's): (2 L + 1) x tokens x d x 2 bytes
    on each GPU; nothing on one GPU (no all-reduce)."""
    if gpus == 1:
        return 0
    allreduces = expected.ALLREDUCES_PER_LAYER * shape.n_layers + EMBEDDING_ALLREDUCES
    return allreduces * tokens * shape.d_model * expected.ACTIVATION_BYTES


# Eager (unfused) norms: transformers' LlamaRMSNorm runs `hidden_states.to(torch.float32)`, then
# `hidden_states * torch.rsqrt(variance + eps)` (autograd keeps that fp32 input: 4 bytes an element, where a fused
# norm keeps its 16-bit input, 2) and `self.weight * hidden_states.to(input_dtype)` (keeps the 16-bit normalized
# tensor, which the next linear does not share: it keeps the product with the weight). So each d-wide norm keeps
# 4 more bytes per element than the fold (tfcost.core.activations) counts: 8d per token for a Llama layer's two
# norms, about 23% over the fold's 34d with fused attention and no dropout. torch.compile or fused norm kernels
# (Liger, Apex, Transformer Engine) keep the 16-bit input only.
EAGER_NORM_EXTRA_BYTES = 4


def eager_norm_bytes_per_layer(shape: ModelShape, setup: TrainingSetup) -> int:
    """What one layer's unfused norms keep beyond the fold, on one GPU, for one micro-batch; 0 with fused norms,
    under full recomputation (only the layer's input is kept) or torchtitan's op-level policy (norms recomputed)."""
    if setup.kernels != "eager" or setup.recompute in ("full", "selective-op"):
        return 0
    split = setup.tp if setup.sequence_parallel else 1
    tokens = setup.micro_batch * setup.seq_len // setup.cp
    return tokens * shape.block_norms * EAGER_NORM_EXTRA_BYTES * shape.d_model // split


def eager_norm_bytes(shape: ModelShape, setup: TrainingSetup) -> int:
    """The busiest GPU's extra bytes from eager norms: per layer x the layers it holds in flight (every layer
    without pipelining; the first stage's layers x its micro-batches in flight with it)."""
    per_layer = eager_norm_bytes_per_layer(shape, setup)
    if per_layer == 0:
        return 0
    stages = parallel.setup_stages(shape, setup)
    in_flight = min(parallel.micro_batches(setup), setup.pp) if setup.pp > 1 else 1
    return per_layer * max(min(in_flight, setup.pp - i) * layers for i, layers in enumerate(stages))


def with_eager_norms(held: dict[str, int], shape: ModelShape, setup: TrainingSetup) -> dict[str, int]:
    """`training.memory_per_gpu`'s parts with the eager norms' extra bytes added to the activations and total."""
    extra = eager_norm_bytes(shape, setup)
    return held | {"activations": held["activations"] + extra, "total": held["total"] + extra}
