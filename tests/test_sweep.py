"""`tfcost sweep`, its charts and files, the crossovers in `estimate`, and `--format markdown` on every table."""

from __future__ import annotations

import csv
import io
import json
import struct
import sys

import pytest
from conftest import run_in_process

from tfcost.core import flops, memory, params
from tfcost.costs.sweep import parse_seq, sweep
from tfcost.readers.presets import load_gpu, load_model
from tfcost.reports.serve import serve
from tfcost.schema import ServingSetup

SWEEP = ["sweep", "gpt2-small", "llama-3-8b", "--seq", "256..131072"]


def test_seq_ranges():
    assert parse_seq("256..131072", None, "geometric") == [256 * 2**k for k in range(10)]
    assert parse_seq("512..1000", None, "geometric") == [512, 1000]
    values = parse_seq("512..131072", 2000, "geometric")
    assert values[0] == 512 and values[-1] == 131072 and values == sorted(set(values))
    assert len(values) > 1900  # rounding merges a few of the closest at the low end
    assert parse_seq("100..200", 3, "linear") == [100, 150, 200]
    assert parse_seq("4096,1024", None, "geometric") == [1024, 4096]


def test_sweep_values_are_the_cores():
    shapes = [load_model("gpt2-small"), load_model("mistral-7b")]
    seq_lens = [1, 1000, 4096, 4097, 100_000]
    report = sweep(shapes, seq_lens, [1, 8], ["params", "forward_flops", "kv_cache", "score_matrix"], "bf16",
                   True, None, ServingSetup())  # fmt: skip
    got = {(s.model, s.batch, s.metric): s.values for s in report.series}
    for shape in shapes:
        assert got[(shape.name, 1, "params")] == [params.total_params(shape)] * len(seq_lens)
        assert got[(shape.name, 1, "forward_flops")] == [flops.forward_flops(shape, t, True) for t in seq_lens]
        for batch in (1, 8):
            kv = [memory.kv_cache_bytes(shape, t, batch, "bf16") for t in seq_lens]
            assert got[(shape.name, batch, "kv_cache")] == kv
            score = [memory.score_matrix_bytes_per_layer(shape, t, batch, "bf16") for t in seq_lens]
            assert got[(shape.name, batch, "score_matrix")] == score


def test_serving_metrics_match_tfcost_serve():
    # T is the context: serve's P + G for memory, largest batch and decode; its prompt P for prefill.
    shape, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    seq_lens = [2, 513, 8192, 131072]
    metrics = ["serve_memory", "max_batch", "prefill_ms", "decode_ms"]
    report = sweep([shape], seq_lens, [4], metrics, "bf16", False, gpu, ServingSetup(gpus=2))
    got = {s.metric: s.values for s in report.series}
    for index, t in enumerate(seq_lens):
        decoding = serve(shape, gpu, ServingSetup(gpus=2, batch=4, prompt=t - 1, generate=1))
        prefilling = serve(shape, gpu, ServingSetup(gpus=2, batch=4, prompt=t, generate=1))
        assert got["serve_memory"][index] == decoding.memory.total_bytes_per_gpu
        assert got["max_batch"][index] == decoding.max_batch
        assert got["decode_ms"][index] == decoding.latency.decode_ms_per_token
        assert got["prefill_ms"][index] == prefilling.latency.prefill_ms


def test_done_when_terminal_chart_marks_the_crossover(tfcost):
    done = tfcost(*SWEEP)  # the real console entry point, a fresh interpreter
    assert done.code == 0, done.stderr
    assert "T, tokens per sequence" in done.stdout and "GFLOP" in done.stdout  # axis label and units on the ticks
    assert "gpt2-small: crossover at T = 9,229" in done.stdout  # the mark's caption
    assert "llama-3-8b: crossover at T = 53,250" in done.stdout
    assert (
        "gpt2-small: attention-score FLOPs per token = 6N at T = 9,229 (rounded down; exact 9,229 1/6)" in done.stdout
    )
    assert "\x1b[" not in done.stdout  # no colour codes when the output is not a terminal


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_done_when_plot_writes_png_svg_and_html(tmp_path):
    png, svg, page = tmp_path / "chart.png", tmp_path / "chart.svg", tmp_path / "chart.html"
    for path in (png, svg, page):
        done = run_in_process(*SWEEP, "--metric", "attention_flops,kv_cache", "--plot", str(path))
        assert done.code == 0, done.stderr
        assert f"wrote {path}" in done.stderr
        assert "attention-score FLOPs per token" in done.stdout  # with --plot, stdout gets the table
    width, height = png_size(png.read_bytes())
    assert (width, height) == (560, 576)  # 7 x 7.2 inches at 80 dpi: two panels
    assert png.stat().st_size < 200_000
    text = svg.read_text(encoding="utf-8")
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    for label in ("T, tokens per sequence", "attention-score FLOPs per token", "KV cache, B sequences", "T = 9,229"):
        assert label in text
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html and "<script" not in html
    assert "gpt2-small: attention-score FLOPs per token = 6N at T = 9,229 (rounded down)" in html


