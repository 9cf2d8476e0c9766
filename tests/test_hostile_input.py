"""Hostile input, round two (issue 16): text from files that tries to drive the terminal, characters the terminal
cannot encode, config fields that broke the readers, YAML that means something else than it seems, numbers that
overflow, output that cannot be written, and `measure` requests too large for the machine.

Each test here failed before its fix. The promise is the one in test_bad_input.py: success with output, or one
line `tfcost: error: ...` on stderr, and nothing printed that tfcost did not mean to print.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import CHILD_LIMIT_S, run_in_process, run_tfcost
from test_bad_input import check_contract, error_line

from tfcost.errors import TfcostError
from tfcost.readers.hf_config import shape_mapping
from tfcost.readers.presets import presets_dir

CONFIGS = Path(__file__).parent / "data" / "hf_configs"

# One of each kind of sequence a hostile name could carry.
SEQUENCES = {
    "clear screen (CSI)": "\x1b[2J\x1b[H",
    "cursor move (CSI)": "\x1b[5A\x1b[10C",
    "window title (OSC)": "\x1b]0;pwned\x07",
    "clipboard write (OSC 52)": "\x1b]52;c;cm0gLXJmIH4=\x07",
    "C1 CSI and OSC": "\x9b2J\x9d0;title\x9c",
    "bidi overrides": "\u202egnp.exe\u202c\u2066x\u2069\u200f",
    "backspace and carriage return": "\x08\x08\rforged",
}
HOSTILE = "evil" + "".join(SEQUENCES.values())
# What must never reach the terminal: C0 controls but the newline, DEL, C1 controls, bidi controls.
FORBIDDEN = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture(scope="module")
def hostile_sources(tmp_path_factory) -> dict[str, Path]:
    """A config.json whose _name_or_path, and a YAML preset (in a file whose name) whose name and source, carry
    every sequence."""
    folder = tmp_path_factory.mktemp("hostile")
    config = json.loads((CONFIGS / "gpt2-small.json").read_text())
    config["_name_or_path"] = HOSTILE
    config_path = folder / "config.json"
    config_path.write_text(json.dumps(config))
    preset = yaml.safe_load((presets_dir() / "models" / "gpt2-small.yaml").read_text())
    preset.update(name=HOSTILE, source=HOSTILE)
    preset_path = folder / f"m{SEQUENCES['clear screen (CSI)']}.yaml"  # the path is printed too (measure)
    preset_path.write_text(yaml.safe_dump(preset))
    return {"config": config_path, "preset": preset_path}


COMMANDS = [
    *(
        [*argv, "--format", output]
        for argv in (
            ["estimate", "{}"],
            ["compare", "{}", "gpt2-small", "--breakdown"],
            ["train", "{}", "--tokens", "1e9"],
            ["serve", "{}"],
        )
        for output in ("table", "json")
    ),
    ["import", "{}"],  # writes YAML, its only format
]


@pytest.mark.parametrize("source", ["config", "preset"])
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_no_escape_sequence_reaches_the_output(hostile_sources, source, command):
    argv = [part.format(hostile_sources[source]) for part in command]
    run = run_in_process(*argv)
    assert run.code == 0, run
    for stream in (run.stdout, run.stderr):
        assert not FORBIDDEN.search(stream), FORBIDDEN.findall(stream)
    if argv[0] == "import":  # neutralised, not lost: the YAML reads back as the same name
        assert yaml.safe_load(run.stdout)["name"] == HOSTILE


@pytest.mark.parametrize("output", ["table", "json", "csv"])
def test_no_escape_sequence_reaches_measure_output(hostile_sources, output):
    pytest.importorskip("torch")
    preset = str(hostile_sources["preset"])
    run = run_in_process("measure", preset, "--device", "cpu", "--seq", "16", "--repeats", "1", "--format", output)
    assert run.code == 0, run
    assert not FORBIDDEN.search(run.stdout + run.stderr), FORBIDDEN.findall(run.stdout + run.stderr)


def test_error_lines_are_neutralised_too(hostile_sources):
    missing = str(hostile_sources["preset"]).replace(".yaml", "-missing.yaml")
    line = error_line(run_in_process("estimate", missing), 1)
    assert not FORBIDDEN.search(line) and "\\x1b[2J" in line


# ---- characters the terminal cannot encode --------------------------------------------------------------------


def test_unencodable_names_print_with_escapes(tmp_path):
    config = json.loads((CONFIGS / "gpt2-small.json").read_text())
    config["_name_or_path"] = "caf\u00e9-\ud800"  # a lone surrogate, and an accent an ASCII terminal lacks
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))  # JSON writes both as \u escapes
    for env in ({}, {"PYTHONIOENCODING": "ascii"}, {"PYTHONIOENCODING": "utf-8"}):
        run = run_tfcost("estimate", str(path), env=env)
        check_contract(run)
        assert run.code == 0 and "\\ud800" in run.stdout, run


def test_latin1_file_name_is_named_with_an_escape(tmp_path):
    name = os.fsencode(tmp_path) + b"/mod\xe8le.yaml"  # Latin-1: not UTF-8, so Python holds it as a surrogate
    with open(name, "wb") as handle:
        handle.write(re.sub(rb"(?m)^name:.*$", b"", (presets_dir() / "models" / "gpt2-small.yaml").read_bytes()))
    missing = os.fsencode(tmp_path) + b"/absent\xe8.yaml"
    for argv in (["estimate", os.fsdecode(name)], ["estimate", os.fsdecode(missing)]):
        for env in ({"LC_ALL": "C.UTF-8"}, {"PYTHONIOENCODING": "ascii"}):  # a UTF-8 terminal's strict encoder
            run = run_tfcost(*argv, env=env)
            check_contract(run)
            assert "\\udce8" in run.stdout + run.stderr  # the name or file, its undecodable byte an escape


# ---- reader bugs -----------------------------------------------------------------------------------------------


def qwen_moe(**changes: object) -> dict:
    return {**json.loads((CONFIGS / "qwen1.5-moe-a2.7b.json").read_text()), **changes}


@pytest.mark.parametrize("step", [0, -2])
def test_decoder_sparse_step_below_one_is_named_not_divided_by(step):
    with pytest.raises(TfcostError) as caught:
        shape_mapping(qwen_moe(decoder_sparse_step=step))
    assert f"'decoder_sparse_step' should be a positive integer, not {step}" in str(caught.value)


def test_mlp_only_layers_is_read_in_linear_time():
    """Searching the list once per layer took seconds at 40,000 layers (n^2 / 4 comparisons); a set compares each
    listed layer once. Counted, not timed: the comparisons the reader makes, through ints that count them."""
    compared = [0]

    class Counted(int):
        def __eq__(self, other: object) -> bool:
            compared[0] += 1
            return int.__eq__(self, other)

        __hash__ = int.__hash__

    layers = 40_000
    listed = [Counted(i) for i in range(0, layers, 2)]
    mapping = shape_mapping(qwen_moe(num_hidden_layers=layers, mlp_only_layers=listed))
    assert mapping["moe"]["dense_layers"] == list(range(0, layers, 2))
    assert compared[0] <= layers  # a search of the list would make about 200 million


@pytest.mark.parametrize("factor", [10**400, 1e400])
def test_huge_partial_rotary_factor_is_refused(tmp_path, factor):
    config = json.loads((CONFIGS / "phi-3-mini.json").read_text())
    config["partial_rotary_factor"] = factor
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config).replace("Infinity", "1e400"))
    assert "'partial_rotary_factor' should be a finite number" in error_line(run_in_process("estimate", str(path)), 1)


# ---- YAML that silently means something else -------------------------------------------------------------------

GOOD_YAML = (presets_dir() / "models" / "gpt2-small.yaml").read_text()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("n_layers: 12", "key 'n_layers' is written twice"),
        ("n_layers: 012", "'012' means different things in YAML 1.1 and 1.2"),
        ("max_seq_len: 1:30", "'1:30' means different things"),
        ("n_heads: 0b1100", "'0b1100' means different things"),
        ("tied_embeddings: yes", "'yes' means different things"),
        ("tied_embeddings: off", "'off' means different things"),
    ],
)
def test_yaml_11_surprises_and_repeated_keys_are_refused(tmp_path, line, expected):
    text = "\n".join(row for row in GOOD_YAML.splitlines() if not row.startswith(line.split(":")[0] + ":"))
    if "twice" in expected:
        text = GOOD_YAML
    path = tmp_path / "model.yaml"
    path.write_text(f"{text}\n{line}\n")
    assert expected in error_line(run_in_process("estimate", str(path)), 1)


def test_yaml_11_forms_in_set_are_refused_and_plain_numbers_still_read():
    assert "cannot read the value '012'" in error_line(
        run_in_process("estimate", "gpt2-small", "--set", "n_layers=012"), 2
    )
    run = run_in_process(
        "estimate", "gpt2-small", "--set", "n_layers=0x0c", "--set", "tied_embeddings=true", "-f", "json"
    )
    assert run.code == 0 and json.loads(run.stdout)["params"]["total"] == 124_439_808, run


def test_repeated_json_keys_are_refused(tmp_path):
    text = (CONFIGS / "gpt2-small.json").read_text().rstrip().removesuffix("}") + ', "n_layer": 6}'
    path = tmp_path / "config.json"
    path.write_text(text)
    assert "key 'n_layer' is written twice" in error_line(run_in_process("estimate", str(path)), 1)


# ---- numbers -----------------------------------------------------------------------------------------------------


def test_decimal_comma_in_tokens_is_refused_not_read_as_fifteen_trillion():
    assert "a comma may only group thousands" in error_line(
        run_in_process("train", "gpt2-small", "--tokens", "1,5T"), 2
    )
    run = run_in_process("train", "gpt2-small", "--tokens", "300,000,000,000", "-f", "json")
    assert json.loads(run.stdout)["setup"]["tokens"] == 300_000_000_000


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["train", "gpt2-small", "--mfu", "5e-324"], "--mfu"),
        (["train", "llama-2-7b", "--price-per-gpu-hour", "1e308"], "--price-per-gpu-hour"),
        (["serve", "gpt2-small", "--compute-efficiency", "1e-320"], "--compute-efficiency"),
    ],
)
@pytest.mark.parametrize("output", ["table", "json"])
def test_tables_refuse_infinity_as_json_does(argv, option, output):
    # The assumptions are bounded (docs/security.md): an option that would overflow a result is refused first,
    # by any format, as a usage error naming it.
    assert option in error_line(run_in_process(*argv, "--format", output), 2)


# ---- output that cannot be written -----------------------------------------------------------------------------


def run_shell(command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=False, timeout=CHILD_LIMIT_S,
                          env={"PATH": "/usr/bin:/bin", **(env or {})}, cwd=Path(__file__).parent.parent)  # fmt: skip


@pytest.mark.parametrize("output", ["table", "json"])
def test_closed_stdout_and_full_disk_are_errors(output):
    python = sys.executable
    closed = run_shell(f"'{python}' -m tfcost gpus -f {output} >&-")
    assert (
        closed.returncode == 1
        and closed.stderr == "tfcost: error: cannot write the output: standard output is closed\n"
    )
    if Path("/dev/full").exists():
        full = run_shell(f"'{python}' -m tfcost gpus -f {output} > /dev/full")
        assert (
            full.returncode == 1 and full.stderr == "tfcost: error: cannot write the output: No space left on device\n"
        )


def test_zero_columns_keeps_the_notes():
    run = run_tfcost("gpus", env={"COLUMNS": "0"})
    assert run.code == 0 and "no verified figure" in run.stdout, run


# ---- measure: sizes and memory ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seq", ["\u00b2", "1" * 5001, "0", str(10**19)])
def test_measure_seq_outside_integers_is_one_line(seq):
    assert "--seq: expected positive integers" in error_line(run_in_process("measure", "gpt2-small", "--seq", seq), 2)


@pytest.mark.parametrize(
    "argv",
    [
        ["--seq", "10000000", "--backend", "math"],  # 10^7 tokens: 2.4 PB of scores, 15 GB and 83 s before
        ["--seq", "1024", "--batch", str(10**18)],
        ["--heads", "1", "--head-dim", str(10**18), "--seq", "16"],
    ],
)
def test_measure_refuses_what_cannot_fit_before_allocating(argv, monkeypatch):
    """Before torch is even imported (it is made unimportable here), so nothing is allocated: not timed."""
    monkeypatch.setitem(sys.modules, "torch", None)
    model = [] if "--heads" in argv else ["gpt2-small"]
    line = error_line(run_in_process("measure", *model, "--device", "cpu", *argv), 1)
    assert re.search(r"needs at least [\d,]+ bytes .*; this machine has [\d,]+ bytes .* free", line), line


def test_measure_auto_refuses_before_torch_without_a_gpu_driver(monkeypatch):
    """The default `--device auto` on a machine with no GPU driver runs on the CPU, so it refuses as fast."""
    from tfcost.hardware import host as free_memory

    monkeypatch.setattr(free_memory, "GPU_DEVICE_NODES", ("/nonexistent/nvidiactl",))
    monkeypatch.setitem(sys.modules, "torch", None)  # refused before torch is imported: not timed
    line = error_line(run_in_process("measure", "gpt2-small", "--seq", "10000000", "--backend", "math"), 1)
    assert "this machine has" in line and "free" in line, line


def test_measure_sweep_reports_the_call_that_cannot_fit_and_runs_the_rest():
    pytest.importorskip("torch")
    run = run_in_process("measure", "gpt2-small", "--device", "cpu", "--seq", "16,10000000", "--backend", "math",
                         "--repeats", "1", "-f", "json")  # fmt: skip
    assert run.code == 0, run
    small, huge = json.loads(run.stdout)["measurements"]
    assert small["status"] == "ok" and huge["status"] == "oom"
    assert "needs at least 2,400,0" in huge["reason"]  # 12 heads x 10^14 scores x 2 bytes, and more


def test_a_gpu_sweep_is_checked_against_free_device_memory_call_by_call():
    from tfcost.reports.measure import MeasureSetup, calls_that_do_not_fit
    from tfcost.schema import AttentionShape

    # Llama-3-8B's attention (H 32, K 8, Q 128) at T = 32,768 in bf16, on a GPU with 80 GiB free.
    setup = MeasureSetup(model=None, shape=AttentionShape(heads=32, kv_heads=8, head_dim=128), batch=1,
                         dtype="bf16", causal=True)  # fmt: skip
    t, gib = 32_768, 2**30
    q = 32 * t * 128 * 2  # one (B, H, T, Q) tensor in bf16: 256 MiB
    kv = q // 4
    math_forward = q + 2 * kv + q + 32 * t * t * 2  # Q, K, V, then O and the 64 GiB score matrix
    assert math_forward > 64 * gib
    unfit = calls_that_do_not_fit(setup, [t], ["forward"], ["flash", "math"], 64 * gib, "the GPU")
    assert list(unfit) == [(t, "forward", "math")]
    assert f"needs at least {math_forward:,} bytes" in unfit[t, "forward", "math"]
    with pytest.raises(TfcostError, match=r"T=32,768 forward \(flash\) needs at least"):
        calls_that_do_not_fit(setup, [t], ["forward"], ["flash", "math"], 100 * 2**20, "the GPU")
