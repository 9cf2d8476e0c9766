"""Memory as engines allocate it (issue 22): the device memory the card reports (serving), and what eager PyTorch
keeps beyond the activation fold (training).

vLLM's budget is total_gpu_memory x gpu_memory_utilization, where total_gpu_memory is what the driver reports
(torch.cuda.mem_get_info), not the memory as sold: "total_gpu_memory (79.22GiB)" on an H100 80GB
(vllm-project/vllm#12126 and #10511 logs). From the budget it takes the weights, the peak of a profiling forward
and the memory outside PyTorch's allocator; the KV cache gets the rest.

Not changed here: the memory outside the allocator stays tfcost.costs.expected's assumed 0.5 GiB, because vLLM's
own logs disagree by a factor of ten ("non_torch_memory 1.79GiB", Llama-3-8B on H100, vllm#10511; "0.16GiB",
Llama-3.2-11B-Vision on H100, vllm#12126; "0.20GiB" on 24 GB cards, vllm#14447).
"""

from __future__ import annotations

from tfcost.core.blocks import layer_count
from tfcost.costs import parallel
from tfcost.hardware.rates import memory_bytes
from tfcost.schema import GpuSpec, ModelShape, TrainingSetup
from tfcost.units import GIB


def reported_memory_bytes(gpu: GpuSpec) -> int:
    """Device memory as the driver reports it (the table's reported_memory_gib), else as sold."""
    return memory_bytes(gpu) if gpu.reported_memory_gib is None else round(gpu.reported_memory_gib * GIB)


def engine_usable_bytes(gpu: GpuSpec, reserve: float) -> int:
    """vLLM's budget per GPU: the reported memory x gpu_memory_utilization (1 - reserve)."""
    return int(reported_memory_bytes(gpu) * (1 - reserve))


# Eager (unfused) norms: transformers' LlamaRMSNorm runs `hidden_states.to(torch.float32)`, then
# `hidden_states * torch.rsqrt(variance + eps)` (autograd keeps that fp32 input: 4 bytes an element, where a fused
# norm keeps its 16-bit input, 2) and `self.weight * hidden_states.to(input_dtype)` (keeps the 16-bit normalized
# tensor, which the next linear does not share: it keeps the product with the weight). So each d-wide norm keeps
# 4 more bytes per element than the fold (tfcost.core.activations) counts: 8d per token for a Llama layer's two
# norms, about 23% over the fold's 34d with fused attention and no dropout. torch.compile or fused norm kernels
# (Liger, Apex, Transformer Engine) keep the 16-bit input only.
EAGER_NORM_EXTRA_BYTES = 4


def eager_norm_bytes_per_layer(shape: ModelShape, setup: TrainingSetup) -> int:
    """What one layer's unfused norms keep beyond the fold, on one GPU, for one micro-batch; 0 with fused kernels,
    under full recomputation (only the layer's input is kept) or torchtitan's op-level policy (norms recomputed)."""
    if setup.kernels == "fused" or setup.recompute in ("full", "selective-op"):
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
    stages = parallel.stage_layers(layer_count(shape), setup.pp, setup.pp_first_layers, setup.pp_last_layers)
    in_flight = min(parallel.micro_batches(setup), setup.pp) if setup.pp > 1 else 1
    return per_layer * max(min(in_flight, setup.pp - i) * layers for i, layers in enumerate(stages))


def with_eager_norms(held: dict[str, int], shape: ModelShape, setup: TrainingSetup) -> dict[str, int]:
    """`training.memory_per_gpu`'s parts with the eager norms' extra bytes added to the activations and total."""
    extra = eager_norm_bytes(shape, setup)
    return held | {"activations": held["activations"] + extra, "total": held["total"] + extra}
