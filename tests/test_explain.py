"""--explain: every line's working is arithmetic that equals its result, for every preset; gpt2-small's lines
reproduce the lesson's figures term by term (the attention-and-transformers lesson; docs/formulas.md)."""

from __future__ import annotations

import ast
import json
import math
import operator
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tfcost.core import params
from tfcost.readers.hf_config import read_config
from tfcost.readers.presets import load_gpu, load_model, model_from_mapping, model_preset_paths
from tfcost.reports import estimate as report
from tfcost.reports import serve as serve_report
from tfcost.reports import train as train_report
from tfcost.reports.explain import Line, estimate_lines
from tfcost.schema import ServingSetup, TrainingSetup, Workload

OPERATORS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
}


def arithmetic(text: str) -> float:
    """The value of a line's working: numbers with thousands commas, · and x for times, ² for squares, max()."""
    source = re.sub(r"(?<=\d),(?=\d{3})", "", text)
    source = source.replace("·", "*").replace(" x ", " * ").replace("²", "**2").replace("⌈", "ceil(").replace("⌉", ")")

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.BinOp):
            return OPERATORS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp):
            return OPERATORS[type(node.op)](value(node.operand))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("max", "ceil"):
            args = [value(arg) for arg in node.args]
            return max(args) if node.func.id == "max" else math.ceil(args[0])
        raise ValueError(f"not arithmetic: {ast.dump(node)}")

    return value(ast.parse(source, mode="eval").body)


def check(lines: list[Line]) -> None:
    for line in lines:
        assert arithmetic(line.working) == pytest.approx(line.value, rel=1e-12), line


@pytest.mark.parametrize("name", list(model_preset_paths()))
@pytest.mark.parametrize("causal", [False, True])
def test_every_working_equals_its_result(name: str, causal: bool) -> None:
    shape = load_model(name)
    for seq_len in (1, 1000, 70_000):
        check(estimate_lines(shape, seq_len, 3, "bf16", causal))


def by_quantity(lines: list[Line]) -> dict[str, Line]:
    return {line.quantity: line for line in lines}


def test_gpt2_small_reproduces_the_lesson() -> None:
    lines = by_quantity(report.estimate(load_model("gpt2-small"), Workload(), explained=True).explain or [])
    total = lines["total parameters"]
    assert total.value == 124_439_808 and total.result.startswith("124,439,808")
    block = lines["one layer, attention+mlp"]
    assert (block.formula, block.working, block.value) == (
        "attention + mlp + norm",
        "2,362,368 + 4,722,432 + 3,072",
        7_087_872,
    )
    kv = lines["KV cache per token"]
    assert (kv.formula, kv.working, kv.result) == ("L x 2·K·Q·s", "12 x 2·12·64·2", "36,864 B (36.00 KiB)")
    assert lines["KV cache, 1 x 1,024 tokens"].result == "37,748,736 B (36.00 MiB)"
    entries = lines["score entries per head"]
    assert (entries.working, entries.value) == ("1,024²", 1_048_576)
    assert lines["training per token"].working == "6·85,056,000"
    crossing = lines["attention term = 6N at T"]  # the lesson: 85,056,000 / (12·768) = 9,229 1/6
    assert (crossing.working, crossing.result) == ("510,336,000 / 55,296", "9,229.1667 (rounded down: 9,229)")
    assert lines["12 layers x attention/q"].working == "12 x (768·12·64 + 12·64)"


@pytest.mark.parametrize("name", ["gpt2-small", "llama-3-8b", "mixtral-8x7b", "deepseek-v3", "t5-small", "bert-base"])
def test_train_and_serve_working(name: str) -> None:
    shape = load_model(name)
    gpu = load_gpu("h100-sxm")
    if shape.architecture != "encoder":
        check(
            serve_report.serve(
                shape, gpu, ServingSetup(gpus=8 if shape.n_kv_heads % 8 == 0 else 1), explained=True
            ).explain
            or []
        )
    extras: tuple[dict[str, object], ...] = ({}, {"zero": 1, "mfu": 0.5}, {"zero": 2, "tp": 2, "mfu": 0.4})
    for extra in extras:
        setup = TrainingSetup.model_validate({"gpus": 64, "tokens": 10**12, "seq_len": 2048, **extra})
        check(train_report.train(shape, gpu, setup, explained=True).explain or [])


def test_cli_explain_in_every_format(tfcost) -> None:
    table = tfcost("estimate", "gpt2-small", "--explain")
    assert table.code == 0
    assert (
        "  KV cache per token = L x 2·K·Q·s = 12 x 2·12·64·2 = 36,864 B (36.00 KiB)  [docs/formulas.md, "
        in table.stdout
    )
    assert "Working" not in tfcost("estimate", "gpt2-small").stdout
    document = json.loads(tfcost("estimate", "gpt2-small", "--explain", "--format", "json").stdout)
    values = {line["quantity"]: line["value"] for line in document["explain"]}
    assert values["total parameters"] == 124_439_808 and values["score entries per head"] == 1_048_576
    assert "explain" not in json.loads(tfcost("estimate", "gpt2-small", "--format", "json").stdout)
    markdown = tfcost("estimate", "gpt2-small", "--explain", "--format", "markdown").stdout
    assert "- `score entries per head = T² = 1,024² = 1,048,576 (1.05 M)  [docs/formulas.md, " in markdown
    for command in (("train", "gpt2-small", "--gpus", "8"), ("serve", "llama-3-8b")):
        run = tfcost(*command, "--explain")
        assert run.code == 0 and "Working (--explain):" in run.stdout, command


def test_the_docs_lines_are_the_output(tfcost) -> None:
    """docs/commands.md's excerpt of `tfcost estimate gpt2-small --explain` is lines the command prints."""
    doc = (Path(__file__).parent.parent / "docs" / "commands.md").read_text(encoding="utf-8")
    section = doc.split("### Every number's working: `--explain`", 1)[1]
    excerpt = section.split("```\n", 2)[1].splitlines()
    printed = set(tfcost("estimate", "gpt2-small", "--explain").stdout.splitlines())
    assert len(excerpt) >= 5 and all(line in printed for line in excerpt)


def test_json_has_explain_only_when_asked() -> None:
    shape = load_model("gpt2-small")
    assert "explain" not in report.estimate(shape, Workload()).model_dump(mode="json")
    dumped = report.estimate(shape, Workload(), explained=True).model_dump(mode="json")
    assert dumped["explain"][0]["quantity"] == "embedding/tokens"


@pytest.mark.parametrize("name", ["gemma-3-27b", "llama-4-scout", "mistral-small-3.1-24b", "qwen3.5-35b-a3b"])
def test_a_multimodal_models_working_counts_its_towers(name: str) -> None:
    """Each tower row is a line, and the total's sum of the parts has them."""
    config = json.loads((Path(__file__).parent / "data" / "hf_configs" / f"{name}.json").read_text())
    shape = model_from_mapping(read_config(config).mapping, name, name)
    lines = estimate_lines(shape, 1000, 1, "bf16", False)
    check(lines)
    towers = [line for line in lines if "towers/" in line.quantity]
    assert sum(line.value for line in towers) == sum(
        count for part, count in params.parameter_breakdown(shape).items() if part.startswith("towers/")
    )
