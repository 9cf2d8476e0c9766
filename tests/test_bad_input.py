"""Bad input, tried systematically: generated preset files and command lines, plus the named cases every tool of
this kind meets (empty, binary, non-UTF-8, tags, alias bombs, directories, huge files, wrong types, absurd sizes).

The promise checked everywhere: a run either succeeds with output on stdout and nothing on stderr, or it prints
nothing on stdout and exactly one line on stderr, `tfcost: error: ...`, naming the problem (never an "internal
error"), with exit code 1 (bad input) or 2 (bad command line), and no traceback unless TFCOST_DEBUG=1.

Generated cases run main() in-process (run_in_process in conftest.py) so that thousands fit in CI; a handful of
the named cases run the real console entry point as well.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from conftest import CHILD_LIMIT_S, Run, run_in_process, run_tfcost
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import examples, shape_fields, yaml_values

from tfcost.core import memory
from tfcost.readers.files import MAX_PRESET_BYTES
from tfcost.readers.presets import load_model, model_preset_paths
from tfcost.schema import ModelShape
from tfcost.units import MAX_SIZE

PRESETS = list(model_preset_paths())
WORKDIR = Path(tempfile.mkdtemp(prefix="tfcost-bad-input-"))  # one file, rewritten by each generated example


def check_contract(run: Run) -> None:
    """Success with output (and at most notes and warnings on stderr: what a config's wrapper does not price, what was
    ignored, a T past the model's context),
    or one clear error line and nothing else."""
    if run.code == 0:
        assert run.stdout and all(
            line.startswith(("tfcost: note: ", "tfcost: warning: ")) for line in run.stderr.splitlines()
        ), run
        return
    assert run.code in (1, 2), run
    assert run.stdout == "", run
    assert run.stderr.endswith("\n") and run.stderr.count("\n") == 1, run.stderr
    assert run.stderr.startswith("tfcost: error: "), run.stderr
    assert "internal error" not in run.stderr and "Traceback" not in run.stderr, run.stderr


def error_line(run: Run, code: int) -> str:
    check_contract(run)
    assert run.code == code, run
    return run.stderr


def estimate_file(content: str | bytes, *options: str) -> Run:
    path = WORKDIR / "model.yaml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
    return run_in_process("estimate", str(path), *options)


def check_estimate_file(content: str | bytes, output: str) -> Run:
    run = estimate_file(content, "--format", output)
    check_contract(run)
    if run.code == 0 and output == "json":
        numbers = re.findall(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", run.stdout)
        assert numbers and not any(n.startswith("-") for n in numbers)
    return run


GOOD = {
    "vocab_size": 1000, "d_model": 64, "n_layers": 2, "n_heads": 4, "d_ff": 256, "mlp": "plain",
    "norm": "layernorm", "tied_embeddings": True, "position": "learned", "max_seq_len": 128,
}  # fmt: skip
formats = st.sampled_from(["json", "json", "json", "table"])  # mostly JSON: cheaper, and its numbers are checked


# ---- generated preset files -------------------------------------------------------------------------------------


@st.composite
def edited_presets(draw: st.DrawFn) -> str:
    """A valid preset with one to three hand edits: a key dropped, a value replaced by anything YAML can hold, or
    a key added; dumped as YAML."""
    fields = draw(shape_fields())
    for _ in range(draw(st.integers(1, 3))):
        edit = draw(st.sampled_from(["drop", "replace", "add", "replace_bias"]))
        key = draw(st.sampled_from(sorted(fields)))
        if edit == "drop":
            fields.pop(key, None)
        elif edit == "replace":
            fields[key] = draw(yaml_values)
        elif edit == "add":
            fields[draw(st.text(max_size=12))] = draw(yaml_values)
        else:
            fields["bias"] = draw(st.dictionaries(st.sampled_from(["qkv", "attn_out", "mlp", "gate"]), yaml_values))
        if not fields:
            break
    return yaml.safe_dump(fields, allow_unicode=draw(st.booleans()))


@settings(max_examples=examples(600))
@given(edited_presets(), formats)
def test_edited_presets_succeed_or_fail_in_one_line(text, output):
    check_estimate_file(text, output)


@settings(max_examples=examples(300))
@given(yaml_values, formats)
def test_any_yaml_document_succeeds_or_fails_in_one_line(value, output):
    check_estimate_file(yaml.safe_dump(value), output)


@settings(max_examples=examples(300))
@given(st.text(max_size=200))
def test_any_text_fails_in_one_line(text):
    check_estimate_file(text, "json")


@settings(max_examples=examples(200))
@given(st.binary(max_size=200))
def test_any_bytes_fail_in_one_line(data):
    check_estimate_file(data, "json")


# Pieces of YAML that parsers and constructors trip on: tags, anchors and aliases, directives, flow and block
# collections left open, special scalars, tabs and control characters.
SNIPPETS = [
    "a: 1", "d_model: 64", "n_layers: &n 2", "n_heads: *n", "vocab_size: *missing", "<<: *n", "<<: {a: 1}",
    "!!python/object/apply:os.system ['true']", "!!python/object:builtins.dict {}", "!!python/name:os.system",
    "!!python/module:os", "!!binary aGVsbG8=", "!!binary '***'", "!!timestamp 2024-13-45", "d: 2024-02-30",
    "!!set {a, b}", "!!omap [a: 1]", "!!pairs [a: 1]", "!!float 'x'", "!!int 'x'", "!!str", "!custom x",
    "!<tag:x> 1",
    "%YAML 1.1", "%YAML 9.9", "%TAG ! tag:example.com,2000:", "---", "...", "? [1, 2]\n: 3", "? {a: 1}\n: 2",
    "[", "]", "{", "}", "- a", "  - b", "a:\n  b:\n    c: 1", "'unclosed", '"\\x"', '"\\uD800"', "\t", "\x00",
    "\x1b[31m",
    "key: |\n  text", "key: >-\n  folded", "n: .inf", "n: -.inf", "n: .nan", "n: 0x1F", "n: 0o17", "n: 1_000",
    "n: 190:20:30", "n: 1e400", "n: 1" + "0" * 5000, "n: ~", "n: null", "n: yes", "n: on", "&a [*a]", "*a", "&",
    "x: " + "[" * 60 + "]" * 60, "# only a comment", "\ufeff", "a: b: c",
]  # fmt: skip


@settings(max_examples=examples(600))
@given(st.lists(st.sampled_from(SNIPPETS), min_size=1, max_size=6), st.sampled_from(["\n", "\n  ", " "]), formats)
def test_yaml_snippet_soup_fails_or_succeeds_in_one_line(pieces, joint, output):
    check_estimate_file(joint.join(pieces), output)


@st.composite
def edited_configs(draw: st.DrawFn) -> str:
    """A real Hugging Face config.json with one to three edits: a key dropped, or a value replaced by anything
    JSON can hold."""
    config = json.loads(draw(st.sampled_from(HF_CONFIGS)).read_text())
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(sorted(config) or ["model_type"]))
        if draw(st.booleans()):
            config.pop(key, None)
        else:
            config[key] = draw(yaml_values.filter(lambda value: not isinstance(value, float) or value == value))
    return json.dumps(config)


@settings(max_examples=examples(400))
@given(edited_configs(), formats)
def test_edited_hf_configs_succeed_or_fail_in_one_line(text, output):
    path = WORKDIR / "config.json"
    path.write_text(text)
    check_contract(run_in_process("estimate", str(path), "--format", output))


# ---- generated command lines ------------------------------------------------------------------------------------

VALUE_OPTIONS = [
    "--seq", "-T", "--batch", "-B", "--dtype", "--format", "-f", "--tokens", "-D", "--micro-batch", "-b", "--gpus",
    "--gpu", "--mfu", "--zero", "--tp", "--pp", "--recompute", "--optimizer", "--precision", "--price-per-gpu-hour",
    "--weights-dtype", "--kv-dtype", "--prompt", "-P", "--generate", "-G", "--reserve", "--compute-efficiency",
    "--memory-efficiency", "--set", "--config",
]  # fmt: skip
FLAGS = ["--causal", "--full", "--flash", "--no-flash", "--sequence-parallel", "--help", "--version", "--nope", "-x"]
CHOICES = [
    "fp32", "fp16", "bf16", "fp8", "int8", "int4", "table", "json", "none", "selective", "full", "adamw",
    "adamw-8bit", "sgd", "bf16-mixed", "h100-sxm", "a100-80gb", "v100", "300B", "1.4T", "3e11",
    "n_layers=2", "n_layers=1e400", "n_layers=2024-13-01", "n_layers=!!timestamp x", "n_heads=0", "bias.qkv=true",
    "moe.n_experts=8", "moe=[", "d_model.x=1", "=1", "n_layers", "name=a\nb", "mla.kv_lora_rank=512",
    "tests/data/hf_configs/mixtral-8x7b.json", "tests/data/hf_configs/t5-small.json", "missing/config.json",
]  # fmt: skip
numbers_as_text = st.one_of(
    st.integers(-(10**30), 10**30).map(str),
    st.integers(0, MAX_SIZE).map(str),
    st.sampled_from(["0", "-1", "1", str(MAX_SIZE), str(MAX_SIZE + 1), "1" + "0" * 400, "1e18", "0x10", "1_000"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["nan", "inf", "-inf", "5e-324", "1e-320", "1e308", "0.5", "1", "0.999999"]),
)
option_values = numbers_as_text | st.sampled_from(CHOICES) | st.text(max_size=12)
HF_CONFIGS = sorted(Path(__file__).parent.joinpath("data", "hf_configs").glob("*.json"))
model_arguments = st.sampled_from(
    [*PRESETS, *map(str, HF_CONFIGS[:3]), "gpt2-smal", "", " ", "-", "nope.yaml", "/", "x" * 300, "a\nb"]
)


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    command = draw(
        st.sampled_from(["estimate", "estimate", "compare", "train", "serve", "import", "list", "gpus", "bogus"])
    )
    argv = [command, *draw(st.lists(model_arguments, max_size=3))]
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.integers(0, 4)) == 0:
            argv.append(draw(st.sampled_from(FLAGS)))
        else:
            argv += [draw(st.sampled_from(VALUE_OPTIONS)), draw(option_values)]
    return argv


@settings(max_examples=examples(1000))
@given(command_lines())
def test_any_command_line_succeeds_or_fails_in_one_line(argv):
    check_contract(run_in_process(*argv))


@settings(max_examples=examples(300))
@given(
    st.sampled_from(PRESETS),
    st.integers(1, MAX_SIZE),
    st.integers(1, MAX_SIZE),
    st.sampled_from(["fp32", "bf16", "fp8"]),
    st.booleans(),
)
def test_any_size_up_to_the_cap_answers(preset, seq, batch, dtype, causal):
    run = run_in_process("estimate", preset, "--seq", str(seq), "--batch", str(batch), "--dtype", dtype,
                         "--causal" if causal else "--full", "--format", "json")  # fmt: skip
    assert run.code == 0, run
    assert json.loads(run.stdout)["kv_cache"]["bytes"] == memory.kv_cache_bytes(preset_shape(preset), seq, batch, dtype)


@functools.cache
def preset_shape(name: str) -> ModelShape:
    return load_model(name)


# ---- the named cases --------------------------------------------------------------------------------------------


def preset_text(**changes: object) -> str:
    return yaml.safe_dump({**GOOD, **changes})


BILLION_LAUGHS = "".join(
    f"{chr(97 + level)}: &{chr(97 + level)} [{', '.join([f'*{chr(96 + level)}' if level else '1'] * 9)}]\n"
    for level in range(10)
)  # a: [1 x 9], b: [*a x 9], ... j: 9^10 = 3.5 billion leaves if anything expanded it


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "this file is empty"),
        (bytes(range(256)) * 4, "not UTF-8"),
        ("d_model: 64\n".encode("utf-16"), "not UTF-8"),
        (b"d_model: \xe9\n", "not UTF-8 text (byte 9)"),
        (b"\x00\x01\x02garbage", "malformed YAML"),
        ("- 1\n- 2\n", "this file is a list"),
        ("42\n", "this file is a int"),
        ("just words\n", "this file is a str"),
        ("!!python/object/apply:os.system ['true']\n", "could not determine a constructor"),
        ("!!python/name:os.system\n", "could not determine a constructor"),
        (preset_text() + "extra: !!python/object:builtins.dict {}\n", "could not determine a constructor"),
        ("x: " + "[" * 5000 + "]" * 5000 + "\n", "malformed YAML"),  # nesting deeper than any parser recurses
        ("".join(" " * i + "a:\n" for i in range(1200)), "malformed YAML"),  # the same, by indentation
        (BILLION_LAUGHS, "unknown key 'a'"),
        (
            BILLION_LAUGHS + "".join(f"{k}: {v}\n" for k, v in GOOD.items() if k != "d_model") + "d_model: *j\n",
            "d_model: Input should be a valid integer",
        ),
        (preset_text(n_layers="12"), "n_layers: Input should be a valid integer"),
        (preset_text(n_layers=[12]), "n_layers: Input should be a valid integer"),
        (preset_text(n_layers=12.0), "n_layers: Input should be a valid integer"),
        (preset_text(n_layers=2.5), "n_layers: Input should be a valid integer"),
        (preset_text(n_layers=True), "n_layers: Input should be a valid integer"),
        (preset_text(tied_embeddings=1), "tied_embeddings: Input should be a valid boolean"),
        (preset_text(tied_embeddings="yes"), "tied_embeddings: Input should be a valid boolean"),
        (preset_text(mlp=None), "mlp: Input should be 'plain' or 'gated'"),
        (preset_text(bias=True), "bias: Input should be a valid dictionary"),
        (preset_text(n_layers=0), "n_layers: Input should be greater than 0"),
        (preset_text(d_model=-64), "d_model: Input should be greater than 0"),
        (preset_text(n_layers=MAX_SIZE + 1), "n_layers: Input should be less than or equal to 1000000000000000000"),
        (preset_text(vocab_size=10**400), "vocab_size: Input should be less than or equal to"),
        ("n_layers: 1" + "0" * 5000 + "\n", "Exceeds the limit (4300 digits)"),
        ("released: 2024-13-01\n", "malformed YAML: month must be in 1..12"),
        (preset_text(**{"n_layers\nfoo": 1}), "unknown key 'n_layers\\nfoo'"),
    ],
)
def test_named_bad_files_give_one_line(content, expected):
    message = error_line(estimate_file(content), 1)
    assert expected in message, message


def test_paths_that_are_not_preset_files(tmp_path):
    assert "no such file" in error_line(run_in_process("estimate", str(tmp_path / "missing.yaml")), 1)
    assert "is a directory" in error_line(run_in_process("estimate", str(tmp_path) + "/"), 1)
    assert "not a regular file" in error_line(run_in_process("estimate", "/dev/null"), 1)
    assert "not a regular file" in error_line(run_in_process("estimate", "/dev/zero"), 1)  # would never end
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    assert "not a regular file" in error_line(run_in_process("estimate", str(fifo)), 1)  # would block
    assert "cannot read" in error_line(run_in_process("estimate", "x" * 5000 + ".yaml"), 1)  # name too long
    assert "unknown preset" in error_line(run_in_process("estimate", "x" * 5000), 1)
    unreadable = tmp_path / "secret.yaml"
    unreadable.write_text(preset_text())
    unreadable.chmod(0)
    if not os.access(unreadable, os.R_OK):  # root reads anything
        assert "Permission denied" in error_line(run_in_process("estimate", str(unreadable)), 1)


def test_an_oversized_file_is_refused_before_parsing(tmp_path):
    path = tmp_path / "huge.yaml"
    with path.open("wb") as handle:  # a valid preset, then a megabyte of comment: only its size is wrong
        handle.write(preset_text().encode() + b"#" * MAX_PRESET_BYTES)
    assert f"is too large for a preset (limit {MAX_PRESET_BYTES:,} bytes)" in error_line(
        run_in_process("estimate", str(path)), 1
    )


def test_preset_names_that_are_not_presets():
    assert "did you mean gpt2-small" in error_line(run_in_process("estimate", "gpt2-smal"), 1)
    assert "unknown preset 'a\\nb'" in error_line(run_in_process("estimate", "a\nb"), 1)  # still one line
    assert "unknown preset '\\x1b[31mred'" in error_line(run_in_process("estimate", "\x1b[31mred"), 1)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["estimate", "gpt2-small", "--seq", "0"], "--seq"),
        (["estimate", "gpt2-small", "--seq", "-5"], "--seq"),
        (["estimate", "gpt2-small", "--seq", "1.5"], "--seq"),
        (["estimate", "gpt2-small", "--seq", str(MAX_SIZE + 1)], f"'-T': '{MAX_SIZE + 1}' is larger than 1e+18"),
        (["estimate", "gpt2-small", "--batch", "1" + "0" * 400], "--batch: Input should be less than or equal to"),
        (["compare", "gpt2-small", "gpt2-xl", "--seq", str(MAX_SIZE + 1)], "--seq' / '-T': "),
        (["estimate", "gpt2-small", "--dtype", "fp9"], "--dtype"),
        (["estimate", "gpt2-small", "--format", "xml"], "--format"),
        (["estimate", "gpt2-small", "--causal=yes"], "--causal"),
        (["estimate"], "no model given"),
        (["bogus"], "No such command"),
        (["train", "gpt2-small", "--micro-batch", "1" + "0" * 400], "--micro-batch: Input should be less than"),
        (["train", "gpt2-small", "--gpus", "1" + "0" * 400], "--gpus: Input should be less than"),
        (["train", "gpt2-small", "--seq", "1" + "0" * 400], "is larger than 1e+18"),
        (["train", "gpt2-small", "--price-per-gpu-hour", "inf"], "--price-per-gpu-hour: Input should be a finite"),
        (["train", "gpt2-small", "--mfu", "nan"], "--mfu: Input should be a finite number"),
        (["serve", "gpt2-small", "--prompt", "1" + "0" * 400], "'--prompt' / '-P': "),
        (["serve", "gpt2-small", "--batch", "1" + "0" * 400], "--batch: Input should be less than"),
        (["serve", "gpt2-small", "--reserve", "nan"], "--reserve: Input should be a finite number"),
    ],
)
def test_options_out_of_range_are_usage_errors(argv, expected):
    assert expected in error_line(run_in_process(*argv), 2)


def test_serving_an_encoder_is_one_line():
    # Was 'internal error (ZeroDivisionError)': an encoder has no KV cache to divide the memory by.
    assert "bert-base is an encoder" in error_line(run_in_process("serve", "bert-base"), 1)


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["serve", "gpt2-small", "--compute-efficiency", "1e-320", "--format", "json"], "--compute-efficiency"),
        (["train", "gpt2-small", "--mfu", "5e-324", "--format", "json"], "--mfu"),
        (["train", "gpt2-small", "--tokens", "1e30", "--price-per-gpu-hour", "1e308", "--format", "json"],
         "--price-per-gpu-hour"),
    ],
)  # fmt: skip
def test_json_never_holds_an_infinity(argv, option):
    # A finite but absurd option could overflow a float result (JSON has no Infinity): the assumptions are bounded
    # (an efficiency or utilization of at least 0.1%, a price of at most 10^6 a GPU-hour), so it is refused first.
    assert option in error_line(run_in_process(*argv), 2)


# ---- absurd sizes that are still allowed --------------------------------------------------------------------------


def test_a_quadrillion_layers_answers_with_readable_numbers():
    path = WORKDIR / "deep.yaml"
    path.write_text(preset_text(n_layers=10**15, vocab_size=50257, d_model=768, n_heads=12, d_ff=3072))
    run = run_in_process("estimate", str(path), "--seq", str(10**15), "--batch", str(10**15))
    assert run.code == 0, run
    lines = run.stdout.splitlines()
    body = [line for line in lines if line.startswith("│")]
    assert len({len(line) for line in body}) == 1  # nothing wrapped or cropped: every row as wide as the box
    assert "…" not in run.stdout
    values = [line.split("│")[2].strip() for line in body]
    # ... and the crossovers' T, a whole number of tokens grouped in thousands
    human = re.compile(
        r"(\d+(\.\d\d)? ?[kMGTPEZYRQ]?(FLOP)?|\d+(\.\d\d)? ([KMGTPEZY]i)?B|\d\.\d{3}e\+\d+( FLOP| B)?|\d{1,3}(,\d{3})*)"
    )
    assert all(human.fullmatch(value) for value in values if value), values
    assert "7.08 Z" in run.stdout  # 10^15 blocks of 7,080,960 parameters
    exact = json.loads(run_in_process("estimate", str(path), "--seq", str(10**15), "-f", "json").stdout)
    assert exact["params"]["total"] == 10**15 * 7_080_960 + (50257 + 128) * 768 + 2 * 768  # + embeddings, final norm


# ---- the real entry point -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (bytes(range(256)), "not UTF-8"),
        ("!!python/object/apply:os.system ['touch {pwned}']\n", "could not determine a constructor"),
        (BILLION_LAUGHS, "unknown key"),
        ("n_layers: 1" + "0" * 5000 + "\n", "Exceeds the limit (4300 digits)"),
    ],
)
def test_the_console_entry_point_keeps_the_promise(tmp_path, content, expected):
    path, pwned = tmp_path / "bad.yaml", tmp_path / "pwned"
    path.write_bytes(content if isinstance(content, bytes) else content.replace("{pwned}", str(pwned)).encode())
    assert expected in error_line(run_tfcost("estimate", str(path)), 1)
    assert not pwned.exists()  # the tag named a command; nothing ran it


def test_tracebacks_only_with_tfcost_debug(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("d_model: [")
    assert "Traceback" not in run_tfcost("estimate", str(path), env={"TFCOST_DEBUG": "0"}).stderr
    debug = run_tfcost("estimate", str(path), env={"TFCOST_DEBUG": "1"})
    assert debug.code == 1 and "Traceback" in debug.stderr and "malformed YAML" in debug.stderr


# ---- nothing written -----------------------------------------------------------------------------------------------


def snapshot(root: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file under root with its size, modification time and content."""
    return {
        str(path.relative_to(root)): (path.stat().st_size, path.stat().st_mtime_ns, path.read_bytes())
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_no_command_writes_a_file(tmp_path):
    home, cwd, tmp = tmp_path / "home", tmp_path / "cwd", tmp_path / "tmp"
    for folder in (home, cwd, tmp):
        folder.mkdir()
    mine = cwd / "mine.yaml"
    mine.write_text(preset_text())
    bad = cwd / "bad.yaml"
    bad.write_text("d_model: [")
    os.utime(mine, ns=(1_000_000_000, 1_000_000_000))  # an old mtime, so that any rewrite would show
    os.utime(bad, ns=(1_000_000_000, 1_000_000_000))
    before = snapshot(tmp_path)
    env = {"HOME": str(home), "TMPDIR": str(tmp), "PATH": "/usr/bin:/bin", "COLUMNS": "100"}
    env |= {f"XDG_{kind}_HOME": str(home / kind.lower()) for kind in ("CACHE", "CONFIG", "DATA", "STATE")}
    commands = [
        ["--help"], ["--version"], ["list"], ["gpus"], ["gpus", "-f", "json"], ["estimate", "gpt2-small"],
        ["estimate", "mine.yaml", "-f", "json"], ["compare", "gpt2-small", "mine.yaml"],
        ["train", "mine.yaml", "--gpus", "2"], ["serve", "mine.yaml", "-f", "json"], ["estimate", "bad.yaml"],
    ]  # fmt: skip
    for argv in commands:
        done = subprocess.run([sys.executable, "-m", "tfcost", *argv], cwd=cwd, env=env, capture_output=True,
                              timeout=CHILD_LIMIT_S, check=False)  # fmt: skip
        assert done.returncode in (0, 1), (argv, done.stderr)
    assert snapshot(tmp_path) == before


def test_load_model_reads_without_writing(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(preset_text())
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    before = snapshot(tmp_path)
    load_model(str(path))
    assert snapshot(tmp_path) == before
