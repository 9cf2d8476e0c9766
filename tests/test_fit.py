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
    # deepspeed/runtime/zero: estimate_zero2_model_states_mem_needs (no offload) 4N + int(16N / gpus);
    # estimate_zero3_model_states_mem_needs 4 x largest layer + int(18N / gpus).
    zero2 = memory(zero=2, memory_convention="deepspeed")
    assert zero2.weights_bytes + zero2.gradients_bytes + zero2.optimizer_bytes == 4 * N + -(-16 * N // 64)
    zero3 = memory(zero=3, memory_convention="deepspeed")
    assert zero3.weights_bytes + zero3.gradients_bytes + zero3.optimizer_bytes == 4 * LAYER + -(-18 * N // 64)


def test_zero_paper_zero3_adds_the_gathered_layers():
    zero3 = memory(zero=3)
    assert zero3.weights_bytes == -(-2 * N // 64) + 2 * 2 * LAYER  # one layer in use, one prefetched
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
