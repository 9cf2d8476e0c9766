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
  estimate_zero2/zero3_model_states_mem_needs, DeepSpeed 0.19.6; ZeRO-2's as rewritten in June 2024, PR #5099)
  differ from the ZeRO paper. ZeRO-2, per GPU:
      if cpu_offload:
          gpu_mem = 2 * total_params
      else:
          # GPU's total_params multipliers: 2 = params_16bit,
          # 18 = 2_grads_16bit + 4_grads_32bit + 4_params_32bit + 8_optimizer_states_32bit(momentum and variance)
          gpu_mem = 2 * total_params + int(18 * total_params / total_gpus)
  ZeRO-3, with largest_layer_memory = (4 * largest_layer_params):
      gpu_mem = largest_layer_memory                                  # cpu_offload and cpu_offload_params
      gpu_mem = largest_layer_memory + int(2 * total_params / total_gpus)   # cpu_offload only
      gpu_mem = largest_layer_memory + int(18 * total_params / total_gpus)  # no offload
  where a "layer" is one module's own parameters (model_to_params: `m.parameters(recurse=False)`), so the largest
  is the biggest single weight, the embedding or the head of a language model. For Llama-3-8B on 8 GPUs ZeRO-2
  gives 2N + 18N/8 = 31.79 GiB per GPU.
"""

from __future__ import annotations

from tfcost.schema import Offload
from tfcost.units import GIB

CUDA_CONTEXT_GIB = 0.5  # an assumption, not a measurement: --cuda-context-gib
ALLOCATOR_RESERVE = 0.05  # an assumption: --allocator-reserve
ZERO3_MAX_LIVE_PARAMETERS = 10**9  # DeepSpeed stage3_max_live_parameters default
ZERO3_PREFETCH_BUCKET = 5 * 10**8  # DeepSpeed stage3_prefetch_bucket_size default
DEEPSPEED_PARAMS_16BIT = 2  # bytes per parameter: the 16-bit weights (every GPU's at ZeRO-2, a shard at ZeRO-3)
DEEPSPEED_SHARDED = 18  # bytes per parameter sharded: 2 + 4 gradients, 4 master weights, 8 Adam moments
DEEPSPEED_OPTIMIZER = 4 + 8  # of those: the fp32 master weights and Adam's two moments
DEEPSPEED_LARGEST_LAYER = 4  # bytes per parameter of the largest layer at ZeRO-3 (largest_layer_memory)


def zero3_live_params(layer_params: int) -> int:
    """Parameters ZeRO-3 holds gathered at once: the layer in use and the one prefetched, within DeepSpeed's caps."""
    return min(ZERO3_MAX_LIVE_PARAMETERS, layer_params + min(ZERO3_PREFETCH_BUCKET, layer_params))


def deepspeed_model_states(
    n_params: int, zero: int, replicas: int, largest_layer_params: int, offload: Offload = "none"
) -> tuple[dict[str, int], int]:
    """DeepSpeed's estimate of model-state bytes on one GPU (the module docstring), split as weights / gradients /
    optimizer so the report keeps its lines (the split is tfcost's: DeepSpeed prints the total), and the bytes its
    offload moves to the host. ZeRO-2: 2N + (18N/n: 6N/n gradients, 12N/n optimizer), with offload 2N; ZeRO-3:
    4L + (18N/n: 2N/n weights, 4N/n gradients, 12N/n optimizer), with the optimizer offloaded 4L + 2N/n, with the
    parameters too 4L. Each of DeepSpeed's terms is rounded down, as its int() does."""
    sharded = DEEPSPEED_SHARDED * n_params // replicas  # int(18 * total_params / total_gpus), as DeepSpeed's
    optimizer = DEEPSPEED_OPTIMIZER * n_params // replicas
    shard_16bit = DEEPSPEED_PARAMS_16BIT * n_params // replicas if zero == 3 else 0
    parts = {
        "weights": shard_16bit if zero == 3 else DEEPSPEED_PARAMS_16BIT * n_params,
        "gradients": sharded - optimizer - shard_16bit,
        "optimizer": optimizer,
    }
    host = 0
    if offload != "none":  # ZeRO-2 keeps the 16-bit weights only; ZeRO-3 its 16-bit shard and the largest layer
        host, parts["gradients"], parts["optimizer"] = parts["gradients"] + parts["optimizer"], 0, 0
    if zero == 3:
        if offload == "params":
            host, parts["weights"] = host + parts["weights"], 0
        parts["weights"] += DEEPSPEED_LARGEST_LAYER * largest_layer_params
    return parts, host


def overhead_bytes(gpu_memory_bytes: int, cuda_context_gib: float, allocator_reserve: float) -> dict[str, int]:
    """The CUDA context and the allocator's reserve on one GPU."""
    return {
        "cuda_context": round(cuda_context_gib * GIB),
        "allocator_reserve": round(allocator_reserve * gpu_memory_bytes),
    }


def fits(held_bytes: int, overhead: dict[str, int], gpu_memory_bytes: int) -> bool:
    """Whether what a GPU holds, with the CUDA context and the allocator's reserve (`overhead_bytes`), fits in it."""
    return held_bytes + sum(overhead.values()) <= gpu_memory_bytes
