"""The CLI as a user runs it: real processes, exit codes, stdout and stderr."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CHILD_LIMIT_S, run_in_process, run_tfcost

from tfcost.readers.presets import load_model
from tfcost.reports.estimate import estimate
from tfcost.schema import Workload


def test_estimate_json_holds_the_lessons_numbers(tfcost):
    run = tfcost("estimate", "gpt2-small", "--seq", "1024", "--batch", "1", "--dtype", "bf16", "--format", "json")
    assert run.code == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["params"]["total"] == 124_439_808
    assert out["params"]["per_layer"] == 7_087_872
    assert out["params"]["embedding"] == 39_383_808
    assert out["params"]["non_embedding"] == out["params"]["total"] - out["params"]["embedding"]
    assert round(out["flops"]["six_n_per_token"] / 1e9, 2) == 0.51
    assert out["flops"]["attention_scores_per_token"] == 56_623_104
    assert out["flops"]["forward_per_sequence"] == 291_648_307_200
    assert out["flops"]["training_per_sequence"] == 3 * 291_648_307_200
    assert out["kv_cache"]["bytes_per_token"] == 36_864
    assert out["kv_cache"]["bytes"] == 37_748_736
    assert out["score_matrix"]["entries_per_head"] == 1_048_576
    assert out["score_matrix"]["bytes"] == 12 * 12 * 1_048_576 * 2


def test_json_is_the_core_result(tfcost):
    run = tfcost("estimate", "llama-3-8b", "--seq", "4096", "--batch", "8", "--dtype", "fp8", "--causal", "-f", "json")
    expected = estimate(load_model("llama-3-8b"), Workload(seq_len=4096, batch=8, dtype="fp8", causal=True))
    out = json.loads(run.stdout)
    assert out.pop("tfcost_version")
    assert out == expected.model_dump(mode="json")


def test_long_context_score_entries(tfcost):
    run = tfcost("estimate", "gpt2-small", "--seq", "32768", "-f", "json")
    assert json.loads(run.stdout)["score_matrix"]["entries_per_head"] == 1_073_741_824


def test_table_shows_labelled_units(tfcost):
    run = tfcost("estimate", "gpt2-small")
    assert run.code == 0
    for text in ("124,439,808", "124.44 M", "36.00 MiB", "291.65 GFLOP", "56,623,104", "1,048,576"):
        assert text in run.stdout


def test_compare_puts_models_in_columns(tfcost):
    run = tfcost("compare", "gpt2-small", "llama-2-7b", "qwen2.5-0.5b")
    assert run.code == 0, run.stderr
    header = next(line for line in run.stdout.splitlines() if "gpt2-small" in line)
    assert "llama-2-7b" in header and "qwen2.5-0.5b" in header
    assert re.search(r"total parameters .*124\.44 M .*6\.74 G .*494\.03 M", run.stdout)
    data = json.loads(tfcost("compare", "gpt2-small", "llama-2-7b", "-f", "json").stdout)
    assert [r["params"]["total"] for r in data["results"]] == [124_439_808, 6_738_415_616]


def test_list_names_every_preset(tfcost):
    run = tfcost("list")
    assert run.code == 0
    for name in ("gpt2-small", "llama-3.1-70b", "qwen2.5-7b"):
        assert name in run.stdout


def test_version_and_help(tfcost):
    from tfcost import __version__

    assert tfcost("--version").stdout.strip() == f"tfcost {__version__}"
    for command in ("estimate", "compare", "list", "measure"):
        run = tfcost(command, "--help")
        assert run.code == 0 and "Usage" in run.stdout


def one_line_error(run, code: int) -> str:
    assert run.code == code, (run.code, run.stdout, run.stderr)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("tfcost: error: ")
    assert "Traceback" not in run.stderr
    return lines[0]


def test_bad_input_gets_one_line_and_the_right_code(tfcost, tmp_path):
    assert "did you mean gpt2-small" in one_line_error(tfcost("estimate", "gpt2-smal"), 1)
    assert "--seq" in one_line_error(tfcost("estimate", "gpt2-small", "--seq", "0"), 2)
    assert "--batch" in one_line_error(tfcost("estimate", "gpt2-small", "--batch", "-3"), 2)
    assert "--dtype" in one_line_error(tfcost("estimate", "gpt2-small", "--dtype", "fp9"), 2)
    assert "no such file" in one_line_error(tfcost("estimate", str(tmp_path / "x.yaml")), 1)
    bad = tmp_path / "bad.yaml"
    bad.write_text("d_model: [")
    assert "malformed YAML" in one_line_error(tfcost("estimate", str(bad)), 1)
    assert bad.read_text() == "d_model: ["  # nothing the user had is changed


def test_bare_command_shows_help(tfcost):
    run = tfcost()
    assert run.code == 2 and "Commands" in run.stderr and "Traceback" not in run.stderr


def test_debug_shows_the_traceback():
    run = run_tfcost("estimate", "gpt2-smal", env={"TFCOST_DEBUG": "1"})  # a real process: the traceback is its end
    assert run.code != 0 and "Traceback" in run.stderr


NO_TORCH_PROBE = """
import runpy, sys
asked = []
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "torch":
            asked.append(name)
        return None
