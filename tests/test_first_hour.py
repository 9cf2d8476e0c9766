"""A first hour without surprises (issue 25): a warning past the model's context, sweeps that mark that region,
byte axes labelled where IEC names them exactly, tables that fit the terminal, and the small things a user trips
on (GPU aliases, 4k for token counts, case-insensitive names, CSV, per-column overrides, list filters)."""

from __future__ import annotations

import json

import pytest

from tfcost.readers.presets import load_model

WARNING = "passes the model's context of"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["estimate", "gpt2-small", "--seq", "8192"], "T = 8,192 tokens passes the model's context of 1,024"),
        (["train", "gpt2-small", "--seq", "4096"], "T = 4,096 tokens passes the model's context of 1,024"),
        (["serve", "gpt2-small", "-P", "1000", "-G", "100"], "P + G = 1,100 tokens passes the model's context"),
        (["compare", "gpt2-small", "llama-3-8b", "--seq", "2048"], "gpt2-small: T = 2,048 tokens passes"),
    ],
)
def test_past_the_context_is_a_warning_never_a_refusal(tfcost, args, said):
    run = tfcost(*args, "--format", "json")
    assert run.code == 0, run.stderr
    json.loads(run.stdout)  # the answer is still there, priced at the length asked
    warnings = [line for line in run.stderr.splitlines() if line.startswith("tfcost: warning:")]
    assert len(warnings) == 1 and said in warnings[0], run.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["estimate", "gpt2-small", "--seq", "1024"],  # exactly the context: no warning
        ["train", "gpt2-small"],  # the default T is the model's context when shorter than 4,096
        ["serve", "gpt2-small", "-P", "512", "-G", "512"],
        ["compare", "llama-3-8b", "mistral-7b", "--seq", "8192"],
    ],
)
def test_within_the_context_no_warning(tfcost, args):
    run = tfcost(*args, "--format", "json")
    assert run.code == 0 and WARNING not in run.stderr, run.stderr


def test_sweep_marks_the_values_past_each_models_context(tfcost):
    run = tfcost("sweep", "gpt2-small", "llama-3-8b", "-T", "512..16384", "-m", "kv_cache", "-f", "markdown")
    assert run.code == 0, run.stderr
    rows = [line.split("|")[1:-1] for line in run.stdout.splitlines() if line.startswith("| ") and line[2:3].isdigit()]
    rows = [[cell.strip() for cell in row] for row in rows]
    by_t = {int(row[0].replace(",", "")): row[1:] for row in rows}
    assert set(by_t) == {512, 1024, 2048, 4096, 8192, 16384}
    for t, (gpt2, llama) in by_t.items():
        assert gpt2.endswith("\\*") == (t > 1024) and llama.endswith("\\*") == (t > 8192), (t, gpt2, llama)
    assert "past the model's own context: gpt2-small (1,024), llama-3-8b (8,192)" in run.stdout
    # JSON carries each model's context, in the models' order.
    document = json.loads(tfcost("sweep", "gpt2-small", "llama-3-8b", "-T", "512,1024", "-f", "json").stdout)
    assert document["contexts"] == [1024, 8192] == [load_model(m).max_seq_len for m in ("gpt2-small", "llama-3-8b")]


def test_sweep_chart_draws_the_context_line(tfcost):
    pytest.importorskip("plotext", reason="charts need tfcost[plot]")
    run = tfcost("sweep", "gpt2-small", "-T", "512..16384", "-m", "kv_cache")
    assert run.code == 0, run.stderr
    assert "| gpt2-small: its context, 1,024 tokens (the vertical line; right of it is past it)" in run.stdout


def test_byte_ticks_are_round_in_iec_units():
    """10^7 bytes is 9.54 MiB: byte axes tick at powers of two (log) or multiples of one (linear), so every label
    is a whole IEC number, as the axis title says ('bytes, IEC')."""
    plot = pytest.importorskip("tfcost.render.plot")
    positions, labels = plot.ticks([18_874_368.0, 4_831_838_208.0], log=True, unit="bytes")
    assert all(p == 2 ** round(p).bit_length() / 2 for p in positions)  # powers of two
    assert labels[0] == "32.00 MiB" and labels[-1] == "2.00 GiB" and len(labels) <= 5
    positions, labels = plot.ticks([0.0, 300 * 2**20], log=False, unit="bytes")
    assert positions[1] - positions[0] == 2**27 and labels == ["0 B", "128.00 MiB", "256.00 MiB"]


def test_lengths_take_binary_k_and_m():
    from tfcost.units import parse_length

    assert [parse_length(text) for text in ("4096", "4_096", "4,096", "4k", "32K", "128k", "1M", "1.5k")] == [
        4096, 4096, 4096, 4096, 32768, 131072, 1048576, 1536,
    ]  # fmt: skip
    for bad in ("0", "-4k", "1.1", "4kk", "k", "", "4,09", "²", "1e999999", "4G"):
        with pytest.raises(ValueError):
            parse_length(bad)


@pytest.mark.parametrize(
    ("args", "key", "value"),
    [
        (["estimate", "llama-3-8b", "--seq", "8k"], ("workload", "seq_len"), 8192),
        (["train", "llama-3-8b", "-T", "2k"], ("setup", "seq_len"), 2048),
        (["serve", "llama-3-8b", "-P", "4k"], ("setup", "prompt"), 4096),
        (["serve", "llama-3-8b", "-G", "1k"], ("setup", "generate"), 1024),
    ],
)
def test_length_options_take_4k(tfcost, args, key, value):
    run = tfcost(*args, "--format", "json")
    assert run.code == 0, run.stderr
    assert json.loads(run.stdout)[key[0]][key[1]] == value


def test_sweep_and_measure_take_4k(tfcost):
    run = tfcost("sweep", "gpt2-small", "-T", "512..2k", "-f", "csv")
    assert [line.split(",")[2] for line in run.stdout.splitlines()[1:]] == ["512", "1024", "2048"]


@pytest.mark.parametrize(
    ("given", "row", "noted"),
    [("h100", "h100-sxm", True), ("H100", "h100-sxm", True), ("a100", "a100-80gb", True), ("4090", "rtx-4090", True),
     ("H100 SXM", "h100-sxm", False), ("H100-SXM", "h100-sxm", False), ("h200", "h200", False)],
)  # fmt: skip
def test_gpu_aliases_are_said_in_a_note(tfcost, given, row, noted):
    run = tfcost("serve", "llama-3-8b", "--gpu", given, "--format", "json")
    assert run.code == 0, run.stderr
    assert json.loads(run.stdout)["gpu"] == row
    note = f"tfcost: note: --gpu {given} is taken as {row} (`tfcost gpus` lists the others)\n"
    assert (run.stderr == note) if noted else (run.stderr == ""), run.stderr


def test_preset_names_are_case_insensitive(tfcost):
    upper = tfcost("estimate", "Llama-3-8B", "--format", "json")
    assert upper.code == 0, upper.stderr
    assert json.loads(upper.stdout) == json.loads(tfcost("estimate", "llama-3-8b", "--format", "json").stdout)
    wrong = tfcost("estimate", "LLama-3-8bb")
    assert wrong.code == 1 and "did you mean llama-3-8b" in wrong.stderr
