"""`tfcost train` and `tfcost serve` as a user runs them: JSON contracts, reports, defaults and bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from test_cli import NO_TORCH_PROBE, one_line_error

from tfcost.readers.presets import load_gpu, load_model
from tfcost.reports.serve import serve
from tfcost.reports.train import train
from tfcost.schema import ServingSetup, TrainingSetup

# The README's example: one sequence per replica per step, spelt out (the default is about 4M tokens a step).
TRAIN_ARGS = ("train", "llama-3-8b", "--gpus", "64", "--gpu", "h100-sxm", "--zero", "1", "--global-batch", "64")
SERVE_ARGS = ("serve", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "32", "--prompt", "2048", "--generate", "512")


def test_train_json_contract(tfcost):
    run = tfcost(*TRAIN_ARGS, "--format", "json")
    assert run.code == 0, run.stderr
    out = json.loads(run.stdout)
    tokens = 20 * 8_030_261_248  # Chinchilla-optimal by default
    assert out["inputs"]["tokens"] == tokens and out["tokens_are_chinchilla_optimal"]
    assert out["inputs"]["seq_len"] == 4096 and out["seq_len_is_default"]
    # 3 x forward of one 4,096-token sequence, times D / T sequences
    assert out["flops"]["total"] == out["inputs"]["training_per_sequence"] * tokens // 4096
    # 6ND, N as Kaplan et al. 2020 count it: the 8,030,261,248 less the token table and head, 2 x 128,256 x 4,096
    assert out["flops"]["six_nd"] == 6 * (8_030_261_248 - 2 * 128_256 * 4_096) * tokens
    # No throughput given: the predicted step time, D / (B x T) steps of it (B = 64 replicas x micro-batch 1)
    assert out["time"]["throughput_from"] == "predicted step time"
    assert out["step"]["steps"] == pytest.approx(tokens / (64 * 4096))
    assert out["time"]["days"] == pytest.approx(out["step"]["steps"] * out["step"]["seconds"]["total"] / 86_400)
    assert out["time"]["model_utilization"] == pytest.approx(
        out["flops"]["total"] / (out["time"]["days"] * 86_400 * 64 * 989.4e12)
    )
    memory = out["memory_per_gpu"]
    assert memory["weights_bytes"] == memory["gradients_bytes"] == 2 * 8_030_261_248
    assert memory["optimizer_bytes"] == -(-12 * 8_030_261_248 // 64)  # ZeRO-1: sharded over 64 replicas
    parts = ("weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes")
    assert memory["total_bytes"] == sum(memory[key] for key in parts) == 55_072_195_328
    assert memory["fits"] is True


def test_train_json_is_the_core_result(tfcost):
    run = tfcost("train", "qwen2.5-7b", "--tokens", "1.4T", "--seq", "2048", "--gpus", "32", "--tp", "4",
                 "--pp", "2", "--zero", "3", "--sequence-parallel", "--recompute", "selective", "--optimizer",
                 "adamw-8bit", "--framework-set", "flash=false", "--price-per-gpu-hour", "2.5", "--mfu", "0.35",
                 "--global-batch", "64", "-f", "json")  # fmt: skip
    assert run.code == 0, run.stderr
    expected = train(
        load_model("qwen2.5-7b"),
        load_gpu("h100-sxm"),
        TrainingSetup(tokens=1_400_000_000_000, seq_len=2048, gpus=32, tp=4, pp=2, zero=3, sequence_parallel=True,
                      recompute="selective", optimizer="adamw-8bit", flash=False, price_per_gpu_hour=2.5, mfu=0.35,
                      global_batch=64),
    )  # fmt: skip
    out = json.loads(run.stdout)
    assert out.pop("tfcost_version")
    # the command adds the framework its conventions came from: none named, flash set by the user
    assert out.pop("framework")["overridden"] == ["flash"]
    out.pop("intervals")  # and the error bars of what it predicted (tests/test_intervals.py)
    assert out == expected.model_dump(mode="json")
    assert out["flops"]["hardware"] > out["flops"]["total"]
    assert out["time"]["cost"] == pytest.approx(out["time"]["gpu_hours"] * 2.5)


def test_nanogpt_notebook_through_the_cli(tfcost):
    # transformer_sizing.ipynb: 300B tokens, 8 x A100 at 30% MFU, 6ND -> "3.46 days", with the notebook's N every
    # parameter (HF GPT-2 small's 124,439,808, with biases, give the same two decimals as its 124,337,664). tfcost's
    # 6N is Kaplan's, N = 85,056,000 without the 38,597,376 + 786,432 of the token and position tables: the same
    # run at the notebook's N is the notebook's figure.
    run = tfcost("train", "gpt2-small", "--tokens", "300B", "--gpus", "8", "--gpu", "a100-80gb", "--mfu", "0.3",
                 "-f", "json")  # fmt: skip
    out = json.loads(run.stdout)
    assert out["flops"]["six_nd"] == 6 * 85_056_000 * 300 * 10**9
    assert round(out["time"]["days_6nd"] * 124_439_808 / 85_056_000, 2) == 3.46


def test_serve_json_contract(tfcost):
    run = tfcost(*SERVE_ARGS, "--format", "json")
    assert run.code == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["memory"]["weights_bytes"] == 2 * 8_030_261_248
    assert out["memory"]["kv_cache_bytes"] == 32 * 2560 * 131_072
    assert out["max_batch"] == 182
    assert out["max_context"] == 14_602
    assert out["latency"]["prefill_ms"] == pytest.approx(1371.72, abs=0.01)
    assert out["latency"]["decode_ms_per_token"] == pytest.approx(8.888, abs=0.001)
    assert (out["latency"]["prefill_bound"], out["latency"]["decode_bound"]) == ("compute-bound", "memory-bound")


def test_serve_json_is_the_core_result(tfcost):
    run = tfcost("serve", "llama-3.1-70b", "--gpu", "h200", "--gpus", "4", "--weights-dtype", "int4", "--kv-dtype",
                 "fp8", "--batch", "16", "--prompt", "8000", "--generate", "1000", "--reserve", "0.2",
                 "--compute-efficiency", "0.5", "--memory-efficiency", "0.8", "-f", "json")  # fmt: skip
    assert run.code == 0, run.stderr
    expected = serve(
        load_model("llama-3.1-70b"),
        load_gpu("h200"),
        ServingSetup(gpus=4, weights_dtype="int4", kv_dtype="fp8", batch=16, prompt=8000, generate=1000,
                     reserve=0.2, compute_efficiency=0.5, memory_efficiency=0.8),
    )  # fmt: skip
    out = json.loads(run.stdout)
    assert out.pop("tfcost_version")
    assert out.pop("framework")["name"] is None  # the command adds the conventions it assumed: tfcost's defaults
    out.pop("intervals")  # and the error bars of what it predicted (tests/test_intervals.py)
    assert out == expected.model_dump(mode="json")


def test_reports_are_readable_tables(tfcost):
    run = tfcost(*TRAIN_ARGS, env={"COLUMNS": "200"})  # wide enough for the exact column
    assert run.code == 0, run.stderr
    for text in ("Chinchilla-optimal: 20 per parameter, the default", "predicted step time", "55,072,195,328",
                 "64 GPUs = 64 data-parallel x tp 1 x pp 1; ZeRO-1; adamw, bf16-mixed",
                 "3.12 days", "fits: total + context + reserve", "[/ N_d at ZeRO-1+]"):  # fmt: skip
        assert text in run.stdout, text
    run = tfcost(*SERVE_ARGS, env={"COLUMNS": "200"})
    assert run.code == 0, run.stderr
    for text in ("16,060,522,496", "10.00 GiB", "182", "14,602", "compute-bound", "memory-bound", "8.89 ms",
                 "reserve 10%"):  # fmt: skip
        assert text in run.stdout, text


def test_bad_input_gets_one_line(tfcost):
    assert "--gpus" in one_line_error(tfcost("train", "llama-3-8b", "--gpus", "0"), 2)
    assert "--gpus" in one_line_error(tfcost("serve", "llama-3-8b", "--gpus", "0"), 2)
    assert "--zero" in one_line_error(tfcost("train", "llama-3-8b", "--zero", "4"), 2)
    assert "must divide the query heads (32)" in one_line_error(
        tfcost("train", "llama-3-8b", "--tp", "3", "--gpus", "3"), 2
    )
    assert "key-value heads (8)" in one_line_error(tfcost("train", "llama-3-8b", "--tp", "16", "--gpus", "16"), 2)
    assert "not a multiple of tp x pp" in one_line_error(tfcost("train", "llama-3-8b", "--gpus", "6", "--tp", "4"), 2)
    assert "32 layers" in one_line_error(tfcost("train", "llama-3-8b", "--pp", "5", "--gpus", "5"), 2)
    assert "--mfu" in one_line_error(tfcost("train", "llama-3-8b", "--mfu", "0"), 2)
    assert "--tokens" in one_line_error(tfcost("train", "llama-3-8b", "--tokens", "lots"), 2)
    assert "did you mean h100-sxm" in one_line_error(tfcost("train", "llama-3-8b", "--gpu", "h100-sxn"), 1)
    assert "did you mean h100-sxm" in one_line_error(tfcost("serve", "llama-3-8b", "--gpu", "h100-smx"), 1)
    assert "no verified fp32 peak" in one_line_error(
        tfcost("train", "gpt2-small", "--precision", "fp32", "--gpu", "b200"), 1
    )
    assert "32 query heads" in one_line_error(tfcost("serve", "llama-3-8b", "--gpus", "3"), 2)
    assert "--reserve" in one_line_error(tfcost("serve", "llama-3-8b", "--reserve", "1"), 2)
    assert "--weights-dtype" in one_line_error(tfcost("serve", "llama-3-8b", "--weights-dtype", "int3"), 2)
    assert "did you mean" in one_line_error(tfcost("serve", "lama-3-8b"), 1)


@pytest.mark.parametrize("args", [TRAIN_ARGS, SERVE_ARGS])
def test_train_and_serve_never_import_torch(args):
    done = subprocess.run([sys.executable, "-c", NO_TORCH_PROBE, *args], capture_output=True, text=True, check=False)
    assert done.stdout.strip().splitlines()[-1] == "TORCH-CLEAN", done.stderr


@pytest.mark.parametrize("args", [TRAIN_ARGS, SERVE_ARGS])
def test_docs_show_the_real_reports(tfcost, args):
    # docs/training.md's and docs/serving.md's examples are what the commands print at 120 columns, so they cannot
    # drift.
    from pathlib import Path

    page = {"train": "training.md", "serve": "serving.md"}[args[0]]
    text = (Path(__file__).parent.parent / "docs" / page).read_text(encoding="utf-8")
    printed = "\n".join(line.rstrip() for line in tfcost(*args).stdout.strip().splitlines())
    assert printed in text
    assert f"`tfcost {' '.join(args)}`" in text


@pytest.mark.parametrize("throughput", [(), ("--mfu", "0.5"), ("--hfu", "0.5")])
def test_explain_changes_no_number_of_the_report(throughput):
    """--explain adds the working and nothing else: with a predicted step time (no throughput given) it once put the
    assumed MFU 0.4 in place of the predicted step's utilization."""
    gpu, setup = load_gpu("h100-sxm"), TrainingSetup(tokens=10**12, seq_len=4096, gpus=8)
    if throughput:
        setup = setup.model_copy(update={throughput[0].removeprefix("--"): float(throughput[1])})
    plain = train(load_model("llama-3-8b"), gpu, setup)
    explained = train(load_model("llama-3-8b"), gpu, setup, explained=True)
    assert explained.explain
    assert explained.model_copy(update={"explain": None}) == plain
