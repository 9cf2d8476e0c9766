"""Achieved fractions by precision (tfcost.costs.efficiency, issue 22): FP8 matmuls well short of 2x, attention
kept in BF16 unless --fp8-attention."""

from __future__ import annotations

import json

import pytest

from tfcost.cli.main import main

TRAIN = ["train", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "256", "--tp", "8", "-T", "8192", "--zero", "3"]
SERVE = ["serve", "llama-3.1-8b", "--gpu", "h100-sxm", "-B", "8", "-P", "8192", "-G", "1"]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    with pytest.raises(SystemExit) as done:  # typer exits 0 after a command
        main([*argv, "--format", "json"])
    assert not done.value.code
    return json.loads(capsys.readouterr().out)


def test_fp8_matmuls_gain_less_than_published_end_to_end_and_attention_stays_bf16(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bf16 = run([*TRAIN, "--precision", "bf16-mixed"], capsys)["step"]["seconds"]
    fp8 = run([*TRAIN, "--precision", "fp8"], capsys)["step"]["seconds"]
    fp8_attention = run([*TRAIN, "--precision", "fp8", "--framework-set", "fp8_attention=true"], capsys)["step"][
        "seconds"
    ]
    # FP8 GEMMs reach 0.59-0.74 of the FP8 peak at K = 2048-4096 (tilelang, H800) before the casts; torchao's best
    # end-to-end float8 gain on Llama 3.1 70B/405B under FSDP is 1.51x (1.34x the least): the step gains more than 1x
    # and less than that, the matmuls alone more than 1x and under the peaks' 2x (ZeRO-3's BF16 GEMMs at their fitted
    # share of MAMF, costs/efficiency.py: 1.55x here, 1.20x end to end).
    assert 1.1 < bf16["total"] / fp8["total"] < 1.51
    assert 1.1 < bf16["matmuls"] / fp8["matmuls"] < 2
    assert fp8["attention"] == bf16["attention"]  # Transformer Engine and torchao keep attention in BF16
    assert fp8_attention["attention"] == pytest.approx(bf16["attention"] * 989.4 / 1978.9)  # H100 BF16/FP8 peaks


def test_a_flashattention_1_class_kernel_takes_twice_fa2s_attention_time(capsys: pytest.CaptureFixture[str]) -> None:
    # "FlashAttention-2 is around 2x faster than FlashAttention" (Dao 2023, §4.1): llm-foundry's Triton kernel
    # (attn_impl: triton) is FlashAttention-1-class. Only attention moves: the matmuls and the rest are the same.
    mpt = ["train", "validation/models/mpt-1b.yaml", "--gpu", "a100-80gb", "--gpus", "8", "-T", "2048", "-b", "14",
           "--global-batch", "112"]  # fmt: skip
    fa2 = run(mpt, capsys)["step"]["seconds"]
    fa1 = run([*mpt, "--framework-set", "flash_kernel=fa1"], capsys)["step"]["seconds"]
    assert fa1["attention"] == pytest.approx(2 * fa2["attention"], rel=1e-12)
    assert fa1["matmuls"] == fa2["matmuls"] and fa1["memory_bound"] == fa2["memory_bound"]
    # FA2 on A100: 0.73 of the 312 TFLOP/s peak, backward 2.5 x forward; FA1 half the rate. Fused attention is priced
    # over the T(T+1)/2 entries a causal mask keeps: QK^T and AV, 2 x 2 x T(T+1)/2 x d a layer and sequence;
    # d = 2048, T = 2048, 24 layers, b = 14 per GPU, one micro-batch; skipping the masked blocks gains "around
    # 1.7-1.8x" (Dao 2023 §3.1), so the kept FLOPs run at 1.75 / 2 of the dense rate.
    flops = 2 * 2 * (2048 * 2049 // 2) * 2048 * 24 * 14
    assert fa1["attention"] == pytest.approx(3.5 * flops / (312e12 * 0.73 / 2 * 1.75 / 2), rel=1e-9)
    with pytest.raises(SystemExit):
        main([*mpt, "--framework-set", "flash_kernel=fa1"])  # the table says which kernel it priced
    assert "flash attention (FlashAttention-1 class);" in capsys.readouterr().out


def test_serving_fp8_prefill_prices_attention_at_the_bf16_peak(capsys: pytest.CaptureFixture[str]) -> None:
    bf16 = run(SERVE, capsys)["expected"]
    fp8 = run([*SERVE, "--weights-dtype", "fp8"], capsys)["expected"]
    fp8_attention = run([*SERVE, "--weights-dtype", "fp8", "--framework-set", "fp8_attention=true"], capsys)["expected"]
    assert fp8_attention["prefill_ms"] < fp8["prefill_ms"] < bf16["prefill_ms"]
    assert "attention" in fp8["sources"] and "attention" not in fp8_attention["sources"]
    # The matmuls: 0.5 of the FP8 peak (0.7 x 1.43 of the BF16 one): a compute-bound prefill gains under 1.43x.
    assert 1.0 < bf16["prefill_ms"] / fp8["prefill_ms"] < 0.5 * 1978.9 / (0.7 * 989.4)


def test_vllm_budgets_from_the_memory_the_driver_reports(capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM's log on an H100 80GB: total_gpu_memory (79.22GiB) x gpu_memory_utilization (vllm#12126): the expected
    KV capacity comes from that, the roofline's from the 80 GiB as sold."""
    from tfcost.costs.engine_memory import reported_memory_bytes
    from tfcost.readers.presets import load_gpu

    assert reported_memory_bytes(load_gpu("h100-sxm")) == round(79.22 * 2**30)
    assert reported_memory_bytes(load_gpu("a100-80gb")) == round(79.15 * 2**30)  # vLLM: "total_gpu_memory (79.15GiB)"
    assert reported_memory_bytes(load_gpu("a100-40gb")) == 40 * 2**30  # no reported figure: as sold
    report = run(["serve", "llama-3.1-8b", "--gpu", "h100-sxm", "-P", "4096", "-G", "1"], capsys)
    assert report["inputs"]["usable_bytes_per_gpu"] == int(80 * 2**30 * 0.9)
    kv_token = report["memory"]["kv_cache_bytes_per_token"]
    fixed = report["memory"]["weights_bytes_per_gpu"] + report["expected"]["cuda_context_bytes"]
    room = int(79.22 * 2**30 * 0.9) - fixed - report["expected"]["workspace_bytes"]
    assert report["expected"]["max_kv_tokens"] == room // (16 * kv_token) * 16


def test_eager_norms_keep_an_fp32_copy_of_their_input(capsys: pytest.CaptureFixture[str]) -> None:
    """transformers' LlamaRMSNorm upcasts to fp32 and keeps it for the backward, besides the 16-bit normalized
    tensor: 4 more bytes per element per norm, 8d per token for Llama's two; nothing under full recomputation."""
    lora = [
        "train",
        "llama-2-7b",
        "--gpu",
        "a100-40gb",
        "-T",
        "1304",
        "-b",
        "1",
        "--lora",
        "8",
        "--lora-targets",
        "q,v",
    ]
    fused = run(lora, capsys)["memory_per_gpu"]
    eager = run([*lora, "--framework-set", "kernels=eager"], capsys)["memory_per_gpu"]
    assert eager["activations_bytes"] - fused["activations_bytes"] == 32 * 1304 * 8 * 4096
    assert eager["total_bytes"] - fused["total_bytes"] == 32 * 1304 * 8 * 4096
    # Korthikanti's fold keeps 34d per token and layer with flash attention and dropout (34 + 5as/h less the
    # scores): eager norms add 8d, a quarter of the fold without its 2 dropout masks.
    layers = fused["activations_bytes"] - fused["logits_bytes"]
    assert 1.2 < (layers + 32 * 1304 * 8 * 4096) / layers < 1.3
    full = [*lora, "--recompute", "full"]
    assert (
        run([*full, "--framework-set", "kernels=eager"], capsys)["memory_per_gpu"]
        == run(full, capsys)["memory_per_gpu"]
    )
