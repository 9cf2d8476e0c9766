"""Progress on stderr for the long commands (issue 38): shown only where stderr is a terminal, never with --quiet,
never on stdout."""

from __future__ import annotations

import io

import pytest

from tfcost.render import progress


class Terminal(io.StringIO):
    """A stream that says it is a terminal, as a user's stderr does."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("terminal", "quiet", "drawn"), [(True, False, True), (True, True, False), (False, False, False)]
)
def test_status_is_drawn_only_on_a_terminal_and_not_when_quiet(monkeypatch, terminal, quiet, drawn):
    err = Terminal() if terminal else io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    with progress.status("searching the training layouts", quiet):
        pass
    assert ("searching the training layouts" in err.getvalue()) == drawn


def test_steps_name_each_step_on_a_terminal(monkeypatch):
    err = Terminal()
    monkeypatch.setattr("sys.stderr", err)
    with progress.steps(2) as begin:
        begin("T=1,024 forward")
        begin("T=2,048 forward")
    assert "measuring" in err.getvalue() or "T=" in err.getvalue()
    quiet = Terminal()
    monkeypatch.setattr("sys.stderr", quiet)
    with progress.steps(2, quiet=True) as begin:
        begin("T=1,024 forward")
    assert quiet.getvalue() == ""


@pytest.mark.parametrize("command", [("plan", "train", "llama-3-8b", "--gpus", "8", "--top", "2"),
                                     ("plan", "serve", "llama-3-8b", "--gpus", "2", "--top", "2")])  # fmt: skip
def test_plan_is_silent_off_a_terminal_and_takes_quiet(tfcost, command):
    """Tests capture stderr (no terminal): nothing but what the command says; --quiet is accepted and changes
    nothing else."""
    run, hushed = tfcost(*command), tfcost(*command, "--quiet")
    assert run.code == hushed.code == 0 and run.stderr == hushed.stderr == ""
    assert run.stdout == hushed.stdout


def test_the_python_api_prints_nothing_on_stderr(capsys, tfcost):
    """docs/api.md: "Nothing is printed". --gpu h100 is taken as h100-sxm: the command says so in a note, the API
    returns it in the report (its gpu) and prints nothing."""
    import tfcost as api

    report = api.serve("llama-3-8b", gpu="h100")
    assert report.gpu == "h100-sxm"
    assert capsys.readouterr().err == ""
    run = tfcost("serve", "llama-3-8b", "--gpu", "h100", "-f", "json")
    assert run.stderr == "tfcost: note: --gpu h100 is taken as h100-sxm (`tfcost gpus` lists the others)\n"
    api.train("llama-3-8b", gpu="h100", gpus=8)  # after a command: the command's listener is gone
    assert capsys.readouterr().err == ""
