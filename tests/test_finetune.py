"""LoRA and QLoRA: adapters, the frozen base's storage and the compute, against the published figures."""

from __future__ import annotations

import json

import pytest
from test_cli import one_line_error

from tfcost import finetune, flops, params
from tfcost.presets import load_model


def test_peft_llama2_7b_r8_on_q_and_v():
    # PEFT's print_trainable_parameters for Llama-2-7B, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]):
    # "trainable params: 4,194,304 || all params: 6,742,609,920" (the base's 6,738,415,616 plus the adapters).
    llama = load_model("llama-2-7b")
    adapters = finetune.lora_params(llama, 8, ("q", "v"))
    assert adapters == 4_194_304
    assert params.total_params(llama) + adapters == 6_742_609_920


def test_qlora_double_quantisation_constants():
    # QLoRA §3: double quantisation cuts the constants from 32/64 = 0.5 to 8/64 + 32/(64*256) = 0.127 bits.
    assert finetune.nf4_bits_per_weight(double_quant=False) == 4.5
    assert finetune.nf4_bits_per_weight() - 4 == pytest.approx(0.127, abs=5e-4)


def test_qlora_base_is_nf4_linear_layers_and_bf16_embeddings():
    llama = load_model("llama-2-7b")
    linear = params.total_params(llama) - params.embedding_params(llama)
    expected = linear * (4 + 8 / 64 + 32 / (64 * 256)) / 8 + 2 * params.embedding_params(llama)
    assert finetune.frozen_base_bytes(llama, qlora=True) == pytest.approx(expected, abs=1)
    assert finetune.frozen_base_bytes(llama, qlora=False) == 2 * 6_738_415_616


def test_lora_flops_are_4n_plus_the_adapters():
    # Forward 2N, backward through the frozen base for activation gradients 2N, no weight gradients; 6 per adapter
    # parameter per token.
    llama = load_model("llama-2-7b")
    fwd = flops.forward_flops(llama, 2048)
    assert finetune.lora_training_flops(llama, 2048, 4096, 1000) == 2 * 2 * fwd + 6 * 1000 * 4096


def test_lora_through_the_cli(tfcost):
    run = tfcost("train", "llama-2-7b", "--gpu", "a100-80gb", "--lora", "64", "--lora-targets", "q,k,v,o,gate,up,down",
                 "--qlora", "--seq", "512", "--recompute", "full", "--optimizer", "paged-adamw", "--tokens", "512",
                 "-f", "json")  # fmt: skip
    assert run.code == 0, run.stderr
    out = json.loads(run.stdout)
    adapters = 32 * 64 * (4 * (4096 + 4096) + 3 * (4096 + 11008))  # QLoRA's setting: r = 64 on every linear layer
    assert out["inputs"]["trainable_parameters"] == adapters
    memory = out["memory_per_gpu"]
    base = finetune.frozen_base_bytes(load_model("llama-2-7b"), qlora=True)
    assert memory["weights_bytes"] == base + 2 * adapters and memory["gradients_bytes"] == 2 * adapters
    assert memory["optimizer_bytes"] == 0 and memory["host_bytes"] == 12 * adapters  # paged: master + 2 moments


def test_lora_bad_targets(tfcost):
    assert "gate" in one_line_error(tfcost("train", "gpt2-small", "--lora", "8", "--lora-targets", "q,gate"), 2)
    assert "qlora needs a lora rank" in one_line_error(tfcost("train", "gpt2-small", "--qlora"), 2)
