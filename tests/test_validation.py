"""The validation suite (issue 22): held-out predictions are recorded, and the docs table is their table.

A held-out case's prediction cannot change unless validation/predictions.json and docs/validation.md are
regenerated with it (`python benchmarks/validate.py --write`), so the held-out figures the docs report are
always today's."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

from tfcost.core import params
from tfcost.readers.presets import load_model

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("validate", ROOT / "benchmarks" / "validate.py")
assert spec is not None and spec.loader is not None
validate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(validate)

CASES = validate.load_cases()
RECORDED = json.loads(validate.PREDICTIONS.read_text())


def test_held_out_follows_the_id_rule_written_in_the_file() -> None:
    assert "held_out is true iff id % 3 == 0" in validate.CASES.read_text()
    assert [case["id"] for case in CASES] == list(range(1, len(CASES) + 1))  # ids stable, appended only
    assert all(case["held_out"] == (case["id"] % 3 == 0) for case in CASES)
    assert sum(case["held_out"] for case in CASES) == len(CASES) // 3


def test_every_case_has_a_command_or_says_why_not() -> None:
    for case in CASES:
        assert ("command" in case) != ("unsupported" in case), case["id"]
        assert case["source"]["url"] and case["quote"] and case["measured"] > 0
        if "command" in case:
            assert case["command"][-2:] == ["--format", "json"] and case["predicted_field"]


@pytest.mark.parametrize("case", [c for c in CASES if c["held_out"] and "command" in c], ids=lambda c: str(c["id"]))
def test_held_out_prediction_is_the_recorded_one(case: dict) -> None:
    recorded = RECORDED[str(case["id"])]
    try:
        now: float | str = validate.predict(case)
    except (RuntimeError, KeyError, ValueError, ZeroDivisionError) as error:
        now = f"error: {error}"
    if isinstance(recorded, str):
        assert now == recorded
    else:
        assert isinstance(now, float) and math.isclose(now, recorded, rel_tol=1e-9), (
            f"held-out case {case['id']} changed from {recorded} to {now}: run benchmarks/validate.py --write"
        )


def test_docs_table_is_generated_from_the_recorded_predictions() -> None:
    assert set(RECORDED) == {str(c["id"]) for c in CASES if "command" in c}
    assert (ROOT / "docs" / "validation.md").read_text() == validate.markdown(CASES, RECORDED)


def test_expression_reads_paths_and_refuses_anything_else() -> None:
    output = {"memory": {"bytes": 2**31}, "setup": {"gpus": 4}}
    assert validate.evaluate("memory.bytes / 2**30 / setup.gpus", output) == 0.5
    with pytest.raises(ValueError):
        validate.evaluate("__import__('os')", output)
    with pytest.raises(KeyError):
        validate.evaluate("memory.missing", output)


# Case #70, the 1T GPT of Narayanan et al. 2021 (arXiv 2104.04473), Table 1: 128 layers, hidden 25,600, and (§5.1)
# "a vocabulary size (denoted by V) of 51,200 ... and a sequence length (s) of 2048"; B the row's batch of 3,072.
LAYERS_1T, HIDDEN_1T, VOCAB_1T, SEQ_1T, BATCH_1T = 128, 25_600, 51_200, 2_048, 3_072


def test_megatron_1t_model_has_the_papers_parameter_count() -> None:
    """The paper's equation (2), P = 12lh^2 (1 + 13/(12h) + (V+s)/(12lh)), counts the layers, the word and position
    embeddings; Megatron-LM's GPT also has a final LayerNorm (2h) the equation leaves out. Table 1 prints 1008.0
    billion."""
    layers, h, v, s = LAYERS_1T, HIDDEN_1T, VOCAB_1T, SEQ_1T
    equation_2 = 12 * layers * h**2 + 13 * layers * h + (v + s) * h
    total = params.total_params(load_model(str(ROOT / "validation" / "models" / "megatron-gpt-1t.yaml")))
    assert total == equation_2 + 2 * h
    assert round(total / 1e9, 1) == 1008.0


def test_megatron_1t_prediction_counts_flops_as_the_paper_measures_them() -> None:
    """The 502 PFLOP/s of case #70 are the paper's equation (3) FLOPs a step over the step time, F = 96 B s l h^2
    (1 + s/6h + V/16lh), which "assumes activation recomputation" (§5.1): the hardware FLOPs a step of the case's
    command must be that F, or its predicted field (achieved hardware FLOP/s x GPUs) would compare another count."""
    case = next(c for c in CASES if c["id"] == 70)
    output = validate.run_tfcost([str(word) for word in case["command"]])
    b, s, layers, h, v = BATCH_1T, SEQ_1T, LAYERS_1T, HIDDEN_1T, VOCAB_1T
    equation_3 = 96 * b * s * layers * h**2 * (1 + s / (6 * h) + v / (16 * layers * h))
    assert math.isclose(output["flops"]["hardware"] / output["step"]["steps"], equation_3, rel_tol=1e-9)
    assert output["inputs"]["data_parallel"] == 6 and output["inputs"]["micro_batches"] == 512  # 3072 / (8 x 64), B / 6


# A published run is a model, a framework at a release and a machine (issue 34): its command gives the published
# setup and `--framework NAME@VERSION`; `--framework-set` only for a setting the framework's users set themselves
# (a field whose file names its `switch`), with the published line that sets it in the case's framework_switches.
# A figure no framework changes (6ND) may leave the framework out, where the publication names none.
FRAMEWORK_FREE_FIELDS = {"flops.six_nd"}


def framework_arguments(command: list[str]) -> tuple[list[str], list[str]]:
    """The command's --framework references and --framework-set settings, in order."""
    words = [str(word) for word in command]
    named = [words[i + 1] for i, word in enumerate(words[:-1]) if word == "--framework"]
    settings = [words[i + 1] for i, word in enumerate(words[:-1]) if word == "--framework-set"]
    return named, settings


