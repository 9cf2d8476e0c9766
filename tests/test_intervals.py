"""Every predicted figure with its error bar (issue 34): the range comes from the validation suite's own runs, and
the file it is read from is what benchmarks/validate.py computes from the recorded predictions."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BARS = json.loads((ROOT / "presets" / "validation-errors.json").read_text())["categories"]


def validate_module():
    spec = importlib.util.spec_from_file_location("validate", ROOT / "benchmarks" / "validate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["validate"] = module
    spec.loader.exec_module(module)
    return module


def test_the_shipped_error_bars_are_the_recorded_predictions_own():
    validate = validate_module()
    predictions = json.loads((ROOT / "validation" / "predictions.json").read_text())
    assert validate.error_bars(validate.load_cases(), predictions)["categories"] == BARS


def test_quantile_interpolates_as_numpy_does():
    validate = validate_module()
    assert validate.quantile([1.0, 2.0, 3.0, 4.0, 5.0], 0.1) == pytest.approx(1.4)
    assert validate.quantile([2.0, 1.0], 0.9) == pytest.approx(1.9)


def test_train_gives_its_step_days_and_memory_their_ranges(tfcost):
    out = json.loads(tfcost("train", "llama-3-8b", "--gpus", "64", "--zero", "1", "-f", "json").stdout)
    bars = out["intervals"]
    step, memory = BARS["step_time"], BARS["training_memory"]
    # a time predicted r times what was measured: measured = predicted / r, so the range is P / r90 to P / r10
    total = out["step"]["seconds"]["total"]
    assert bars["step.seconds.total"]["low"] == pytest.approx(total / step["ratio_p90"], rel=1e-12)
    assert bars["step.seconds.total"]["high"] == pytest.approx(total / step["ratio_p10"], rel=1e-12)
    assert bars["time.days"]["low"] == pytest.approx(out["time"]["days"] / step["ratio_p90"], rel=1e-12)
    used = out["memory_per_gpu"]["total_bytes"]
    assert bars["memory_per_gpu.total_bytes"]["high"] == pytest.approx(used / memory["ratio_p10"], rel=1e-12)
    assert bars["step.seconds.total"]["runs"] == step["runs"] and bars["step.seconds.total"]["held_out_runs"] > 0
    assert "Error bars" in tfcost("train", "llama-3-8b", "--gpus", "64", "--zero", "1").stdout


def test_a_time_from_the_users_mfu_has_no_range_of_tfcosts(tfcost):
    out = json.loads(tfcost("train", "llama-3-8b", "--gpus", "64", "--mfu", "0.4", "-f", "json").stdout)
    assert set(out["intervals"]) == {"memory_per_gpu.total_bytes"}


def test_a_rates_range_runs_the_other_way(tfcost):
    out = json.loads(tfcost("serve", "llama-3-8b", "-f", "json").stdout)
    serving = BARS["serving"]
    rate = out["intervals"]["expected.inflight_tokens_per_s"]
    assert rate["low"] == pytest.approx(out["expected"]["inflight_tokens_per_s"] * serving["ratio_p10"], rel=1e-12)
    ttft = out["intervals"]["expected.ttft_ms"]
    assert ttft["high"] == pytest.approx(out["expected"]["ttft_ms"] / serving["ratio_p10"], rel=1e-12)


def test_plan_gives_the_factors_for_every_layout(tfcost):
    out = json.loads(tfcost("plan", "train", "llama-3-8b", "--gpus", "8", "--top", "1", "-f", "json").stdout)
    step = out["intervals"]["step_seconds"]
    assert step["low"] is None and step["low_factor"] == pytest.approx(1 / BARS["step_time"]["ratio_p90"])
