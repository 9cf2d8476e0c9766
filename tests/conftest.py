"""Shared fixtures: shapes built from the shipped presets, CLI runners that see what a user sees, and the
hypothesis profile of the property tests."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, settings

from tfcost.cli.main import main
from tfcost.readers.presets import load_model
from tfcost.schema import ModelShape

# Property tests are derandomized: every run tries the same examples, so CI is repeatable and a failure reproduces.
# No example database (a run replays nothing but its seed), no per-example deadline and no health check on how
# fast examples are generated: the suite must pass on a loaded machine (one busy core, a user's laptop), so nothing
# in it depends on the machine's speed. Two profiles (strategies.examples scales each test's count): the default,
# fast, tries a tenth of the examples; TFCOST_PROFILE=thorough tries them all.
settings.register_profile(
    "tfcost",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("tfcost")

# The commands' own defaults are what a user at a 120-column terminal without colour sees. The Hub's deadline is
# its largest (TFCOST_HUB_TIMEOUT, 600 s) for the loopback servers the tests start, so that a busy machine is never
# taken for a silent server; the tests of the deadline itself set their own.
CLI_ENV = {"COLUMNS": "120", "NO_COLOR": "1", "TFCOST_HUB_TIMEOUT": "600"}

# A child process (a fresh interpreter, a subprocess probe) is given this long: only a hang reaches it, never a
# slow machine. Speed is measured in benchmarks/, never asserted here.
CHILD_LIMIT_S = 1800


@pytest.fixture
def gpt2() -> ModelShape:
    return load_model("gpt2-small")


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str


def run_tfcost(*args: str, env: dict[str, str] | None = None) -> Run:
    """Run the real console entry point in a fresh interpreter, as a user's shell would."""
    done = subprocess.run(
        [sys.executable, "-m", "tfcost", *args],
        capture_output=True,
        text=True,
        env={**CLI_ENV, "PATH": "/usr/bin:/bin", **(env or {})},
        timeout=CHILD_LIMIT_S,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)


@pytest.fixture(scope="session")
def tfcost():
    """The CLI as the tests drive it: main() in this interpreter (a fresh one costs a third of a second a run);
    run_tfcost, used by a few smoke tests, covers the real console entry point."""
    return run_in_process


def run_in_process(*args: str, env: dict[str, str] | None = None) -> Run:
    """main(argv) in this interpreter with stdout and stderr captured and the environment `env` adds to CLI_ENV
    (TFCOST_DEBUG unset): a thousand command lines in seconds."""
    out, err = io.StringIO(), io.StringIO()
    changes = {"TFCOST_DEBUG": None, **CLI_ENV, **(env or {})}
    saved = {key: os.environ.get(key) for key in changes}
    for key, value in changes.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    try:
        with redirect_stdout(out), redirect_stderr(err):
            main(list(args))
    except SystemExit as done:
        code = 0 if done.code is None else done.code if isinstance(done.code, int) else 1
    else:
        raise AssertionError(f"main{args} returned without exiting")
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return Run(code, out.getvalue(), err.getvalue())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under TFCOST_PROFILE=thorough every property test is a thorough check too, so CI's second run
    (`TFCOST_PROFILE=thorough pytest -m thorough`) repeats them with all their examples."""
    if os.environ.get("TFCOST_PROFILE") != "thorough":
        return
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.thorough)


@pytest.fixture
def gptj_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    """GPT-J as a model_type tfcost has no reader for: the transformers engine's tests were written on it before
    issue 38 gave GPT-J an analytic reader, and its small config keeps them fast. Hiding the reader (in this process)
    sends it to the engine again."""
    from tfcost.readers import hf_config

    monkeypatch.delitem(hf_config.FAMILIES, "gptj")
