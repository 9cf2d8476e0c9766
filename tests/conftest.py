"""Shared fixtures: shapes built from the shipped presets, and a CLI runner that sees what a user sees."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

import pytest

from tfcost.presets import load_model
from tfcost.schema import ModelShape


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
        env={"COLUMNS": "120", "NO_COLOR": "1", "PATH": "/usr/bin:/bin", **(env or {})},
        timeout=60,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)


@pytest.fixture(scope="session")
def tfcost():
    return run_tfcost
