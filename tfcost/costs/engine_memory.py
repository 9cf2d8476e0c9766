"""Serving memory as vLLM allocates it (issue 22): the device memory the card reports, and what lives outside
PyTorch's allocator.

vLLM's budget is total_gpu_memory x gpu_memory_utilization, where total_gpu_memory is what the driver reports
(torch.cuda.mem_get_info), not the memory as sold: "total_gpu_memory (79.22GiB)" on an H100 80GB
(vllm-project/vllm#12126 and #10511 logs). From the budget it takes the weights, the peak of a profiling forward
and the memory outside PyTorch's allocator; the KV cache gets the rest.

Not changed here: the memory outside the allocator stays tfcost.costs.expected's assumed 0.5 GiB, because vLLM's
own logs disagree by a factor of ten ("non_torch_memory 1.79GiB", Llama-3-8B on H100, vllm#10511; "0.16GiB",
Llama-3.2-11B-Vision on H100, vllm#12126; "0.20GiB" on 24 GB cards, vllm#14447).
"""

from __future__ import annotations

from tfcost.hardware.rates import memory_bytes
from tfcost.schema import GpuSpec
from tfcost.units import GIB


def reported_memory_bytes(gpu: GpuSpec) -> int:
    """Device memory as the driver reports it (the table's reported_memory_gib), else as sold."""
    return memory_bytes(gpu) if gpu.reported_memory_gib is None else round(gpu.reported_memory_gib * GIB)


def engine_usable_bytes(gpu: GpuSpec, reserve: float) -> int:
    """vLLM's budget per GPU: the reported memory x gpu_memory_utilization (1 - reserve)."""
    return int(reported_memory_bytes(gpu) * (1 - reserve))
