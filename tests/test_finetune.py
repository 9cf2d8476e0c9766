"""LoRA and QLoRA: adapters, the frozen base's storage and the compute, against the published figures."""

from __future__ import annotations

import json

import pytest
from test_cli import one_line_error

from tfcost.core import flops, params
from tfcost.costs import finetune
from tfcost.readers.presets import load_model
from tfcost.schema import ModelShape


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


# QLoRA (Dettmers et al. 2023, arXiv:2305.14314) §2, on LLaMA 7B (the shape of Llama-2-7B: 32 layers of 4,096,
# 11,008-wide gated MLP, 32,000-token vocabulary): "the LoRA input gradients have a memory footprint of 567 MB
# while the LoRA parameters take up only 26 MB. [...] In comparison, the 4-bit base model consumes 5,048 MB of
# memory." 26 MB is 0.2% of the weights at 2 bytes in MiB (25.7), so the paper's MB are MiB.
QLORA_PAPER_BASE_MIB = 5048
# The setup: artidoro/qlora's scripts/finetune_llama2_guanaco_7b.sh: NF4 with double quantisation, bf16, LoRA r = 64
# on every linear layer but the head, paged_adamw_32bit (qlora.py's default), gradient checkpointing, batch 1,
# 16 + 512 tokens.
QLORA_SETUP = ("train", "llama-2-7b", "--gpu", "a100-80gb", "--lora", "64", "--lora-targets",
               "q,k,v,o,gate,up,down", "--qlora", "--seq", "528", "--recompute", "full", "--optimizer", "paged-adamw",
               "--tokens", "8448")  # fmt: skip


def test_qlora_paper_7b_base_is_below_the_published_footprint(tfcost):
    # Like with like: the frozen base alone (tfcost's weights less the adapters' own 2 bytes a parameter) against the
    # paper's "4-bit base model". NF4 at 4.127 bits for the linear layers and bf16 embeddings and head give
    # 3,686 MiB: 0.730 of the published 5,048 MiB, outside 10%. No accounting of the stored tensors reaches it
    # (fp32 embeddings would add 1,000 MiB, the CUDA context is not a tensor): the figure looks measured on a GPU
    # and its extra 1.33 GiB is not explained in the paper (artidoro/qlora#269 asks the same, unanswered), so
    # tfcost does not fit a term to it. The ratio is pinned: a change to the NF4 accounting shows up here.
    run = tfcost(*QLORA_SETUP, "-f", "json")
    assert run.code == 0, run.stderr
    out = json.loads(run.stdout)
    adapters = out["inputs"]["trainable_parameters"]
    base = out["memory_per_gpu"]["weights_bytes"] - 2 * adapters
    assert base == finetune.frozen_base_bytes(load_model("llama-2-7b"), qlora=True)
    assert base / 2**20 / QLORA_PAPER_BASE_MIB == pytest.approx(0.730, abs=0.001)


def llama_65b():
    # LLaMA 65B (Touvron et al. 2023, Table 2: 65.2B parameters, d 8,192, 64 heads, 80 layers; intermediate_size
    # 22,016 in the facebook/llama-65b config), the Llama-2-7B preset's layout otherwise (same family, vocabulary).
    base = load_model("llama-2-7b").model_dump()
    return ModelShape(**{**base, "name": "llama-65b", "d_model": 8192, "n_heads": 64, "n_kv_heads": 64,
                         "n_layers": 80, "d_ff": 22016})  # fmt: skip


def test_qlora_paper_double_quantisation_saves_3_gb_on_65b():
    # QLoRA §1: double quantisation saves "an average of about 0.37 bits per parameter (approximately 3 GB for a
    # 65B model)".
    llama = llama_65b()
    assert params.total_params(llama) / 1e9 == pytest.approx(65.2, abs=0.1)
    saved_bits = finetune.nf4_bits_per_weight(double_quant=False) - finetune.nf4_bits_per_weight()
    assert saved_bits == pytest.approx(0.37, abs=0.005)
    saved_bytes = finetune.quantised_linear_params(llama) * saved_bits / 8
    assert saved_bytes / 3e9 == pytest.approx(1.007, abs=0.001)  # 3.02 GB


