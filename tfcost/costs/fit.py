"""Whether a training run fits: what a GPU needs beyond the tensors the formulas count.

- The CUDA context (driver state, kernels, cuBLAS/cuDNN handles) takes memory before the first tensor: a stated
  assumption of 0.5 GiB (nvidia-smi shows 0.3-0.6 GiB for a PyTorch process on recent CUDA), set with
  --cuda-context-gib.
- The caching allocator holds more than it hands out (fragmentation, rounding): a stated 5% of the GPU, set with
  --allocator-reserve.
- ZeRO-3 gathers each layer's weights before using it and prefetches the next: DeepSpeed caps the gathered
  parameters at stage3_max_live_parameters (default 1e9) and the prefetch at stage3_prefetch_bucket_size (default
  5e8) (DeepSpeed configuration docs, "ZeRO optimizations"); tfcost counts one layer plus one prefetched, capped so.
- DeepSpeed's own estimators (deepspeed/runtime/zero/stage_1_and_2.py and stage3.py,
  estimate_zero2/zero3_model_states_mem_needs, no offload) differ from the ZeRO paper: ZeRO-2 keeps full 16-bit
  weights and gradients, 4N + 16N/n; ZeRO-3 18N/n plus 4 bytes per parameter of the largest layer.
"""

from __future__ import annotations

from tfcost.units import GIB, ceil_div

CUDA_CONTEXT_GIB = 0.5  # an assumption, not a measurement: --cuda-context-gib
ALLOCATOR_RESERVE = 0.05  # an assumption: --allocator-reserve
ZERO3_MAX_LIVE_PARAMETERS = 10**9  # DeepSpeed stage3_max_live_parameters default
ZERO3_PREFETCH_BUCKET = 5 * 10**8  # DeepSpeed stage3_prefetch_bucket_size default
DEEPSPEED_ZERO2_REPLICATED = 4  # bytes per parameter every GPU keeps at ZeRO-2: 16-bit weights and gradients
DEEPSPEED_ZERO2_SHARDED = 16  # bytes per parameter sharded at ZeRO-2
DEEPSPEED_ZERO3_SHARDED = 18  # bytes per parameter sharded at ZeRO-3
DEEPSPEED_LARGEST_LAYER = 4  # bytes per parameter of the largest layer at ZeRO-3


def zero3_live_params(layer_params: int) -> int:
    """Parameters ZeRO-3 holds gathered at once: the layer in use and the one prefetched, within DeepSpeed's caps."""
    return min(ZERO3_MAX_LIVE_PARAMETERS, layer_params + min(ZERO3_PREFETCH_BUCKET, layer_params))


def deepspeed_model_states(n_params: int, zero: int, replicas: int, largest_layer_params: int) -> dict[str, int]:
    """DeepSpeed's estimate of model-state bytes on one GPU (no offload), split as weights / gradients / optimizer
    so the report keeps its lines: ZeRO-2 2N + 2N + 16N/n; ZeRO-3 18N/n + 4 x the largest layer."""
    if zero == 2:
        return {
            "weights": DEEPSPEED_ZERO2_REPLICATED // 2 * n_params,
            "gradients": DEEPSPEED_ZERO2_REPLICATED // 2 * n_params,
            "optimizer": ceil_div(DEEPSPEED_ZERO2_SHARDED * n_params, replicas),
        }
    return {
        "weights": DEEPSPEED_LARGEST_LAYER * largest_layer_params,
        "gradients": 0,
        "optimizer": ceil_div(DEEPSPEED_ZERO3_SHARDED * n_params, replicas),
    }


def overhead_bytes(gpu_memory_bytes: int, cuda_context_gib: float, allocator_reserve: float) -> dict[str, int]:
    """The CUDA context and the allocator's reserve on one GPU."""
    return {
        "cuda_context": round(cuda_context_gib * GIB),
        "allocator_reserve": round(allocator_reserve * gpu_memory_bytes),
    }


def fits(held_bytes: int, overhead: dict[str, int], gpu_memory_bytes: int) -> bool:
    """Whether what a GPU holds, with the CUDA context and the allocator's reserve (`overhead_bytes`), fits in it."""
    return held_bytes + sum(overhead.values()) <= gpu_memory_bytes
