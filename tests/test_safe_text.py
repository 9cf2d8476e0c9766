"""Outside text reaches every sink through tfcost.render.safe_text: terminal (C0, C1, bidi controls escaped
visibly), CSV (no formula a spreadsheet would run, CWE-1236), Markdown, matplotlib (no mathtext, no dropped legend
entry, its warnings not printed raw); JSON keeps the text exact."""

from __future__ import annotations

import csv
import io
import json

import pytest
from conftest import run_in_process

from tfcost.readers.presets import load_model
from tfcost.render import safe_text

# Characters that must never reach a terminal as themselves: ESC (C0), NEL and CSI (C1), RIGHT-TO-LEFT OVERRIDE
# and RIGHT-TO-LEFT ISOLATE (bidi, Unicode's "Trojan Source" characters, CVE-2021-42574), a line break, a lone
# surrogate.
HOSTILE = {"\x1b": "\\x1b", "\x85": "\\x85", "\x9b": "\\x9b", "\u202e": "\\u202e", "\u2067": "\\u2067",
           "\n": "\\n", "\ud800": "\\ud800"}  # fmt: skip


@pytest.mark.parametrize("char", list(HOSTILE))
def test_terminal_escapes_every_control_visibly(char):
    assert safe_text.terminal(f"a{char}b") == f"a{HOSTILE[char]}b"


def test_terminal_keeps_printable_text_exact():
    for text in ("Qwen3-8B", "模型 名", "a b_c$d", "ÿ"):
        assert safe_text.terminal(text) is text


@pytest.mark.parametrize("first", ["=", "+", "-", "@", "\t", "\r"])
def test_csv_cells_never_start_a_formula(first):
    cell = safe_text.csv_cell(f"{first}HYPERLINK(1)")
    assert cell.startswith("'") and "HYPERLINK(1)" in cell
    assert safe_text.csv_cell("gpt2-small") == "gpt2-small"


def test_markdown_escapes_pipes_backticks_and_controls():
    assert safe_text.markdown("a|b`c\u202e") == "a\\|b\\`c\\u202e"


def test_chart_labels_hold_no_mathtext_and_stay_in_the_legend():
    assert safe_text.chart("$x^2$") == "\\$x^2\\$"
    assert safe_text.chart("_hidden") == " _hidden"


def preset_named(tmp_path, name: str, file: str = "odd.yaml"):
    preset = tmp_path / file
    text = load_model("gpt2-small").model_dump_json(exclude_defaults=True)
    preset.write_text(text.replace('"gpt2-small"', json.dumps(name)), encoding="utf-8")
    return str(preset)


@pytest.mark.parametrize("name", ["=1+2", "+cmd", "-2+3", "@SUM(A1)", "\tx"])
def test_sweep_csv_prefixes_formula_names(tmp_path, name):
    done = run_in_process("sweep", preset_named(tmp_path, name), "-T", "512,1024", "-f", "csv")
    assert done.code == 0, done.stderr
    rows = list(csv.reader(io.StringIO(done.stdout)))
    cells = {row[0] for row in rows[1:]}
    assert len(cells) == 1 and not any(cell.startswith(safe_text.FORMULA_STARTS) for cell in cells)
    # The name as written, its tab shown as \t (which starts no formula), after any ' the cell needed.
    assert cells.pop().removeprefix("'") == safe_text.terminal(name)


def test_json_keeps_outside_text_exact(tmp_path):
    name = "=x\u202e"
    done = run_in_process("sweep", preset_named(tmp_path, name), "-T", "512,1024", "-f", "json")
    assert done.code == 0, done.stderr
    assert json.loads(done.stdout)["models"] == [name]


@pytest.mark.parametrize("output", ["table", "markdown"])
def test_bidi_and_c1_never_reach_the_terminal(tmp_path, output):
    done = run_in_process("estimate", preset_named(tmp_path, "x\u202ey\x9bz\x85"), "-f", output)
    assert done.code == 0, done.stderr
    assert not any(char in done.stdout + done.stderr for char in "\u202e\x9b\x85")
    assert "\\u202e" in done.stdout


def test_errors_never_print_controls_or_url_credentials():
    from tfcost.errors import redact_credentials

    assert redact_credentials("see https://me:pw@mirror.example/x") == "see https://***@mirror.example/x"
    done = run_in_process("estimate", "no-such\u202e-model")
    assert done.code != 0 and "\u202e" not in done.stderr and done.stderr.count("\n") == 1


def test_matplotlib_gets_escaped_labels_and_keeps_every_legend_entry(tmp_path):
    """Names that mathtext would parse (and fail on) and one the legend would drop: every line is in the legend,
    the text as written, and the chart is written under -f json too (where the report is not neutralized)."""
    pytest.importorskip("matplotlib", reason="charts need tfcost[plot]")
    names = ["$\\frac{a}{$", "_hidden", "plain"]
    presets = [preset_named(tmp_path, name, f"m{index}.yaml") for index, name in enumerate(names)]
    target = tmp_path / "chart.svg"
    done = run_in_process("sweep", *presets, "-T", "512,1024", "-f", "json", "--plot", str(target))
    assert done.code == 0, done.stderr
    assert target.is_file() and "Traceback" not in done.stderr

    from tfcost.costs import sweep as sweeping
    from tfcost.render import plot

    shapes = [load_model(path) for path in presets]
    from tfcost.schema import ServingSetup

    report = sweeping.sweep(shapes, [512, 1024], [1], ["attention_flops"], "bf16", True, None, ServingSetup())
    figure = plot.figure(report)
    legend = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert legend == ["\\$\\frac{a}{\\$", " _hidden", "plain"]


def test_a_plot_error_comes_before_any_table(tmp_path):
    pytest.importorskip("matplotlib", reason="charts need tfcost[plot]")
    (tmp_path / "a-folder.png").mkdir()
    for where in (tmp_path / "missing" / "chart.png", tmp_path / "a-folder.png"):
        done = run_in_process("sweep", "gpt2-small", "-T", "512,1024", "-f", "table", "--plot", str(where))
        assert done.code != 0 and done.stdout == "", done.stdout
        assert done.stderr.count("\n") == 1 and "--plot" in done.stderr


def test_a_tiny_terminal_still_gets_a_chart():
    pytest.importorskip("plotext", reason="charts need tfcost[plot]")
    done = run_in_process("sweep", "gpt2-small", "-T", "512..4096", env={"COLUMNS": "12"})
    assert done.code == 0, done.stderr
    chart = done.stdout.split("gpt2-small:")[0]
    # The line is drawn (plotext's braille marker, U+2800..U+28FF), not a blank area.
    assert any("\u2800" < char <= "\u28ff" for char in chart)
