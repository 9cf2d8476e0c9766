"""`tfcost measure` on the CPU, with the real torch: the JSON contract, the core's numbers beside the timings,
backends torch refuses, out-of-memory, and the one-line error when torch is missing.

Shapes are small and repetitions few: CI has two cores. Timing values are only checked for sanity (positive,
ordered quantiles), never against a speed.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import subprocess
import sys

import pytest

from tfcost.core.flops import attention_forward_flops
from tfcost.core.memory import attention_io_bytes, attention_peak_memory_bytes, attention_scores_bytes
from tfcost.schema import AttentionShape

torch = pytest.importorskip("torch", reason="measure needs torch: pip install 'tfcost[measure]' (CI pins 2.13.0)")
measure = pytest.importorskip("tfcost.measure.kernels")

CONTRACT = ["seq", "batch", "heads", "kv_heads", "head_dim", "dtype", "causal", "direction", "backend", "status",
            "median_ms", "p10_ms", "p90_ms", "flops", "tflops_per_s", "peak_fraction", "roofline_ms",
            "peak_memory_bytes"]  # fmt: skip


@contextlib.contextmanager
def no_progress(total: int):
    yield lambda label: None


def sweep(**options):
    """measure.run in this process, on the CPU, with small defaults."""
    settings = {"model": None, "shape": AttentionShape(heads=4, kv_heads=4, head_dim=16), "seqs": [64],
                "batch": 1, "dtype": "fp32", "causal": False, "backward": False, "backends": ["math"],
                "device": "cpu", "repeats": 3, "gpu": None, "progress": no_progress}  # fmt: skip
    return measure.run(**{**settings, **options})


@pytest.fixture(scope="module")
def gpt2_json(tfcost):
    """The issue's command, run once for the module."""
    run = tfcost("measure", "gpt2-small", "--seq", "128,256", "--device", "cpu", "--no-causal", "--format", "json")
    assert run.code == 0, run.stderr
    return json.loads(run.stdout)


def test_json_contract_for_gpt2_small(gpt2_json):
    out = gpt2_json
    assert (out["device"], out["gpu"], out["torch_version"]) == ("cpu", None, torch.__version__)
    assert "2.5x forward" in out["flop_convention"] and "perf_counter" in out["timing"]
    rows = out["measurements"]
    assert [row["seq"] for row in rows] == [128, 256]
    for row in rows:
        assert set(CONTRACT) <= set(row)
        t = row["seq"]
        assert (row["batch"], row["heads"], row["kv_heads"], row["head_dim"]) == (1, 12, 12, 64)
        assert (row["dtype"], row["causal"], row["direction"], row["backend"]) == ("bf16", False, "forward", "auto")
        assert (row["status"], row["reason"], row["repeats"]) == ("ok", None, 10)
        assert row["backend_ran"] == "flash"  # torch's CPU flash kernel is auto's pick for this shape
        assert 0 < row["p10_ms"] <= row["median_ms"] <= row["p90_ms"]
        assert row["flops"] == attention_forward_flops(1, 12, t, 64, False) == 4 * 12 * t * t * 64
        assert row["tflops_per_s"] == pytest.approx(row["flops"] / (row["median_ms"] / 1e3) / 1e12)
        assert row["bytes_moved"] == attention_io_bytes(1, 12, 12, t, 64, "bf16", backward=False) == 4 * 12 * t * 64 * 2
        assert row["bandwidth_gb_per_s"] == pytest.approx(row["bytes_moved"] / (row["median_ms"] / 1e3) / 1e9)
        # No spec for a CPU: no peak fraction, no roofline.
        assert (row["peak_fraction"], row["roofline_ms"], row["roofline_ratio"], row["compute_bound"]) == (None,) * 4
        assert row["peak_memory_bytes"] > 0
        assert row["peak_memory_estimate_bytes"] == attention_peak_memory_bytes(1, 12, 12, t, 64, "bf16", False, False)


