"""Options that cannot mean what they say are refused in one line: a LoRA rank above the adapted matrices' width,
digits that are not ASCII in a list (a superscript is a digit to str.isdigit but no int), and assumptions past
their bounds."""

from __future__ import annotations

import pytest
from conftest import run_in_process

from tfcost.costs import finetune
from tfcost.readers.presets import load_model


def one_line(run, code: int) -> str:
    assert run.code == code and run.stdout == "" and run.stderr.count("\n") == 1, run
    assert "internal error" not in run.stderr
    return run.stderr


def test_a_lora_rank_above_the_layer_width_is_refused():
    """gpt2-small's adapted q, k, v, o are 768 x 768: rank 768 is the most an adapter can use."""
    shape = load_model("gpt2-small")
    assert min(min(op.fan_in, op.fan_out) for _, op in finetune.target_rows(shape, ("q", "k", "v", "o"))) == 768
    assert run_in_process("train", "gpt2-small", "--tokens", "1e9", "--lora", "768").code == 0
    line = one_line(run_in_process("train", "gpt2-small", "--tokens", "1e9", "--lora", "769"), 2)
    assert "--lora 769" in line and "768" in line


@pytest.mark.parametrize("option", ["--seq", "--batch"])
@pytest.mark.parametrize("value", ["1\u00b2", "4,2\u00b3", "\u0661\u0662", "9" * 5000])
def test_list_options_take_ascii_digits_only(option, value):
    """Superscripts and Arabic-Indic digits, and a 5,000-digit number, are refused in one line (int() would raise
    on the first, read the second, and refuse the third past Python's digit limit)."""
    assert option in one_line(run_in_process("sweep", "gpt2-small", option, value, "-f", "csv"), 2)


@pytest.mark.parametrize(("argv", "option"), [
    (["serve", "gpt2-small", "--memory-efficiency", "1e-9"], "--memory-efficiency"),
    (["serve", "gpt2-small", "--reserve", "0.9999999"], "--reserve"),
    (["train", "gpt2-small", "--tokens", "1e9", "--hfu", "1e-9"], "--hfu"),
    (["train", "gpt2-small", "--tokens", "1e9", "--tflops-per-gpu", "1e300"], "--tflops-per-gpu"),
])  # fmt: skip
def test_extreme_assumptions_are_bounded(argv, option):
    assert option in one_line(run_in_process(*argv), 2)


@pytest.mark.parametrize(("argv", "option"), [
    (["sweep", "gpt2-small", "-T", "512,1024", "--spacing", "linear"], "--spacing"),
    (["sweep", "gpt2-small", "--gpus", "2"], "--gpus"),
])  # fmt: skip
def test_a_sweep_option_that_does_nothing_is_an_error(argv, option):
    assert option in one_line(run_in_process(*argv), 2)
