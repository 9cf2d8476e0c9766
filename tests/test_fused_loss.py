"""`--loss fused` (issue 36): a fused head-and-loss kernel holds one chunk of logits, not all of them."""

from __future__ import annotations

import pytest

from tfcost import api
from tfcost.costs import training
from tfcost.readers.presets import load_model
from tfcost.schema import TrainingSetup


def test_liger_s_own_example_chunk():
    """Liger-Kernel's fused_linear_cross_entropy.py (e11c2d6): "for ex: BT = 4096*4, V = 32000, H = 4096 ==>
    inc_factor = 8, chunk_size = 2048". Llama 2 7B (V 32,000, H 4,096) with 4 sequences of 4,096: the input's
    bf16 gradient (16,384 x 4,096 x 2) and one 2,048-token chunk of fp32 logits (2,048 x 32,000 x 4)."""
    shape = load_model("llama-2-7b")
    setup = TrainingSetup(tokens=10**9, seq_len=4096, micro_batch=4, loss="fused")
    assert training.last_stage_logits_bytes(shape, setup) == 16384 * 4096 * 2 + 2048 * 32000 * 4
    chunked = TrainingSetup(tokens=10**9, seq_len=4096, micro_batch=4, loss="chunked")
    assert training.last_stage_logits_bytes(shape, chunked) == 4 * 16384 * 32000  # 4sbV


def test_fused_loss_lowers_a_fine_tune_s_memory():
    chunked = api.train("llama-3-8b", gpu="rtx-4090", seq=8192, lora_rank=16, qlora=True, recompute="full")
    fused = api.train("llama-3-8b", gpu="rtx-4090", seq=8192, lora_rank=16, qlora=True, recompute="full", loss="fused")
    saved = chunked.memory_per_gpu.total_bytes - fused.memory_per_gpu.total_bytes
    # 4sbV = 4 x 8,192 x 128,256 fp32 logits, less the larger of the fused kernel's 8,192 x 4,096 x 2 with a
    # 256-token fp32 chunk and the recomputed layer's tensors, which then decide the peak
    fused_loss = 8192 * 4096 * 2 + 256 * 128256 * 4
    recomputed = training.recompute_working_bytes(load_model("llama-3-8b"), fused.setup)
    gradients = 3 * 8192 * 14336 * 2  # the layer's backward: its gated MLP's three hidden-wide gradients
    assert saved == 4 * 8192 * 128256 - max(fused_loss, recomputed + gradients)


@pytest.mark.parametrize("loss", ["chunked", "full", "compiled", "fused"])
def test_every_loss_mode_prices(loss):
    assert api.train("llama-3-8b", gpu="h100-sxm", seq=2048, loss=loss).memory_per_gpu.total_bytes > 0


def test_unsloth_and_hf_trainer_frameworks_set_what_their_code_does():
    """presets/frameworks: Unsloth's offloaded checkpointing (recompute full, the layers' inputs on the host); the HF
    Trainer's fp32 ForCausalLMLoss and eager norms, no checkpointing unless asked."""
    unsloth = api.train("llama-3-8b", gpu="rtx-4090", seq=4096, lora_rank=16, qlora=True, framework="unsloth")
    hf = api.train("llama-3-8b", gpu="rtx-4090", seq=4096, lora_rank=16, qlora=True, framework="hf-trainer")
    assert (unsloth.setup.recompute, unsloth.setup.offload_activations) == ("full", True)
    assert (hf.setup.loss, hf.setup.recompute, hf.setup.kernels) == ("full", "none", "eager")
    assert unsloth.memory_per_gpu.total_bytes < hf.memory_per_gpu.total_bytes


def test_max_seq_is_the_longest_that_fits():
    """`train --max-seq`: at the answer the run fits, one token more it does not (train's own fit)."""
    options = {"gpu": "rtx-4090", "lora_rank": 16, "qlora": True, "framework": "hf-trainer", "recompute": "full"}
    longest = api.max_train_seq("llama-3.1-8b", **options)
    assert longest.max_seq is not None and 1 < longest.max_seq < 131072
    assert api.train("llama-3.1-8b", seq=longest.max_seq, **options).memory_per_gpu.fits
    assert not api.train("llama-3.1-8b", seq=longest.max_seq + 1, **options).memory_per_gpu.fits
    # the 70B's weights alone outgrow a 24 GB card: nothing fits
    assert api.max_train_seq("llama-3.1-70b", gpu="rtx-4090").max_seq is None


def test_max_seq_from_the_command_line(capsys):
    from tfcost.cli.main import main

    with pytest.raises(SystemExit) as exited:
        main(["train", "llama-3.1-8b", "--gpu", "rtx-4090", "--lora", "16", "--qlora", "--max-seq", "-f", "json"])
    assert exited.value.code == 0
    import json

    assert json.loads(capsys.readouterr().out)["max_seq"] > 0
