"""Hostile profiles: every field validated (finite, positive, consistent, printable), the file size capped before
parsing, YAML anchors and aliases refused, the save path checked before any measuring, the file written whole;
options that do nothing in a mode of `measure` are errors there, and every -f is honoured or refused."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import yaml
from conftest import run_in_process
from test_profiles import RAW

from tfcost.costs import profiles
from tfcost.errors import TfcostError

TINY_LLAMA = str(Path(__file__).parent / "data" / "tiny-llama.yaml")


@pytest.fixture
def config_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    return tmp_path


def good() -> dict:
    return profiles.from_roofline(RAW, "box", "fp32", "2026-11-30").model_dump(mode="json")


def write(config_dir: Path, document: object, name: str = "box", raw: str | None = None) -> Path:
    folder = config_dir / "tfcost" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(raw if raw is not None else yaml.safe_dump(document), encoding="utf-8")
    return path


def refused(config_dir: Path, name: str = "box") -> str:
    with pytest.raises(TfcostError) as caught:
        profiles.load(name)
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(("path", "value", "words"), [
    (("copy_bytes_per_s",), float("inf"), "copy_bytes_per_s"),
    (("copy_bytes_per_s",), float("nan"), "copy_bytes_per_s"),
    (("copy_bytes_per_s",), -1.0, "greater than 0"),
    (("copy_bytes_per_s",), 1e300, "copy_bytes_per_s"),
    (("memory_bytes",), 0, "memory_bytes"),
    (("memory_bytes",), 10**30, "memory_bytes"),
    (("matmuls", 0, "median_ms"), 0.0, "median_ms"),
    (("matmuls", 0, "flops_per_s"), float("inf"), "flops_per_s"),
    (("matmuls", 0, "m"), -4, "matmuls.0.m"),
    (("attentions", 0, "heads"), 0, "heads"),
    (("dtype",), "int3", "dtype"),
    (("device_name",), "GPU\u202eevil", "does not print"),
    (("device_name",), "GPU\x9b31m", "does not print"),
    (("date",), "x" * 1000, "date"),
    (("floor_layers",), [3, 3], "two increasing depths"),  # a zero slope: a division by zero before
    (("floor_step_us",), [1.0], "two increasing depths"),
    (("matmuls",), [], "matmuls"),
])  # fmt: skip
def test_every_field_is_validated(config_dir, path, value, words):
    document = good()
    target = document
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    write(config_dir, document, raw=yaml.safe_dump(document).replace("!!float", ""))
    message = refused(config_dir)
    assert words in message and "not a valid profile" in message


def test_a_profile_needs_both_matmul_kinds_in_its_dtype(config_dir):
    document = good()
    document["matmuls"] = [run for run in document["matmuls"] if run["kind"] == "decode"]
    write(config_dir, document)
    assert "decode and a prefill" in refused(config_dir)


def test_anchors_and_aliases_are_refused(config_dir):
    """A billion-laughs profile: nine levels of aliases would be 10^9 strings; refused before any expansion."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in "bcdefghi":
        previous = chr(ord(level) - 1)
        lines.append(f"{level}: &{level} [{','.join(['*' + previous] * 10)}]")
    write(config_dir, None, raw="\n".join(lines) + "\n")
    assert "anchors and aliases" in refused(config_dir)
    document = yaml.safe_dump(good()).replace("device: cpu", "device: &d cpu")
    write(config_dir, None, raw=document)
    assert "anchors and aliases" in refused(config_dir)


def test_the_file_size_is_capped_before_parsing(config_dir):
    path = write(config_dir, None, raw="")
    with path.open("wb") as out:
        out.truncate(64 << 20)  # 64 MiB of zeros, sparse: a file a parser would chew on for a long time
    assert "too large" in refused(config_dir)


def test_bidi_in_a_listing_never_reaches_the_terminal(config_dir):
    """Refused at load; the listing says so in one line, the character escaped."""
    document = good()
    document["device_name"] = "GPU\u202e"
    write(config_dir, document)
    done = run_in_process("profiles", env={"XDG_CONFIG_HOME": str(config_dir)})
    assert done.code == 1 and "\u202e" not in done.stderr + done.stdout


@pytest.mark.parametrize("output", ["table", "markdown", "json"])
def test_profiles_honours_every_format(config_dir, output):
    write(config_dir, good())
    done = run_in_process("profiles", "-f", output, env={"XDG_CONFIG_HOME": str(config_dir)})
    assert done.code == 0, done.stderr
    if output == "json":
        assert json.loads(done.stdout)["results"][0]["name"] == "box"
    elif output == "markdown":
        assert "| box |" in done.stdout and "┃" not in done.stdout
    else:
        assert "box" in done.stdout and "|" not in done.stdout