def test_without_the_plot_extra_the_table_and_what_to_install(monkeypatch):
    """The default chart without plotext: the table, and one note saying how to get the chart (issue 38); a chart
    asked for by name is still the one-line error."""
    monkeypatch.setitem(sys.modules, "plotext", None)  # import plotext now raises ImportError
    done = run_in_process(*SWEEP)
    assert done.code == 0, done.stderr
    assert done.stdout == run_in_process(*SWEEP, "--format", "table").stdout  # tables need no extra
    assert done.stderr == (
        "tfcost: note: the chart needs plotext (pip install 'tfcost[plot]'); printed the table instead "
        "(--format table)\n"
    )
    asked = run_in_process(*SWEEP, "--format", "chart")
    assert asked.code == 1
    assert asked.stderr == "tfcost: error: charts need plotext: pip install 'tfcost[plot]'\n"


def test_csv_has_a_row_per_model_batch_and_t():
    models = ["gpt2-small", "llama-3-8b", "mistral-7b", "gemma-2-9b", "deepseek-v3"]
    done = run_in_process("sweep", *models, "--seq", "512..131072", "--points", "2000", "--format", "csv")
    assert done.code == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    seq_lens = parse_seq("512..131072", 2000, "geometric")
    assert len(rows) == 5 * len(seq_lens)
    for row in rows[:: len(seq_lens) // 3]:
        shape, t = load_model(row["model"]), int(row["seq_len"])
        assert int(row["attention_flops"]) == flops.attention_score_flops_per_token(shape, t)


def test_sweep_of_chunked_models_prints_what_estimate_prints():
    # Chunked scans (Codestral Mamba's Mamba-2, Qwen3-Next's Gated DeltaNet, chunks of 256 and 64) and Llama 4's
    # chunked attention (8,192), at chunk edges: sweep's closed forms against estimate's JSON, command to command.
    seq_lens = [63, 64, 65, 255, 256, 257, 8192, 8193, 100_000]
    text = ",".join(map(str, seq_lens))
    models = ["mamba-codestral-7b", "qwen3-next-80b-a3b", "llama-4-scout"]
    done = run_in_process("sweep", *models, "--seq", text, "-m", "forward_flops,kv_cache", "--format", "csv")
    assert done.code == 0, done.stderr
    rows = {(row["model"], int(row["seq_len"])): row for row in csv.DictReader(io.StringIO(done.stdout))}
    for model in models:
        for t in seq_lens:
            estimate = json.loads(run_in_process("estimate", model, "--seq", str(t), "--format", "json").stdout)
            assert int(rows[(model, t)]["forward_flops"]) == estimate["flops"]["forward_per_sequence"]
            assert int(rows[(model, t)]["kv_cache"]) == estimate["kv_cache"]["bytes"]


def test_json_and_markdown():
    done = run_in_process(*SWEEP, "-B", "1,8", "-m", "kv_cache", "--gpu", "h100-sxm", "--format", "json")
    document = json.loads(done.stdout)
    assert document["seq_lens"][0] == 256 and document["batches"] == [1, 8]
    series = {(s["model"], s["batch"]): s["values"] for s in document["series"]}
    assert series[("gpt2-small", 8)][2] == 8 * 36_864 * 1024  # the lesson: 36,864 B per token, T = 1,024
    found = {(c["model"], c["name"], c["batch"]): c for c in document["crossovers"]}
    assert found[("gpt2-small", "attention_vs_6n", 1)]["exact"] == "55375/6"
    assert found[("llama-3-8b", "score_matrix_vs_gpu", 1)]["seq_len"] == 36_635
    markdown = run_in_process(*SWEEP, "--format", "markdown").stdout
    assert "| T | gpt2-small | llama-3-8b |" in markdown and "|---:|---:|---:|" in markdown
    assert "| 1,024 | 56.62 MFLOP |" in markdown  # the lesson: 0.06 GFLOPs of attention at T = 1,024


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seq", "9..3"], "runs backwards"),
        (["--seq", "a..b"], "expected positive integers"),
        (["--metric", "speed"], "--metric: unknown 'speed'"),
        (["--metric", "decode_ms"], "needs --gpu"),
        (["--batch", "0"], "--batch: expected positive integers"),
        (["--seq", "1024,2048", "--points", "3"], "--points: give --seq as a range"),
        (["--plot", "chart.pdf"], "should end in .png, .svg, .html"),
    ],
)
def test_bad_sweeps_are_one_line(args, message):
    base = ["sweep", "gpt2-small", "--format", "table"]
    done = run_in_process(*base, *(args if "--seq" in args else ["--seq", "256..1024", *args]))
    assert done.code != 0
    assert done.stderr.startswith("tfcost: error: ") and done.stderr.count("\n") == 1
    assert message in done.stderr


