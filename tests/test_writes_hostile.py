"""Every file tfcost writes goes through the one atomic writer (tfcost.readers.files.atomic_write; issue 37,
docs/security.md): a target that is a symbolic link is replaced, never written through, so the file it points to is
left as it was; no temporary file is left behind. The test walks every option that writes a file (found in the
commands' own source, so a new one cannot be missed) and every place in the package that could write one."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_in_process

from tfcost.costs import profiles

ROOT = Path(__file__).parent.parent
PRECIOUS = "a file the user keeps elsewhere\n"
pytest.importorskip("matplotlib", reason="--plot writes through matplotlib (tfcost[plot])")


def plot_sweep(target: Path) -> None:
    done = run_in_process("sweep", "gpt2-small", "--seq", "1k,2k", "--plot", str(target))
    assert done.code == 0, done.stderr


def plot_plan(target: Path) -> None:
    done = run_in_process("plan", "serve", "llama-3.1-8b", "--gpus", "2", "--plot", str(target))
    assert done.code == 0, done.stderr


def save_profile(target: Path) -> None:
    from test_profiles_hostile import RAW

    profiles.save(profiles.from_roofline(RAW, target.stem, "fp32", "2026-11-30"))


# (command, option) -> the writer, and the file names it is tried with.
WRITERS: dict[tuple[str, str], tuple[Callable[[Path], None], tuple[str, ...]]] = {
    ("sweep", "--plot"): (plot_sweep, ("chart.png", "chart.svg", "chart.html")),
    ("plan", "--plot"): (plot_plan, ("front.png", "front.svg", "front.html")),
    ("measure", "--save-profile"): (save_profile, ("box.yaml",)),
}


def test_every_option_that_writes_a_file_is_walked():
    """The options named --plot, --output or --save-profile in the commands' source are the ones WRITERS tries."""
    found = set()
    for source in (ROOT / "tfcost" / "cli").glob("*.py"):
        for option in re.findall(r'"(--plot|--output|--save-profile)"', source.read_text()):
            found.add((source.stem, option))
    assert found == set(WRITERS)


def test_nothing_in_the_package_writes_a_file_but_the_atomic_writer():
    """No write_text, write_bytes, open for writing, rename or savefig to a path outside atomic_write: the only
    others are the writability probe of --save-profile (an empty file made and removed) and the Hub cache's
    snapshot link (a symbolic link made beside it and renamed into place)."""
    allowed = {("readers/files.py", "mkstemp"), ("readers/files.py", "os.replace"), ("readers/files.py", "fdopen"),
               ("costs/profiles.py", "mkstemp"), ("readers/hub.py", "os.replace")}  # fmt: skip
    writes = re.compile(r"\.write_text\(|\.write_bytes\(|os\.replace\(|os\.rename\(|mkstemp\(|fdopen\(|"
                        r"open\([^)]*[\"'][wax]b?[\"']|savefig\((?!svg|temporary)")  # fmt: skip
    found = set()
    for source in (ROOT / "tfcost").rglob("*.py"):
        for line in source.read_text().splitlines():
            for match in writes.finditer(line):
                word = match.group(0).strip(".(").split("(")[0]
                found.add((source.relative_to(ROOT / "tfcost").as_posix(), word))
    assert found <= allowed, found - allowed


@pytest.mark.parametrize(("writer", "name"), [(key, name) for key, (_, names) in WRITERS.items() for name in names])
def test_a_link_at_the_target_is_replaced_not_written_through(tmp_path, monkeypatch, writer, name):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    write, _ = WRITERS[writer]
    folder = tmp_path / "out" if writer[0] != "measure" else tmp_path / "config" / "tfcost" / "profiles"
    folder.mkdir(parents=True)
    victim = tmp_path / "elsewhere.txt"
    victim.write_text(PRECIOUS)
    victim.chmod(0o600)
    target = folder / name
    target.symlink_to(victim)
    write(target)
    assert victim.read_text() == PRECIOUS  # the file the link pointed to is untouched
    assert not target.is_symlink() and target.is_file() and target.stat().st_size > 0
    assert sorted(path.name for path in folder.iterdir()) == [name]  # no temporary file left


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_new_file_gets_the_mode_a_plain_write_would_give(tmp_path, monkeypatch, writer):
    import os

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    write, names = WRITERS[writer]
    folder = tmp_path / "out" if writer[0] != "measure" else tmp_path / "config" / "tfcost" / "profiles"
    folder.mkdir(parents=True)
    old = os.umask(0o022)
    try:
        write(folder / names[0])
    finally:
        os.umask(old)
    assert (folder / names[0]).stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("command", [["sweep", "gpt2-small", "--seq", "1k,2k"], ["plan", "serve", "llama-3.1-8b"]])
def test_matplotlibs_own_warnings_never_reach_stderr(tmp_path, command):
    """A HOME with no writable folder (here a file: no folder can be made under it, root or not): matplotlib logs
    two warnings quoting the path while it loads; tfcost says one note of its own instead, and writes the chart."""
    from conftest import run_tfcost

    home = tmp_path / "home-is-a-file"
    home.write_text("")
    target = tmp_path / "chart.png"
    run = run_tfcost(*command, "--plot", str(target), env={"HOME": str(home)})
    assert run.code == 0, run.stderr
    assert "matplotlib warned 2 time(s) while loading" in run.stderr
    assert "Matplotlib" not in run.stderr and str(home) not in run.stderr and "mkdir" not in run.stderr
    assert target.stat().st_size > 0