sys.meta_path.insert(0, Watch())
sys.argv = ["tfcost", *sys.argv[1:]]
try:
    runpy.run_module("tfcost", run_name="__main__")
except SystemExit:
    pass
print("TORCH-ASKED" if asked else "TORCH-CLEAN")
"""


@pytest.mark.parametrize(
    "args",
    [["--help"], ["estimate", "gpt2-small"], ["compare", "gpt2-small", "gpt2-xl"], ["measure", "--help"], ["measure"]],
)
def test_commands_never_import_torch(args):
    # A finder that records any attempt to import torch, installed or not.
    done = subprocess.run([sys.executable, "-c", NO_TORCH_PROBE, *args], capture_output=True, text=True, check=False)
    assert done.stdout.strip().splitlines()[-1] == "TORCH-CLEAN", done.stderr


def test_compare_leaves_breakdowns_to_a_flag(tfcost):
    short = tfcost("compare", "gpt2-small", "llama-2-7b")
    assert short.code == 0 and "embedding/tokens" not in short.stdout and "--breakdown" in short.stdout
    full = tfcost("compare", "gpt2-small", "llama-2-7b", "--breakdown")
    assert full.code == 0 and re.search(r"embedding/tokens .*38\.60 M .*131\.07 M", full.stdout)


def test_every_command_has_help_and_a_row_in_the_command_table(tfcost):
    import typer.main

    from tfcost.cli.main import whole_app

    table = (Path(__file__).parent.parent / "docs" / "commands.md").read_text(encoding="utf-8")
    commands = sorted(typer.main.get_command(whole_app()).commands)  # type: ignore[attr-defined]
    assert {"list", "estimate", "compare", "import", "gpus", "train", "serve", "measure"} <= set(commands)
    for command in commands:
        run = tfcost(command, "--help")
        assert run.code == 0 and "Usage" in run.stdout, command
        assert f"| `tfcost {command}" in table, f"{command} has no row in docs/commands.md's command table"


def test_docs_show_the_lineup_comparison():
    """docs/commands.md's side-by-side of four 2025-26 models is what the command prints at 120 columns."""
    args = ("compare", "gpt-oss-120b", "qwen3-235b-a22b", "deepseek-v3.2", "llama-4-maverick", "--seq", "32768")
    printed = "\n".join(line.rstrip() for line in run_in_process(*args).stdout.strip().splitlines())
    doc = (Path(__file__).parent.parent / "docs" / "commands.md").read_text(encoding="utf-8")
    assert f"`tfcost {' '.join(args)}`" in doc
    assert printed in doc


