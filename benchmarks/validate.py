"""How close are tfcost's predictions to published measurements it was never tuned on? (issue 22)

    python benchmarks/validate.py            # print per category, fitted and held-out halves apart
    python benchmarks/validate.py --write    # also regenerate docs/validation.md and validation/predictions.json

Each case of validation/cases.yaml names a published measurement, its source and quoted row, the tfcost command
that reproduces its setup (an argv, run in-process through tfcost.cli.main.main) and the field of the command's
JSON output to compare (`predicted_field`, an arithmetic expression over dotted paths). held_out is true iff
id % 3 == 0, fixed before any constant was set: constants are fitted on the other cases only.

Error of one case: |ln(predicted / measured)|. Per category and half: the geometric-mean error
exp(mean |ln ratio|) - 1, and the share of cases within 10% and within 25%, in the same symmetric measure:
|ln ratio| <= ln 1.10, <= ln 1.25 (a ratio from 0.80 to 1.25 is within 25%). The cases listed outside 25% are the
complement of that share.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import math
import operator
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "validation" / "cases.yaml"
PREDICTIONS = ROOT / "validation" / "predictions.json"
DOC = ROOT / "docs" / "validation.md"
# The error bars tfcost prints beside its approximate figures (tfcost.costs.intervals), from the cases below.
ERROR_BARS = ROOT / "presets" / "validation-errors.json"
# The figures the error bars are given for: a prediction of a time, a memory or a capacity (a time-like amount), or
# of a rate (tokens/s, FLOP/s, MFU), whose error runs the other way for the time it stands for.
RATE_FIELDS = ("tokens_per_s", "time.gpu_hours * 3600)", "flops_per_s", "model_utilization")
# Only categories with this many compared runs get an error bar; a framework, this many of its own.
MIN_RUNS = 5
CATEGORIES = [
    "serving",
    "training_memory",
    "step_time",
    "kv_capacity",
    "flops",
    "local_inference",
    "finetune_memory",
    "serving_load",
    "moe_step_time",
]
HALVES = [("fitted", False), ("held out", True)]

OPERATORS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}


def load_cases() -> list[dict[str, Any]]:
    with CASES.open() as file:
        return yaml.safe_load(file)


def lookup(output: dict[str, Any], path: str) -> float:
    value: Any = output
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            raise KeyError(f"no field {path!r} in the output")
        value = value[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"field {path!r} is {value!r}, not a number")
    return float(value)


def evaluate(expression: str, output: dict[str, Any]) -> float:
    """The value of `expression`: numbers, dotted paths into `output`, + - * / ** and parentheses."""

    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return float(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
            return OPERATORS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.Name | ast.Attribute):
            return lookup(output, ast.unparse(node))
        raise ValueError(f"unsupported expression {ast.unparse(node)!r}")

    return walk(ast.parse(expression, mode="eval"))


def run_tfcost(argv: list[str]) -> dict[str, Any]:
    """tfcost's JSON output for `argv`, run in this process (from the repository root, for relative paths)."""
    from tfcost.cli.main import main

    stdout, stderr = io.StringIO(), io.StringIO()
    here = Path.cwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                main(list(argv))
            except SystemExit as exit_:
                if exit_.code:
                    raise RuntimeError(stderr.getvalue().strip() or f"exit {exit_.code}") from None
    finally:
        os.chdir(here)
    return json.loads(stdout.getvalue())


def with_batch(argv: list[str], batch: int) -> list[str]:
    out = list(argv)
    out[out.index("-B") + 1] = str(batch)
    return out


def predict(case: dict[str, Any]) -> float:
    """The case's prediction: run its command (twice for `batch: max`) and evaluate its predicted_field."""
    argv = [str(word) for word in case["command"]]
    output = run_tfcost(argv)
    if case.get("batch") == "max":
        output = run_tfcost(with_batch(argv, int(lookup(output, "expected.max_batch"))))
    return evaluate(case["predicted_field"], output)


def predict_all(cases: list[dict[str, Any]], held_out_only: bool = False) -> dict[str, float | str]:
    """Every supported case's prediction by id (a string where tfcost refused the command)."""
    out: dict[str, float | str] = {}
    for case in cases:
        if "command" not in case or (held_out_only and not case["held_out"]):
            continue
        try:
            out[str(case["id"])] = predict(case)
        except (RuntimeError, KeyError, ValueError, ZeroDivisionError) as error:
            out[str(case["id"])] = f"error: {error}"
    return out