def test_lora_targets_are_found_in_the_rows_of_an_moe_and_an_mla_model():
    # Mixtral-8x7B (config.json: d 4096, 8 key-value heads of 128, 8 experts of d_ff 14336, 32 layers): q,k,v,o at
    # r = 16 adapt q_proj and o_proj (4096 x 4096) and k_proj, v_proj (4096 x 1024); "experts" adds one adapter
    # to each expert's w1, w3 (4096 -> 14336) and w2 (14336 -> 4096).
    mixtral = load_model("mixtral-8x7b")
    attention = 2 * 16 * (4096 + 4096) + 2 * 16 * (4096 + 1024)
    experts = 8 * 3 * 16 * (4096 + 14336)
    assert finetune.lora_params(mixtral, 16, ("q", "k", "v", "o")) == 32 * attention
    assert finetune.lora_params(mixtral, 16, ("q_proj", "k_proj", "v_proj", "o_proj", "experts")) == 32 * (
        attention + experts
    )
    # DeepSeek-V3 (config.json: d 7168, q_lora_rank 1536, kv_lora_rank 512, qk_rope 64, 128 heads of qk 192 and v 128,
    # 61 layers): MLA's q_a_proj 7168 -> 1536, q_b_proj 1536 -> 128 x 192, kv_a_proj_with_mqa 7168 -> 576,
    # kv_b_proj 512 -> 128 x 256, o_proj 128 x 128 -> 7168. The roles q,k,v,o cover all five.
    deepseek = load_model("deepseek-v3")
    mla = (7168 + 1536) + (1536 + 128 * 192) + (7168 + 576) + (512 + 128 * 256) + (128 * 128 + 7168)
    assert finetune.lora_params(deepseek, 8, ("q", "k", "v", "o")) == 61 * 8 * mla
    names = ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj")
    assert finetune.lora_params(deepseek, 8, names) == 61 * 8 * mla


@pytest.mark.parametrize("name", ["mixtral-8x7b", "deepseek-v3"])
@pytest.mark.parametrize("qlora", [(), ("--qlora",)])
def test_lora_and_qlora_price_moe_and_mla_presets(tfcost, name, qlora):
    run = tfcost("train", name, "--lora", "16", *qlora, "--lora-targets", "q,k,v,o,experts", "--gpus", "64",
                 "--zero", "3", "--tokens", "1e9", "-f", "json")  # fmt: skip
    assert run.code == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["inputs"]["trainable_parameters"] == finetune.lora_params(
        load_model(name), 16, ("q", "k", "v", "o", "experts")
    )
    assert out["time"]["days"] > 0


def test_lora_under_zero3_shards_the_frozen_base(tfcost):
    # FSDP / ZeRO-3 shards every parameter, the frozen base too: Llama-3.1-70B's bf16 base (2 x 70.55 B bytes) on 8
    # GPUs is 1/8 per GPU. Before: divided by tp x pp only, 133 GiB of weights per GPU.
    run = tfcost("train", "llama-3.1-70b", "--lora", "16", "--zero", "3", "--gpus", "8", "-f", "json")
    assert run.code == 0, run.stderr
    weights = json.loads(run.stdout)["memory_per_gpu"]["weights_bytes"]
    base = finetune.frozen_base_bytes(load_model("llama-3.1-70b"), qlora=False)
    assert base == 2 * params.total_params(load_model("llama-3.1-70b"))
    root = 2 * (2 * 128_256 * 8192 + 8192)  # FSDP's root unit (embedding, head, final norm) gathered, in bf16
    assert base / 8 + root < weights < base / 8 * 1.2 + root  # plus the adapters and the gathered layers ZeRO-3 holds
    unsharded = tfcost("train", "llama-3.1-70b", "--lora", "16", "--zero", "2", "--gpus", "8", "-f", "json")
    assert json.loads(unsharded.stdout)["memory_per_gpu"]["weights_bytes"] > base


def test_lora_bad_targets_name_the_models_modules(tfcost):
    message = one_line_error(tfcost("train", "mixtral-8x7b", "--lora", "8", "--lora-targets", "q,gate_proj"), 2)
    assert "gate_proj" in message and "experts" in message