def test_the_narrowed_app_is_the_whole_app_for_its_command():
    """main() registers only the command asked for (start-up time); its help and its parameters must be exactly
    the whole app's, for every command."""
    from typer.main import get_command

    from tfcost.cli.main import app_for, command_name, whole_app

    app = whole_app()
    whole = get_command(app)
    for info in app.registered_commands:
        name = command_name(info)
        narrow = get_command(app_for([name, "--help"]))
        assert list(narrow.commands) == [name]  # type: ignore[attr-defined]
        mine, theirs = narrow.commands[name], whole.commands[name]  # type: ignore[attr-defined]
        assert [param.opts for param in mine.params] == [param.opts for param in theirs.params]
        assert mine.help == theirs.help
    for group in app.registered_groups:  # `tfcost plan`: the group alone, with all its sub-commands
        name = group.typer_instance.info.name
        narrow = get_command(app_for([name, "train", "--help"]))
        assert list(narrow.commands) == [name]  # type: ignore[attr-defined]
        assert list(narrow.commands[name].commands) == list(whole.commands[name].commands)  # type: ignore[attr-defined]
    assert app_for(["estimat"]) is app and app_for(["--version"]) is app and app_for([]) is app


def test_each_command_is_registered_by_the_module_main_imports_for_it():
    """MODULE_OF names, for every command and group, the one module whose import registers it: what a run of that
    command imports alone."""
    from tfcost.cli.main import COMMAND_MODULES, MODULE_OF, command_name, group_name, whole_app

    app = whole_app()
    registered = {command_name(info): info.callback.__module__ for info in app.registered_commands}
    registered |= {str(group_name(group)): "tfcost.cli.plan" for group in app.registered_groups}
    assert {name: f"tfcost.cli.{module}" for name, module in MODULE_OF.items()} == registered
    assert set(MODULE_OF.values()) == set(COMMAND_MODULES)


def test_a_command_imports_its_own_module_alone():
    """`tfcost estimate` loads estimate.py, not the other commands' modules; --help loads them all."""
    code = (
        "import sys\n"
        "from tfcost.cli.main import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('tfcost.cli.') and m not in "
        "('tfcost.cli.main', 'tfcost.cli.app', 'tfcost.cli.options')))"
    )
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}
    one = subprocess.run([sys.executable, "-c", code, "estimate", "gpt2-small"], capture_output=True, text=True,
                         env=env, timeout=CHILD_LIMIT_S, check=True)  # fmt: skip
    assert one.stdout.strip().splitlines()[-1] == "['tfcost.cli.estimate']"
    everything = subprocess.run([sys.executable, "-c", code, "--help"], capture_output=True, text=True, env=env,
                                timeout=CHILD_LIMIT_S, check=True)  # fmt: skip
    modules = "['tfcost.cli.check', 'tfcost.cli.estimate', 'tfcost.cli.fit', 'tfcost.cli.inspect', "
    modules += "'tfcost.cli.listing', 'tfcost.cli.measure', 'tfcost.cli.plan', 'tfcost.cli.serve', 'tfcost.cli.sweep', "
    modules += "'tfcost.cli.train']"
    assert everything.stdout.strip().splitlines()[-1] == modules


def test_help_lists_the_commands_in_order_whichever_ran_first(tfcost):
    """A process that ran `gpus`, then `compare`, imported listing.py and estimate.py in that order: --help still
    lists every command in the order of a fresh process's --help."""
    fresh = subprocess.run([sys.executable, "-m", "tfcost", "--help"], capture_output=True, text=True,
                           env={**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}, timeout=CHILD_LIMIT_S,
                           check=True)  # fmt: skip
    assert tfcost("compare", "gpt2-small", "gpt2-small", "-f", "csv").code == 0
    assert tfcost("gpus", "-f", "csv").code == 0
    after = tfcost("--help")
    # The same text after the usage line, which names the program as the process was started (python -m ...).
    assert after.code == 0 and after.stdout.split("\n", 1)[1] == fresh.stdout.split("\n", 1)[1]
    names = re.findall(r"^  ([a-z][\w-]*) ", fresh.stdout.split("Commands:")[1], re.MULTILINE)
    assert names[:5] == ["list", "gpus", "frameworks", "estimate", "compare"] and "inspect" in names