def summary(cases: list[dict[str, Any]], predictions: dict[str, float | str]) -> dict[tuple[str, bool], dict]:
    """Per (category, held_out): cases, geometric-mean error, shares within 10% and 25%, and the outliers."""
    table: dict[tuple[str, bool], dict] = {}
    for category in CATEGORIES:
        for _, held_out in HALVES:
            rows = [c for c in cases if c["category"] == category and c["held_out"] == held_out]
            logs, outside = [], []
            for case in rows:
                value = predictions.get(str(case["id"]))
                if not isinstance(value, float) or value <= 0:
                    continue
                ratio = value / float(case["measured"])
                logs.append(abs(math.log(ratio)))
                if abs(math.log(ratio)) > math.log(1.25):  # the complement of within_25 below
                    outside.append((case["id"], ratio, case.get("known_error", "")))
            n = len(logs)
            table[category, held_out] = {
                "cases": len(rows),
                "supported": sum("command" in c for c in rows),
                "compared": n,
                "geomean_error": math.exp(sum(logs) / n) - 1 if n else math.nan,
                "within_10": sum(x <= math.log(1.1) for x in logs) / n if n else math.nan,
                "within_25": sum(x <= math.log(1.25) for x in logs) / n if n else math.nan,
                "outside_25": outside,
                "failed": [c["id"] for c in rows if isinstance(predictions.get(str(c["id"])), str)],
            }
    return table


def quantile(values: list[float], q: float) -> float:
    """The q-quantile of `values` by linear interpolation between order statistics (numpy's default)."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def framework_of(case: dict[str, Any]) -> str | None:
    """The framework a case's command names (--framework NAME[@VERSION]), without its release."""
    command = [str(word) for word in case.get("command", [])]
    if "--framework" not in command:
        return None
    return command[command.index("--framework") + 1].partition("@")[0]


def error_bars(cases: list[dict[str, Any]], predictions: dict[str, float | str]) -> dict[str, Any]:
    """Per category (and framework with MIN_RUNS cases of its own): the spread of predicted / measured over every
    compared case, both halves, each turned into the ratio of a time-like amount (a rate's ratio inverted), as the
    10th and 90th percentiles, with the geometric-mean error and the runs it rests on."""

    def bar(rows: list[tuple[dict[str, Any], float]]) -> dict[str, Any]:
        ratios = [ratio for _, ratio in rows]
        return {
            "runs": len(rows),
            "held_out_runs": sum(1 for case, _ in rows if case["held_out"]),
            "geo_mean_error": round(math.exp(sum(abs(math.log(r)) for r in ratios) / len(ratios)) - 1, 4),
            "ratio_p10": round(quantile(ratios, 0.1), 4),
            "ratio_p90": round(quantile(ratios, 0.9), 4),
        }

    out: dict[str, Any] = {
        "source": "benchmarks/validate.py --write: validation/cases.yaml against validation/predictions.json",
        "ratio": "predicted / measured of a time, memory or capacity (a rate's inverted), 10th and 90th percentile",
        "categories": {},
    }
    for category in CATEGORIES:
        rows = []
        for case in cases:
            value = predictions.get(str(case["id"]))
            if case["category"] != category or not isinstance(value, float) or value <= 0:
                continue
            ratio = value / float(case["measured"])
            rate = any(field in str(case.get("predicted_field", "")) for field in RATE_FIELDS)
            rows.append((case, 1 / ratio if rate else ratio))
        if len(rows) < MIN_RUNS:
            continue
        entry = bar(rows)
        by_framework: dict[str, list[tuple[dict[str, Any], float]]] = {}
        for case, ratio in rows:
            name = framework_of(case)
            if name is not None:
                by_framework.setdefault(name, []).append((case, ratio))
        entry["by_framework"] = {
            name: bar(found) for name, found in sorted(by_framework.items()) if len(found) >= MIN_RUNS
        }
        out["categories"][category] = entry
    return out


def percent(x: float, digits: int = 0) -> str:
    return "-" if math.isnan(x) else f"{100 * x:.{digits}f}%"


