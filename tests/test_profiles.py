"""Profiles: measured rates saved as YAML under the config directory, listed, and used by serve in place of the
GPU table; `measure --roofline` and `measure MODEL --step` on the CPU end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tfcost.costs import profiles
from tfcost.readers.presets import load_model
from tfcost.reports.serve import serve
from tfcost.schema import ServingSetup

TINY_LLAMA = str(Path(__file__).parent / "data" / "tiny-llama.yaml")
RAW = {  # the shape of measure.roofline's output; the timings are round numbers to check the arithmetic
    "device": "cpu",
    "device_name": "CPU (test)",
    "torch_version": "2.13.0",
    "memory_bytes": 16 * 2**30,
    "matmuls": [
        {"dtype": "fp32", "kind": "decode", "m": 1, "k": 4096, "n": 4096, "median_ms": 8.0},
        {"dtype": "fp32", "kind": "decode", "m": 1, "k": 512, "n": 4096, "count": 16, "median_ms": 16.0},
        {"dtype": "fp32", "kind": "prefill", "m": 512, "k": 1024, "n": 1024, "median_ms": 20.0},
        {"dtype": "fp32", "kind": "prefill", "m": 128, "k": 1024, "n": 1024, "count": 16, "median_ms": 128.0},
    ],
    "attentions": [{"dtype": "fp32", "heads": 8, "seq": 512, "head_dim": 64, "median_ms": 4.0}],
    "copy_bytes": 2 * 256 * 2**20,
    "copy_ms": 50.0,
    "tiny_kernel_us": 5.0,
    "tiny_matmul_us": 3.0,
    "floor_layers": [1, 3],
    "floor_step_us": [500.0, 1100.0],
}


@pytest.fixture
def config_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    return tmp_path


def test_rates_from_a_roofline():
    profile = profiles.from_roofline(RAW, "box", "fp32", "2026-11-30")
    decode, prefill = profile.matmul("decode"), profile.matmul("prefill")
    assert decode.flops_per_s == 2 * 4096 * 4096 / 8e-3
    assert decode.bytes_per_s == (4096 + 4096 * 4096 + 4096) * 4 / 8e-3  # the weights dominate a GEMV
    assert prefill.flops_per_s == 2 * 512 * 1024 * 1024 / 20e-3
    assert profile.copy_bytes_per_s == 2 * 256 * 2**20 / 50e-3
    # 300 us per layer (the slope over 1 and 3 layers); the rest, 500 - 300 - 2 head kernels x 300, floors at 0
    assert profile.layer_floor_us() == (300.0, 0.0)
    rates = profile.rates()
    assert rates.stream_bytes_per_s == decode.bytes_per_s
    assert rates.matmul_flops_per_s == prefill.flops_per_s
    # 16 one-row matmuls over 512-long rows: (512 + 512 x 4096 + 4096) x 4 bytes each in 16 ms, beside the 4096 run
    assert rates.stream_by_row_length == ((512, 16 * (512 + 512 * 4096 + 4096) * 4 / 16e-3), (4096, decode.bytes_per_s))
    # 16 products of 128 rows, each its own 1024 x 1024 weight, in 128 ms; the cached 512-row one is not on the curve
    assert rates.matmul_by_rows == ((128, 16 * 2 * 128 * 1024 * 1024 / 128e-3),)
    # causal sdpa: QK^T and AV over the 512 x 513 / 2 kept entries, 2 x 2 x 8 heads x 64 each, in 4 ms
    assert rates.attention_flops_per_s == pytest.approx(4 * 8 * 64 * 512 * 513 / 2 / 4e-3)
    assert rates.cuda_context_bytes == 0  # no CUDA context on a CPU


def test_saved_profile_is_plain_yaml_listed_and_used_by_serve(config_dir, tfcost):
    profile = profiles.from_roofline(RAW, "box", "fp32", "2026-11-30")
    path = profiles.save(profile)
    assert path == config_dir / "tfcost" / "profiles" / "box.yaml"
    assert yaml.safe_load(path.read_text())["device_name"] == "CPU (test)"
    assert profiles.load("box") == profile

    env = {"XDG_CONFIG_HOME": str(config_dir)}
    listed = tfcost("profiles", "--format", "json", env=env)
    assert listed.code == 0 and json.loads(listed.stdout)["results"][0]["name"] == "box"
    done = tfcost("serve", "gpt2-small", "--profile", "box", "--weights-dtype", "fp32", "--kv-dtype", "fp32",
                  "--format", "json", env=env)  # fmt: skip
    assert done.code == 0, done.stderr
    out = json.loads(done.stdout)
    direct = serve(
        load_model("gpt2-small"),
        profile.gpu_spec(),
        ServingSetup(weights_dtype="fp32", kv_dtype="fp32", compute_efficiency=1, memory_efficiency=1),
        profile.rates(),
        "box",
    )
    assert out["expected"]["decode_ms_per_token"] == pytest.approx(direct.expected.decode_ms_per_token)
    assert out["latency"]["decode_ms_per_token"] == pytest.approx(direct.latency.decode_ms_per_token)
    assert out["inputs"]["bandwidth_bytes_per_s"] == pytest.approx(profile.copy_bytes_per_s)  # the bound's peak
    assert out["profile"] == "box"
    train = tfcost("train", "gpt2-small", "--profile", "box", "--tokens", "1e9", "--format", "json", env=env)
    assert train.code == 0, train.stderr


@pytest.mark.parametrize(("args", "words"), [
    (("serve", "gpt2-small", "--profile", "nothing-here"), "no profile named 'nothing-here'"),
    (("serve", "gpt2-small", "--profile", "../etc"), "profile name"),
])  # fmt: skip
def test_bad_profiles_fail_in_one_line(config_dir, tfcost, args, words):
    done = tfcost(*args, env={"XDG_CONFIG_HOME": str(config_dir)})
    assert done.code != 0 and done.stdout == ""
    assert done.stderr.startswith("tfcost: error:") and words in done.stderr and len(done.stderr.splitlines()) == 1


def test_measure_roofline_and_step_on_the_cpu(config_dir):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.conftest import run_tfcost

    env = {"XDG_CONFIG_HOME": str(config_dir), "OMP_NUM_THREADS": "1"}
    done = run_tfcost("measure", TINY_LLAMA, "--roofline", "--step", "--dtype", "fp32", "--repeats", "2",
                      "-P", "16", "-G", "4", "--save-profile", "cpu", "--format", "json", env=env)  # fmt: skip
    assert done.code == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["roofline"]["device"] == "cpu" and {m["dtype"] for m in out["roofline"]["matmuls"]} >= {"fp32"}
    assert {m["k"] for m in out["roofline"]["matmuls"] if m["kind"] == "decode"} >= {512, 4096}
    assert [a["dtype"] for a in out["roofline"]["attentions"]] == ["fp32", "bf16"]
    for phase in ("prefill", "decode"):
        row = out["step"][phase]
        assert row["measured_ms"] > 0 and row["bound_ms"] > 0 and row["expected_ms"] > 0
        assert row["expected_over_measured"] == pytest.approx(row["expected_ms"] / row["measured_ms"])
    saved = profiles.load("cpu")
    assert saved.steps and saved.steps[0]["model"] == "tiny-llama"
    direct = serve(load_model(TINY_LLAMA), saved.gpu_spec(),
                   ServingSetup(weights_dtype="fp32", kv_dtype="fp32", prompt=16, generate=4, reserve=0,
                                compute_efficiency=1, memory_efficiency=1), saved.rates(), "cpu")  # fmt: skip
    assert out["step"]["decode"]["expected_ms"] == pytest.approx(direct.expected.decode_ms_per_token)
    assert out["step"]["prefill"]["bound_ms"] == pytest.approx(direct.latency.prefill_ms)


def test_step_refuses_a_model_that_does_not_fit(config_dir):
    pytest.importorskip("torch")
    measure = pytest.importorskip("tfcost.measure.kernels")
    from tfcost.errors import TfcostError

    with pytest.raises(TfcostError, match=r"needs about .* GiB"):
        measure.step(load_model("llama-2-70b"), prompt=8, generate=8, batch=1, dtype="fp32", device="cpu",
                     repeats=1, needed_bytes=2**50)  # fmt: skip


STEP = {  # the shape of a --step report's JSON, with round numbers
    "model": "tiny-llama", "device_name": "CPU (test)", "torch_version": "2.13.0", "profile": "box",
    "timing": "wall clock", "notes": ["a note"],
    "prefill": {"measured_ms": 10.0, "bound_ms": 5.0, "expected_ms": 8.0, "expected_over_measured": 0.8},
    "decode": {"measured_ms": 2.0, "bound_ms": 1.0, "expected_ms": 3.0, "expected_over_measured": 1.5},
}  # fmt: skip


@pytest.mark.parametrize("output", ["table", "csv", "markdown", "json"])
def test_roofline_and_step_in_every_format(capsys, output):
    """measure --roofline/--step print a table, CSV or Markdown like every other command (JSON only, before)."""
    from tfcost.render.measure import print_machine

    profile = profiles.from_roofline(RAW, "box", "fp32", "2026-01-01T00:00:00Z").model_dump(mode="json")
    print_machine({"roofline": profile, "step": STEP}, output)
    out = capsys.readouterr().out
    if output == "json":
        assert json.loads(out)["step"] == STEP
    elif output == "csv":
        import csv
        import io

        rows = list(csv.DictReader(io.StringIO(out)))
        values = {(row["part"], row["item"], row["quantity"]): row["value"] for row in rows}
        assert values["step", "decode", "expected_over_measured"] == "1.5"
        assert values["roofline", "copy", "bytes_per_s"] == str(profile["copy_bytes_per_s"])
        assert values["roofline", "matmul decode 1x4096x4096 x1 fp32", "median_ms"] == "8.0"
    else:
        # 4096 x 4096 fp32 weights read in 8 ms: 8.39 GB/s; the decode step's expected/measured 3/2.
        assert "8.39 GB/s" in out and "1.50x" in out and "matmul decode 1x4096x4096 x1 fp32" in out
        assert ("| decode |" in out) == (output == "markdown")