def test_save_is_atomic_and_leaves_no_temporary_file(config_dir):
    """Readers running beside a save see the old profile or the new one, never a torn file."""
    profile = profiles.from_roofline(RAW, "box", "fp32", "2026-11-30")
    profiles.save(profile)
    stop = threading.Event()
    seen: list[str] = []

    def read() -> None:
        while not stop.is_set():
            try:
                seen.append(profiles.load("box").date)
            except TfcostError as error:  # a torn file would be refused
                seen.append(f"error: {error}")

    reader = threading.Thread(target=read)
    reader.start()
    for index in range(100):
        profiles.save(profile.model_copy(update={"date": f"2026-11-{index % 28 + 1:02d}"}))
    stop.set()
    reader.join()
    assert seen and not [item for item in seen if item.startswith("error")]
    assert sorted(p.name for p in (config_dir / "tfcost" / "profiles").iterdir()) == ["box.yaml"]


def test_an_unsavable_profile_is_refused_before_measuring(config_dir):
    """The save path is checked first: a folder in the way of the file, or a file in the way of the folder, stops
    the command before torch is even imported (nothing was measured, nothing is lost)."""
    (config_dir / "tfcost" / "profiles" / "taken.yaml").mkdir(parents=True)
    done = run_in_process("measure", "--roofline", "--save-profile", "taken", env={"XDG_CONFIG_HOME": str(config_dir)})
    assert done.code == 1 and "not a regular file" in done.stderr and done.stdout == ""
    blocked = config_dir / "blocked"
    blocked.write_text("a file where the folder should be")
    done = run_in_process("measure", "--roofline", "--save-profile", "x", env={"XDG_CONFIG_HOME": str(blocked)})
    assert done.code == 1 and "--save-profile: cannot write" in done.stderr and done.stdout == ""


@pytest.mark.parametrize(("argv", "words"), [
    (["gpt2-small", "--save-profile", "x"], "--save-profile"),
    (["gpt2-small", "--profile", "x"], "--profile"),
    (["--roofline", "--profile", "x"], "--profile"),
    (["--roofline", "--prompt", "64"], "--prompt"),
    (["--roofline", "--seq", "64"], "--seq"),
    (["--roofline", "--backend", "math"], "--backend"),
    (["--roofline", "--gpu", "h100-sxm"], "--gpu"),
    (["gpt2-small", "--roofline"], "MODEL"),
    (["gpt2-small", "--generate", "4"], "--generate"),
])  # fmt: skip
def test_an_option_that_does_nothing_in_a_mode_is_an_error(config_dir, argv, words):
    done = run_in_process("measure", *argv, env={"XDG_CONFIG_HOME": str(config_dir)})
    assert done.code == 2 and done.stdout == "" and words in done.stderr, done.stderr
    assert not (config_dir / "tfcost").exists()  # refused before anything was made


def test_a_step_past_the_models_context_is_refused(config_dir):
    context = yaml.safe_load(Path(TINY_LLAMA).read_text())["max_seq_len"]
    done = run_in_process("measure", TINY_LLAMA, "--step", "-P", str(context), "-G", "1",
                          env={"XDG_CONFIG_HOME": str(config_dir)})  # fmt: skip
    assert done.code == 2 and f"context of {context:,} tokens" in done.stderr


def test_the_step_memory_counts_the_prompts_activations_and_logits():
    """step_memory_bytes = serve's weights + KV + state, plus the workspace of the B x (P + G - 1) tokens of the
    history forward (the residual plus the widest of QKV and MLP, 16-bit, doubled for fp32) and B rows of fp32
    logits, counted here by hand for tiny-llama."""
    from tfcost.readers.presets import load_model
    from tfcost.reports.serve import serve
    from tfcost.reports.step import step_memory_bytes
    from tfcost.schema import ServingSetup

    shape = load_model(TINY_LLAMA)
    profile = profiles.from_roofline(RAW, "box", "fp32", "2026-11-30")
    setup = ServingSetup(weights_dtype="fp32", kv_dtype="fp32", batch=2, prompt=100, generate=29, reserve=0)
    held = serve(shape, profile.gpu_spec(), setup).memory.total_bytes_per_gpu
    qkv = (shape.n_heads + 2 * shape.n_kv_heads) * shape.head_dim
    mlp = shape.d_ff * (2 if shape.mlp == "gated" else 1)
    by_hand = 2 * 128 * (shape.d_model + max(qkv, mlp)) * 2 * 2 + 2 * shape.vocab_size * 4
    assert step_memory_bytes(shape, profile, setup, 4) == held + by_hand