def half_lines(table: dict[tuple[str, bool], dict], held_out: bool) -> list[str]:
    lines = [
        "| category | cases | unsupported | compared | geo-mean error | within 10% | within 25% |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for category in CATEGORIES:
        row = table[category, held_out]
        lines.append(
            f"| {category} | {row['cases']} | {row['cases'] - row['supported']} | {row['compared']} | "
            f"{percent(row['geomean_error'], 1)} | {percent(row['within_10'])} | {percent(row['within_25'])} |"
        )
    return lines


def overall(cases: list[dict[str, Any]], predictions: dict[str, float | str], held_out: bool) -> str:
    logs = [
        abs(math.log(v / float(c["measured"])))
        for c in cases
        if c["held_out"] == held_out and isinstance(v := predictions.get(str(c["id"])), float) and v > 0
    ]
    if not logs:
        return "no cases"
    geo = math.exp(sum(logs) / len(logs)) - 1
    within = sum(x <= math.log(1.25) for x in logs)
    return f"{len(logs)} cases, geo-mean error {percent(geo, 1)}, {within} of {len(logs)} within 25%"


def report(cases: list[dict[str, Any]], predictions: dict[str, float | str]) -> str:
    table = summary(cases, predictions)
    out = []
    for name, held_out in HALVES:
        out.append(f"{name}: {overall(cases, predictions, held_out)}")
        out.extend(half_lines(table, held_out))
        for category in CATEGORIES:
            row = table[category, held_out]
            for id_, ratio, why in row["outside_25"]:
                out.append(f"  outside 25%: {category} #{id_} ratio {ratio:.3f}{' (' + why + ')' if why else ''}")
            for id_ in row["failed"]:
                out.append(f"  failed: {category} #{id_}: {predictions[str(id_)]}")
        out.append("")
    return "\n".join(out)


def markdown(cases: list[dict[str, Any]], predictions: dict[str, float | str]) -> str:
    """docs/validation.md, made from the cases and the recorded predictions only (so a test can rebuild it)."""
    table = summary(cases, predictions)
    lines = [
        "# Validation against published measurements",
        "",
        "Generated by `python benchmarks/validate.py --write` from `validation/cases.yaml` (each case: its source,",
        "the quoted row, the setup and the tfcost command) and `validation/predictions.json`; do not edit by hand.",
        "A case is held out iff its id is divisible by 3, a rule fixed before any constant was set; constants are",
        "fitted on the other cases only. Error: geometric mean of |ln(predicted / measured)|, shown as",
        "exp(mean) - 1. Unsupported cases (a setup tfcost cannot express) are kept in the file and counted apart.",
        "The held-out figures have been seen since: no constant was fitted on them, but terms were added because a",
        "source says an engine or trainer does something, and some held-out commands were corrected from their",
        "sources after their figures were seen (#15, #18 and #66 in an earlier round; #48, whose notes say why; and",
        "rules applied to both halves alike: the throughput fields, --gqa-decode, --flash-kernel fa1, selective-op;",
        "later --trt-session on every gptSessionBenchmark case, held-out #51, #54, #57 and #60 with the rest, its",
        "110 us a layer fitted on fitted #58, #59, #61 and #94 only, though #57's and #60's published rows were read",
        "in the source). In the round after, by rules read at each run's source and applied to every case they",
        "cover, held out or not: vLLM V1's profile run (#48, #84), Llama 3's 8K-stage settings from its paper (#69,",
        "with fitted #68; v 8 read off the text), torchtitan's global batch, norm kernel, loss and FSDP2 (#21, #75),",
        "llm-foundry's no dropout, train metrics and every-micro-batch reduce (#6, #9, #12, #87) and torchtune's",
        "configs (#24, #27, #90). Terms that moved held-out predictions without a command change: FSDP's root unit",
        "kept gathered (#15, #18, #27, #90), fp8's saved matmuls under torchtitan's op-level policy and the output",
        "head in BF16 under fp8 (#75), NCCL's SMs beside overlapped collectives (every overlapped data-parallel",
        "case), ZeRO-3's GEMMs at 0.79 of MAMF, a share fitted on the fitted step-time cases only, whose held-out",
        "step-time error went from 13% to 7% with it (the fitted half's from 16% to 11%), and FP8 training's",
        "quantization passes, counted from Transformer Engine's and torchao's code, with the FP8 training GEMM",
        "fraction refitted on the fitted half (0.59; #66, #75 moved: held-out step time 6.8% -> 7.2%); the",
        "share was then set to the fitted half's minimum, 0.79 (it had been 0.80, a hundredth off it): held-out",
        "step time 7.9%. In the round after (2 December): FP8 tensor-parallel all-gathers at one byte (#16, #17),",
        "torchao's FSDP2 float8 all-gather (#17; held-out #75, whose quoted command passes the flag, set after its",
        "figure had been seen), AsyncTP at an exposed share fitted on torchtitan's Table 4 pair, not a case (#17),",
        "Meta's GEMM share for its 500 W H100 in torchao's roofline (#13) and Megatron-LM's 1T run made supported",
        "(#70, 1.13); then the ZeRO-3 share set to the fitted half's new minimum, 0.78: held-out step time",
        "7.7% -> 8.4%, fitted 9.95% -> 9.93%. Then DTensor's tensor-parallel backward, which redoes no all-gather",
        "(--tp-keeps-gathered-input on #16 and #17, read in torchao's code; both move away from their figures):",
        "fitted step time 9.93% -> 10.24%, the share's error flat from 0.74 to 0.78 and the share kept at 0.78, the",
        "async-TP share refitted on its pair (0.78). And the sampler's sort in vLLM V1's profile run, its working",
        "memory counted from PyTorch's and cub's code while looking at held-out #48 after its figure had been seen",
        "(#48, the only case that runs that profile, 1.45 -> 1.27): held-out KV capacity 26% -> 18%. Last, fitted",
        "#23's command was changed to no activation checkpointing, from its table's own figures (both A6000 rows'",
        "memory, and a rate the card cannot reach with it), after its figure had been seen: fitted step time",
        "10.24% -> 8.27% (its recompute_source says why).",
        "The serving_load category (#124-#157, 8 December: SGLang, vLLM and NVIDIA NIM at a stated request rate or",
        "concurrency, TTFT and TPOT apart) prices `serve --concurrency/--rate`'s simulated scheduler; nothing was",
        "fitted to it; the vLLM rows' scheduler settings (--framework-set) were set after the SGLang rows' figures had",
        "been seen.",
        "An outside set the project has never seen is the real test.",
        "",
    ]
    for name, held_out in HALVES:
        lines += [f"## {name.capitalize()} cases", "", overall(cases, predictions, held_out) + ".", ""]
        lines += half_lines(table, held_out)
        lines += ["", "Outside 25%:", ""]
        for category in CATEGORIES:
            for id_, ratio, why in table[category, held_out]["outside_25"]:
                lines.append(f"- #{id_} ({category}), ratio {ratio:.2f}: {why or 'reason not known'}")
        lines.append("")
    lines += [
        "## Every case",
        "",
        "| id | half | category | source | measured | unit | predicted | ratio | note |",
        "|---:|---|---|---|---:|---|---:|---:|---|",
    ]
    for case in cases:
        value = predictions.get(str(case["id"]))
        title = str(case["source"]["title"]).replace("|", "/")
        source = f"[{title}]({case['source']['url']})"
        half = "held out" if case["held_out"] else "fitted"
        if isinstance(value, float):
            shown, ratio = f"{value:.4g}", f"{value / float(case['measured']):.2f}"
            note = case.get("known_error", "")
        else:
            shown, ratio = "-", "-"
            note = f"unsupported: {case['unsupported']}" if "unsupported" in case else str(value)
        lines.append(
            f"| {case['id']} | {half} | {case['category']} | {source} | {case['measured']} | {case['unit']} | "
            f"{shown} | {ratio} | {note.replace('|', '/')} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="regenerate docs/validation.md and predictions.json")
    parser.add_argument("--category", help="only this category's cases (a quick look; never with --write)")
    parser.add_argument("--ids", help="only these case ids, comma-separated (a quick look; never with --write)")
    args = parser.parse_args()
    if args.write and (args.category or args.ids):
        parser.error("--write regenerates the whole table: drop --category/--ids")
    sys.path.insert(0, str(ROOT))
    cases = load_cases()
    if args.category:
        cases = [case for case in cases if case["category"] == args.category]
    if args.ids:
        wanted = {int(word) for word in args.ids.split(",")}
        cases = [case for case in cases if case["id"] in wanted]
    predictions = predict_all(cases)
    print(report(cases, predictions))
    if args.write:
        PREDICTIONS.write_text(json.dumps(predictions, indent=1, sort_keys=True) + "\n")
        DOC.write_text(markdown(cases, predictions))
        ERROR_BARS.write_text(json.dumps(error_bars(cases, predictions), indent=1) + "\n")
        print(f"wrote {PREDICTIONS.relative_to(ROOT)}, {DOC.relative_to(ROOT)} and {ERROR_BARS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
