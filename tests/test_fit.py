"""Memory fit: DeepSpeed's own accounting, ZeRO-3's live parameters, the CUDA context and allocator reserve."""

from __future__ import annotations

import pytest

from tfcost.core import params
from tfcost.costs import fit
from tfcost.readers.presets import load_gpu, load_model
from tfcost.reports.train import train
from tfcost.schema import TrainingSetup

N = 6_738_415_616  # Llama-2-7B
LAYER = 202_383_360  # one Llama-2-7B layer: 4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096


def memory(**fields: object):
    setup = TrainingSetup(tokens=4096, seq_len=4096, gpus=64, **fields)  # type: ignore[arg-type]
    return train(load_model("llama-2-7b"), load_gpu("a100-80gb"), setup).memory_per_gpu


def test_layer_count():
    assert params.params_per_layer(load_model("llama-2-7b")) == LAYER


def test_deepspeed_estimators():
    # DeepSpeed 0.19.6, deepspeed/runtime/zero/stage_1_and_2.py estimate_zero2_model_states_mem_needs (no offload):
    # gpu_mem = 2 * total_params + int(18 * total_params / total_gpus); stage3.py estimate_zero3_model_states_mem_needs:
    # largest_layer_memory + int(18 * total_params / total_gpus), largest_layer_memory = 4 * largest_layer_params,
    # where a layer is one module's own parameters (model_to_params): Llama 2 7B's embedding, 32,000 x 4,096.
    zero2 = memory(zero=2, memory_convention="deepspeed")
    assert zero2.weights_bytes + zero2.gradients_bytes + zero2.optimizer_bytes == 2 * N + 18 * N // 64
    zero3 = memory(zero=3, memory_convention="deepspeed")
    assert zero3.weights_bytes + zero3.gradients_bytes + zero3.optimizer_bytes == 4 * 32_000 * 4096 + 18 * N // 64


def test_deepspeed_estimators_with_offload():
    # cpu_offload: ZeRO-2 gpu_mem = 2 * total_params; ZeRO-3 largest_layer_memory + int(2 * total_params / total_gpus),
    # and with cpu_offload_params largest_layer_memory alone.
    def on_gpu(**fields: object) -> int:
        held = memory(memory_convention="deepspeed", **fields)
        return held.weights_bytes + held.gradients_bytes + held.optimizer_bytes

    largest = 4 * 32_000 * 4096
    assert on_gpu(zero=2, offload="optimizer") == 2 * N
    assert on_gpu(zero=3, offload="optimizer") == largest + 2 * N // 64
    assert on_gpu(zero=3, offload="params") == largest
    assert memory(zero=3, memory_convention="deepspeed", offload="params").host_bytes == 18 * N // 64


def test_deepspeed_zero2_llama_3_8b_on_8_gpus_prints_31_78_gb():
    # estimate_zero2_model_states_mem_needs_all_cold prints f"{gpu_mem/2**30:6.2f}GB": 31.78 for LlamaForCausalLM
    # Llama-3-8B (8,030,261,248 parameters), 1 node of 8 GPUs, no offload.
    setup = TrainingSetup(tokens=4096, seq_len=4096, gpus=8, zero=2, memory_convention="deepspeed")
    held = train(load_model("llama-3-8b"), load_gpu("h100-sxm"), setup).memory_per_gpu
    assert f"{(held.weights_bytes + held.gradients_bytes + held.optimizer_bytes) / 2**30:6.2f}" == " 31.78"


def test_zero_paper_zero3_adds_the_gathered_layers():
    zero3 = memory(zero=3)
    root = 2 * 32_000 * 4096 + 4096  # FSDP's root unit: embedding, head and final norm, gathered through the step
    assert zero3.weights_bytes == -(-2 * N // 64) + 2 * 2 * LAYER + 2 * root  # one layer in use, one prefetched
    assert fit.zero3_live_params(10**9) == 10**9  # DeepSpeed's stage3_max_live_parameters cap


def test_context_and_reserve_decide_the_fit():
    base = memory(zero=1)
    assert base.cuda_context_bytes == 2**29 and base.allocator_reserve_bytes == round(0.05 * 80 * 2**30)
    squeezed = memory(zero=1, cuda_context_gib=80.0)
    assert base.fits and not squeezed.fits
    assert squeezed.total_bytes == base.total_bytes  # the overheads sit beside the tensors, not in them


def test_reserve_must_be_a_fraction():
    with pytest.raises(ValueError):
        TrainingSetup(tokens=1, seq_len=1, allocator_reserve=1.0)
