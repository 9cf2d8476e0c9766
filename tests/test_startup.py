"""Start-up (benchmarks/run.py): what a command does not need, it does not import. Each probe runs the command in a
fresh interpreter (this one has imported everything) and reports which modules it loaded."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest
from conftest import CHILD_LIMIT_S

PROBE = """
import io, sys, contextlib
from tfcost.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(sorted(name for name in ("yaml", "importlib.metadata", "rich") if name in sys.modules))
"""


def loaded(args: list[str], **env: str) -> list[str]:
    environment = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1", **env}
    environment.pop("PYDANTIC_DISABLE_PLUGINS", None)
    environment.update(env)
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=environment,
                          timeout=CHILD_LIMIT_S, check=True)  # fmt: skip
    return ast.literal_eval(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "args",
    [
        ["estimate", "gpt2-small"],
        ["compare", "gpt2-small", "llama-3-8b", "--format", "json"],
        ["train", "llama-3-8b", "--gpus", "8"],
        ["serve", "llama-3-8b", "--batch", "4"],
        ["gpus"],
        ["list", "--family", "qwen3"],
    ],
)
def test_shipped_presets_and_gpus_are_read_and_printed_without_yaml_rich_or_the_plugin_loader(args):
    """The shipped files come from their Python literals (tfcost/readers/packaged.py), so PyYAML is not imported;
    pydantic's plugin loader, which imports importlib.metadata, is not imported while plugins are disabled; and a
    table printed to no terminal (here a StringIO) is written without rich (tfcost.render.layout.PlainTable)."""
    assert loaded(args) == []


def test_a_table_rich_must_lay_out_still_gets_rich():
    """Wider than COLUMNS: rich wraps its columns."""
    assert loaded(["estimate", "gpt2-small"], COLUMNS="30") == ["rich"]


def test_a_users_file_is_still_read_with_yaml(tmp_path):
    preset = tmp_path / "mine.yaml"
    preset.write_text("d_model: 64\nn_layers: 2\nn_heads: 4\nvocab_size: 100\nd_ff: 256\n", encoding="utf-8")
    assert loaded(["estimate", str(preset)]) == ["yaml"]


def test_plugins_a_user_enables_are_still_looked_for():
    """PYDANTIC_DISABLE_PLUGINS set to anything but pydantic's three 'all disabled' values (here: one plugin's
    name) leaves pydantic's own loader in charge, and it reads the installed packages' entry points."""
    assert loaded(["estimate", "gpt2-small"], PYDANTIC_DISABLE_PLUGINS="some-plugin") == ["importlib.metadata"]


def test_the_stand_in_hands_over_to_pydantics_loader_when_plugins_are_enabled_later():
    code = """
import os, sys
os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
from tfcost.cli.main import PLUGIN_LOADER, skip_plugin_loader
skip_plugin_loader()
stand_in = sys.modules[PLUGIN_LOADER]
from pydantic.plugin._loader import get_plugins
print(list(get_plugins()), "importlib.metadata" in sys.modules)
os.environ["PYDANTIC_DISABLE_PLUGINS"] = "some-plugin"
from pydantic.plugin._loader import get_plugins
print(list(get_plugins()) == list(sys.modules[PLUGIN_LOADER].get_plugins()), sys.modules[PLUGIN_LOADER] is stand_in,
      "importlib.metadata" in sys.modules)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=CHILD_LIMIT_S, check=True
    )
    assert done.stdout.splitlines() == ["[] False", "True False True"]


def test_pydantics_loader_returns_no_plugins_for_the_values_the_stand_in_answers():
    """The stand-in answers () for exactly the values for which pydantic's own get_plugins does."""
    import inspect

    import pydantic.plugin._loader as loader

    from tfcost.cli.main import PLUGINS_DISABLED

    assert f"elif disabled_plugins in {PLUGINS_DISABLED!r}:\n        return ()" in inspect.getsource(loader.get_plugins)