def test_math_backend_flops_equal_the_core_and_memory_is_quadratic():
    """What torch promises, on any CPU and thread count: the math backend materialises the B*H*T^2 scores, so its
    peak is at least the score matrix and grows by at least the score matrix's growth; the fused flash kernel does
    not materialise them, so its peak grows slower than T^2 across two sizes. Its absolute workspace (per-thread
    blocks whose size depends on the CPU and the thread count: 694,784 B at T=128 on a 2-core machine, above the
    393,216 B of scores) is never asserted."""
    shape = AttentionShape(heads=12, kv_heads=12, head_dim=64)
    short, long = 128, 512
    report = sweep(shape=shape, seqs=[short, long], dtype="bf16", causal=True, backends=["math", "flash"])
    rows = {(row.backend, row.seq): row for row in report.measurements}
    for t in (short, long):
        math = rows["math", t]
        assert (math.status, math.backend_ran) == ("ok", "math")
        assert rows["flash", t].status == "ok"
        assert math.flops == attention_forward_flops(1, 12, t, 64, True) == 4 * 12 * (t * (t + 1) // 2) * 64
        assert math.tflops_per_s > 0 and 0 < math.p10_ms <= math.median_ms <= math.p90_ms
        assert math.peak_memory_bytes >= attention_scores_bytes(1, 12, t, "bf16")
        assert math.peak_memory_estimate_bytes > rows["flash", t].peak_memory_estimate_bytes
    scores_growth = attention_scores_bytes(1, 12, long, "bf16") - attention_scores_bytes(1, 12, short, "bf16")
    math_short, math_long = rows["math", short].peak_memory_bytes, rows["math", long].peak_memory_bytes
    assert math_long - math_short >= scores_growth
    flash_short, flash_long = rows["flash", short].peak_memory_bytes, rows["flash", long].peak_memory_bytes
    assert 0 < flash_short and flash_long < flash_short * (long / short) ** 2


def test_backends_torch_refuses_are_rows():
    report = sweep(backends=measure.BACKEND_CHOICES, backward=True)
    rows = {(row.backend, row.direction): row for row in report.measurements}
    assert len(rows) == 10
    for backend in ("efficient", "cudnn"):  # CUDA-only kernels
        for direction in ("forward", "forward+backward"):
            row = rows[backend, direction]
            assert (row.status, row.median_ms, row.tflops_per_s, row.backend_ran) == ("unsupported", None, None, None)
            assert "No viable backend" in row.reason
    for backend in ("auto", "flash", "math"):
        forward, both = rows[backend, "forward"], rows[backend, "forward+backward"]
        assert forward.status == both.status == "ok"
        assert 2 * both.flops == 7 * forward.flops  # forward + 2.5x forward
        assert both.bytes_moved == 2 * forward.bytes_moved


def test_gqa_counts_flops_by_query_heads_and_bytes_by_kv_heads():
    shape = AttentionShape(heads=8, kv_heads=2, head_dim=16)
    report = sweep(shape=shape, seqs=[32], backends=["math", "flash"])
    for row in report.measurements:
        assert (row.status, row.heads, row.kv_heads) == ("ok", 8, 2)
        assert row.flops == 4 * 8 * 32 * 32 * 16
        assert row.bytes_moved == (2 * 8 + 2 * 2) * 32 * 16 * 4


def test_out_of_memory_at_one_size_and_the_sweep_goes_on(monkeypatch):
    real_step = measure.attention_step

    def step(q, k, v, causal, backward):
        if q.shape[2] == 64:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 32.00 GiB")
        return real_step(q, k, v, causal, backward)

    real_inputs = measure.make_inputs

    def inputs(shape, batch, seq, *rest):
        if seq == 96:
            raise RuntimeError(  # what torch 2.13 says when a CPU allocation fails
                "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you "
                "tried to allocate 70368744177664 bytes. Error code 12 (Cannot allocate memory)"
            )
        return real_inputs(shape, batch, seq, *rest)

    monkeypatch.setattr(measure, "attention_step", step)
    monkeypatch.setattr(measure, "make_inputs", inputs)
    report = sweep(seqs=[32, 64, 96, 128])
    status = {row.seq: row.status for row in report.measurements}
    assert status == {32: "ok", 64: "oom", 96: "oom", 128: "ok"}
    oom = next(row for row in report.measurements if row.seq == 64)
    assert "out of memory" in oom.reason and oom.median_ms is None and oom.flops == 4 * 4 * 64 * 64 * 16
    assert "inputs: [enforce fail" in next(row.reason for row in report.measurements if row.seq == 96)


def test_gpu_recognition_and_its_notes():
    notes: list[str] = []
    assert measure.pick_gpu("cuda", "NVIDIA H200", None, "bf16", notes).name == "h200"
    assert measure.pick_gpu("cuda", "NVIDIA H200", "h100-sxm", "bf16", notes).name == "h100-sxm"
    assert notes == []
    assert measure.pick_gpu("cuda", "NVIDIA GeForce GTX 1080", None, "bf16", notes) is None
    assert "not in the spec table" in notes[-1] and "peak fraction" in notes[-1]
    assert measure.pick_gpu("cuda", "NVIDIA B200", None, "fp32", notes).name == "b200"
    assert "no verified fp32 peak" in notes[-1]
    assert measure.pick_gpu("cpu", "CPU", "h100-sxm", "bf16", notes) is None
    assert "ignored" in notes[-2]
    from tfcost.errors import TfcostError

    with pytest.raises(TfcostError, match="unknown GPU 'h100-sxn'"):
        measure.pick_gpu("cuda", "NVIDIA H100", "h100-sxn", "bf16", notes)


def test_csv_and_table(tfcost):
    run = tfcost("measure", "--heads", "4", "--kv-heads", "2", "--head-dim", "16", "--seq", "32,64", "--repeats",
                 "2", "--backend", "all", "--device", "cpu", "--format", "csv")  # fmt: skip
    assert run.code == 0, run.stderr
    rows = list(csv.DictReader(io.StringIO(run.stdout)))
    assert len(rows) == 10 and set(CONTRACT) <= set(rows[0])
    assert {row["device"] for row in rows} == {"cpu"} and rows[0]["gpu"] == "" and rows[0]["causal"] == "false"
    assert {row["backend"]: row["status"] for row in rows if row["seq"] == "64"} == {
        "auto": "ok", "flash": "ok", "efficient": "unsupported", "cudnn": "unsupported", "math": "ok"
    }  # fmt: skip
    assert int(rows[0]["flops"]) == 4 * 4 * 32 * 32 * 16 and float(rows[0]["median_ms"]) > 0

    table = tfcost("measure", "gpt2-small", "--seq", "64", "--repeats", "2", "--backend", "all", "--causal")
    assert table.code == 0, table.stderr
    text = table.stdout
    assert "gpt2-small: B=1, H=12 (kv 12), Q=64, bf16, causal" in text
    assert "auto>flash" in text and "unsupported" in text and "No viable backend" in text
    assert "2.5x forward" in text and "T(T+1)/2" in text and "perf_counter" in text
    if not torch.cuda.is_available():
        assert "no CUDA GPU found: measured on the CPU" in text


def one_line_error(run, code: int) -> str:
    assert run.code == code, (run.code, run.stdout, run.stderr)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tfcost: error: ") and "Traceback" not in run.stderr
    return lines[0]


def test_bad_measure_input(tfcost):
    assert "--heads" in one_line_error(tfcost("measure"), 2)
    assert "--seq" in one_line_error(tfcost("measure", "gpt2-small", "--seq", "128,x"), 2)
    assert "must divide heads" in one_line_error(tfcost("measure", "--heads", "12", "--kv-heads", "5",
                                                        "--head-dim", "64"), 2)  # fmt: skip
    assert "--dtype" in one_line_error(tfcost("measure", "gpt2-small", "--dtype", "fp8"), 2)
    assert "unknown preset" in one_line_error(tfcost("measure", "gpt2-smal"), 1)
    if not torch.cuda.is_available():
        assert "sees no CUDA GPU" in one_line_error(tfcost("measure", "gpt2-small", "--device", "cuda"), 1)


NO_TORCH = """
import runpy, sys
class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "torch":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, NoTorch())
sys.argv = ["tfcost", *sys.argv[1:]]
runpy.run_module("tfcost", run_name="__main__")
"""


def test_torch_missing_is_one_line_naming_the_extra():
    done = subprocess.run([sys.executable, "-c", NO_TORCH, "measure", "gpt2-small", "--device", "cpu"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines() == [
        "tfcost: error: measure needs torch, which is not installed: pip install 'tfcost[measure]'"
    ]


def test_gpu_benchmark_script_runs_its_plumbing_on_the_cpu(tmp_path):
    # benchmarks/measure_gpu.py is what a session with a GPU runs in one go: keep it working without one.
    script = [sys.executable, "benchmarks/measure_gpu.py"]
    assert subprocess.run([*script, "--help"], capture_output=True, check=False).returncode == 0
    done = subprocess.run([*script, "--device", "cpu", "--model", "gpt2-small", "--seq", "32", "--repeats", "2",
                           "--dtype", "fp32", "--step-models", "tests/data/tiny-llama.yaml", "--out", str(tmp_path)],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "roofline: CPU" in done.stdout and "tiny-llama.yaml decode: measured" in done.stdout
    assert "do_bench not run: no CUDA device" in done.stdout and "FlashAttention-3" in done.stdout
    saved = json.loads((tmp_path / "measure_gpu.json").read_text())
    assert {row["backend"] for row in saved["compared"]} == set(measure.BACKEND_CHOICES)
    assert saved["tfcost"]["measurements"][0]["flops"] == 4 * 12 * (32 * 33 // 2) * 64  # causal triangle
    assert saved["machine"]["steps"][0]["decode"]["measured_ms"] > 0


@pytest.mark.parametrize(("args", "causal"), [(["gpt2-small"], True), (["bert-base"], False),
                                              (["--heads", "4", "--head-dim", "16"], False),
                                              (["gpt2-small", "--no-causal"], False)])  # fmt: skip
def test_causal_by_default_for_a_decoder(tfcost, args, causal):
    """A decoder's self-attention is causal, an encoder's is not: measure times the mask the model uses."""
    run = tfcost("measure", *args, "--seq", "32", "--repeats", "1", "--device", "cpu", "--format", "json")
    assert run.code == 0, run.stderr
    assert {row["causal"] for row in json.loads(run.stdout)["measurements"]} == {causal}


def test_a_noisy_machine_is_warned_of(capsys):
    """Repeats spread wider than p90/p10 = 1.5 make the medians untrustworthy: a warning says so; a steady
    spread says nothing."""
    from tfcost.render.measure import warn_noisy
    from tfcost.reports.measure import NOISY_SPREAD, noisiest

    report = sweep(seqs=[32, 64], repeats=3)
    steady = [row.model_copy(update={"p10_ms": 1.0, "median_ms": 1.1, "p90_ms": 1.2}) for row in report.measurements]
    assert noisiest(report.model_copy(update={"measurements": steady})) is None
    shaky = [*steady[:1], steady[1].model_copy(update={"p10_ms": 1.0, "p90_ms": 4.0})]
    found = noisiest(report.model_copy(update={"measurements": shaky}))
    assert found is not None and found[1] == 4.0 > NOISY_SPREAD and found[0].seq == 64
    warn_noisy(report.model_copy(update={"measurements": shaky}))
    err = capsys.readouterr().err
    assert err.startswith("tfcost: warning: timings are noisy: p90/p10 = 4.0x at T=64") and err.count("\n") == 1