# Serving and KV-capacity cases have their own rule (test_serving_cases_run_with_their_framework): an engine's
# release number may be one the file prices as the newest listed before it, and the case's framework_note says why.
# Local-inference cases (`tfcost fit`, issue 36) price llama.cpp from its own code (tfcost/costs/local.py), no
# framework file.
TRAINING_CASES = [
    c for c in CASES if "command" in c and c["category"] not in ("serving", "kv_capacity", "local_inference")
]


@pytest.mark.parametrize("case", TRAINING_CASES, ids=lambda c: str(c["id"]))
def test_every_case_names_its_framework_and_sets_only_its_switches(case: dict) -> None:
    from tfcost.readers.frameworks import framework_used, load_framework

    kind = "training" if case["command"][0] in ("train", "plan") else "serving"
    named, settings = framework_arguments(case["command"])
    if not named and case["predicted_field"] in FRAMEWORK_FREE_FIELDS:
        assert not settings and "none published" in case["setup"]["framework"], case["id"]
        return
    assert len(named) == 1 and "@" in named[0], f"case {case['id']}: --framework NAME@VERSION, once"
    framework, index = load_framework(named[0], kind)
    name, version = named[0].split("@")
    assert framework.versions[index].version == version, f"case {case['id']}: {version} is not a listed release"
    assert case["setup"]["framework"].startswith(named[0]), f"case {case['id']}: setup.framework names {named[0]}"
    fields = framework_used(named[0], kind, {}).fields
    for setting in settings:
        key = setting.split("=")[0]
        assert key in fields and fields[key].switch, f"case {case['id']}: {key} is not a switch of {name}"
        assert setting in case.get("framework_switches", ""), f"case {case['id']}: which published line sets {setting}?"


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.get("predicted_field") in FRAMEWORK_FREE_FIELDS], ids=lambda c: str(c["id"])
)
def test_a_framework_free_figure_is_the_same_under_any_framework(case: dict) -> None:
    # 6ND counts the model's parameters and tokens only: under a framework whose conventions differ from tfcost's
    # defaults in every way it sets (FSDP2, the full loss, eager kernels, no dropout), the figure is the same
    plain = [word for word in case["command"] if word not in ("--format", "json")]
    named, _ = framework_arguments(plain)
    if named:
        index = plain.index("--framework")
        plain = plain[:index] + plain[index + 2 :]
    titan = [*plain, "--framework", "torchtitan@9dec370", "--format", "json"]
    bare = [*plain, "--format", "json"]
    assert validate.predict({**case, "command": titan}) == validate.predict({**case, "command": bare})


def test_serving_cases_run_with_their_framework() -> None:
    """Issue 34: a serving or KV-capacity case is priced as its engine ran it: `--framework NAME@VERSION` names a
    release its file lists (or, for a release number, one at or after the file's first), and `--framework-set` sets
    only a setting the engine's users set themselves (a field with a `switch`), which the published run states."""
    from tfcost.readers.frameworks import framework_used, load_framework

    checked = 0
    for case in CASES:
        if case["category"] not in ("serving", "kv_capacity") or "command" not in case:
            continue
        argv = case["command"]
        named = [argv[i + 1] for i, item in enumerate(argv) if item == "--framework"]
        assert len(named) == 1 and "@" in named[0], (case["id"], "names no --framework NAME@VERSION")
        framework, _ = load_framework(named[0], "serving")  # one line, not a pass, if the release is not there
        used = framework_used(named[0], "serving", {})
        for item in (argv[i + 1] for i, item in enumerate(argv) if item == "--framework-set"):
            key = item.partition("=")[0]
            assert key in used.fields and used.fields[key].switch, (
                case["id"],
                key,
                "is not a switch of",
                framework.name,
            )
            assert key in case.get("framework_note", ""), (case["id"], key, "set, but the case does not say why")
        checked += 1
    assert (
        checked == sum(1 for case in CASES if case["category"] in ("serving", "kv_capacity") and "command" in case)
        and checked >= 38
    )  # the 38 serving and KV-capacity cases with a command on 2026-12-08
