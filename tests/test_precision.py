"""Precisions, optimizers, offload and optimizer-in-backward against the published setups they come from."""

from __future__ import annotations

import json

import pytest

from tfcost.costs.precision import bytes_per_param
from tfcost.readers.presets import load_gpu, load_model
from tfcost.reports.train import train
from tfcost.schema import TrainingSetup

GIB = 2**30


@pytest.mark.parametrize(
    ("precision", "optimizer", "expected"),
    [
        ("bf16-mixed", "adamw", (2, 2, 12)),  # ZeRO Fig. 1: K = 12
        ("fp8", "adamw", (2, 2, 12)),  # FP8 matmuls, the same bf16 weights and fp32 master copy
        ("bf16-mixed", "adamw-8bit", (2, 2, 6)),  # Transformer Math 101: 8-bit optimizers 6 bytes
        ("bf16-mixed", "sgd", (2, 2, 8)),  # Transformer Math 101: SGD with momentum 8 bytes
        ("bf16", "adamw", (2, 2, 4)),  # pure bf16: two bf16 moments, no master copy
        ("bf16", "paged-adamw-8bit", (2, 2, 2)),
        ("bf16-mixed", "adafactor", (2, 2, 4)),  # the master copy only; factored moments left out
        ("bf16-mixed", "muon", (2, 2, 8)),  # one fp32 momentum buffer
        ("fp32", "adamw", (4, 4, 8)),
    ],
)
def test_bytes_per_param(precision, optimizer, expected):
    assert tuple(bytes_per_param(precision, optimizer).values()) == expected


def test_torchtune_llama31_8b_full_finetune_on_a_4090(tfcost):
    # torchtune README (v0.6): Llama-3.1-8B full fine-tune on one RTX 4090, batch 2, sequence 2048, bf16 weights,
    # optimizer_in_bwd, bitsandbytes PagedAdamW8bit, activation checkpointing: 18.9 GiB peak. Llama-3.1-8B has
    # Llama-3-8B's shape. The paged 8-bit states (2 bytes a parameter) live in unified memory, outside torch's
    # count, so they are reported as host memory.
    run = tfcost("train", "llama-3-8b", "--gpu", "rtx-4090", "--seq", "2048", "--micro-batch", "2", "--precision",
                 "bf16", "--optimizer", "paged-adamw-8bit", "--framework-set", "optimizer_in_backward=true",
                 "--recompute", "full", "--tokens", "4096", "-f", "json")  # fmt: skip
    assert run.code == 0, run.stderr
    memory = json.loads(run.stdout)["memory_per_gpu"]
    assert memory["total_bytes"] / GIB == pytest.approx(18.9, rel=0.10)
    assert memory["total_bytes"] / GIB == pytest.approx(18.89, abs=0.01)  # 1.00 of the published figure today
    assert memory["optimizer_bytes"] == 0 and memory["host_bytes"] == 2 * 8_030_261_248
    assert memory["gradients_bytes"] == 2 * 128_256 * 4096  # only the embedding's gradient alive at once


def test_offload_moves_the_optimizer_states_and_gradients_to_the_host():
    shape, gpu = load_model("llama-2-7b"), load_gpu("a100-80gb")
    base = train(shape, gpu, TrainingSetup(tokens=4096, seq_len=4096)).memory_per_gpu
    offloaded = train(shape, gpu, TrainingSetup(tokens=4096, seq_len=4096, offload="optimizer")).memory_per_gpu
    assert base.optimizer_bytes == 12 * 6_738_415_616 and base.gradients_bytes == 2 * 6_738_415_616
    # ZeRO-Offload moves the gradients with the optimizer states (DeepSpeed's estimator keeps 2N on the GPU)
    assert offloaded.optimizer_bytes == offloaded.gradients_bytes == 0
    assert offloaded.host_bytes == base.optimizer_bytes + base.gradients_bytes
    params = train(shape, gpu, TrainingSetup(tokens=4096, seq_len=4096, offload="params")).memory_per_gpu
    # all of it on the host but the layer in use and the one prefetched (2 x 202,383,360 parameters, 16-bit)
    assert params.weights_bytes == 2 * 2 * 202_383_360 and params.host_bytes == 16 * 6_738_415_616


def test_fp8_uses_the_fp8_peak():
    shape, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    setup = TrainingSetup(tokens=10**9, seq_len=4096, precision="fp8", mfu=0.4)
    assert train(shape, gpu, setup).inputs.peak_flops_per_s == 1978.9e12