def test_estimate_reports_the_crossovers():
    done = run_in_process("estimate", "gpt2-small")
    line = next(line for line in done.stdout.splitlines() if "= 6N" in line)
    assert "9,229" in line and "9,229 1/6" in line
    assert "rounded down" in done.stdout
    document = json.loads(run_in_process("estimate", "gpt2-small", "--gpu", "h100-sxm", "-f", "json").stdout)
    names = [c["name"] for c in document["crossovers"]]
    assert names == ["attention_vs_6n", "kv_cache_vs_weights", "score_matrix_vs_gpu"]
    assert document["crossovers"][0]["seq_len"] == 9229
    none = " ".join(run_in_process("estimate", "mistral-7b").stdout.split())  # notes wrap at the width
    assert "none, sliding windows stop the attention term growing" in none


@pytest.mark.parametrize(
    "args",
    [
        ["estimate", "gpt2-small"],
        ["compare", "gpt2-small", "llama-3-8b"],
        ["list"],
        ["gpus"],
        ["train", "gpt2-small"],
        ["serve", "llama-3-8b"],
        ["sweep", "gpt2-small"],
    ],
)
def test_every_table_has_markdown(args):
    done = run_in_process(*args, "--format", "markdown")
    assert done.code == 0, done.stderr
    lines = done.stdout.splitlines()
    separators = [line for line in lines if line.startswith("|") and set(line) <= set("|:-")]
    assert separators, done.stdout
    table = [line for line in lines if line.startswith("|")]
    widths = {line.count("|") - line.count("\\|") for line in table}
    assert len(widths) == 1  # every row has as many cells as the header
    assert "\x1b" not in done.stdout and "┃" not in done.stdout


def test_markdown_escapes_text_from_files(tmp_path):
    preset = tmp_path / "odd.yaml"
    text = (load_model("gpt2-small").model_dump_json(exclude_defaults=True)).replace('"gpt2-small"', '"a|b*c\\u001b"')
    preset.write_text(text, encoding="utf-8")
    done = run_in_process("compare", str(preset), "gpt2-small", "--format", "markdown")
    assert done.code == 0, done.stderr
    # clean() writes the escape as the text \x1b, and Markdown escapes its backslash: a reader sees \x1b.
    assert "a\\|b\\*c\\\\x1b" in done.stdout and "\x1b" not in done.stdout


def test_gpt2_markdown_estimate_holds_the_lessons_figures():
    out = run_in_process("estimate", "gpt2-small", "--format", "markdown").stdout
    for figure in ("124,439,808", "7,087,872", "37,748,736", "1,048,576"):
        assert figure in out


def test_the_docs_show_a_chart_made_by_the_command():
    from pathlib import Path

    root = Path(__file__).parent.parent
    doc = (root / "docs" / "sweep.md").read_text(encoding="utf-8")
    assert "](sweep.png)" in doc and "--plot docs/sweep.png" in doc
    data = (root / "docs" / "sweep.png").read_bytes()
    assert png_size(data)[0] == 560 and len(data) < 100_000  # small enough to commit
