"""`train`, `serve` and `plan` open with the answer (issue 38): does it fit and by how much, the time or TTFT, TPOT
and tokens/s, the main term and, where it does not fit, the nearest layout that does; the breakdown follows. Each
figure is the one the same command's JSON holds."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tfcost.units import human

README = Path(__file__).parent.parent / "README.md"


def opening(stdout: str) -> str:
    """The answer: the lines before the first blank line, unwrapped."""
    return " ".join(stdout.split("\n\n", 1)[0].split())


def test_serve_opens_with_fit_margin_latency_and_throughput(tfcost):
    args = ("serve", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "32")
    report = json.loads(tfcost(*args, "-f", "json").stdout)
    run = tfcost(*args)
    answer, expected = opening(run.stdout), report["expected"]
    usable, held = report["inputs"]["usable_bytes_per_gpu"], expected["total_bytes_per_gpu"]
    assert answer.startswith(
        f"llama-3-8b on 1 x h100-sxm: fits, {human(held, 'bytes')} of {human(usable, 'bytes')} usable per GPU "
        f"({human(usable - held, 'bytes')} spare); up to batch {expected['max_batch']:,} at P + G."
    )
    assert f"TTFT {human(expected['ttft_ms'], 'ms')}, TPOT {human(expected['tpot_ms'], 'ms')} (expected)" in answer
    assert f"{expected['tokens_per_s']:,.0f} tokens/s in all at B = 32" in answer
    assert f"Main term: decode is {expected['decode_bound']}, prefill {expected['prefill_bound']}." in answer
    # the breakdown follows the answer: the title and the table come after it
    assert run.stdout.index("Main term") < run.stdout.index("llama-3-8b: serving on") < run.stdout.index("┏")


def test_train_opens_with_the_main_term_of_the_predicted_step(tfcost):
    args = ("train", "llama-3-8b", "--gpus", "64", "--gpu", "h100-sxm")
    report = json.loads(tfcost(*args, "-f", "json").stdout)
    answer = opening(tfcost(*args).stdout)
    memory, parts = report["memory_per_gpu"], report["step"]["seconds"]
    needed = memory["total_bytes"] + memory["cuda_context_bytes"] + memory["allocator_reserve_bytes"]
    gpu = report["inputs"]["gpu_memory_bytes"]  # 80 GiB: an H100 SXM
    assert gpu == 80 * 2**30
    assert answer.startswith(
        f"llama-3-8b on 64 x h100-sxm: fits, {human(needed, 'bytes')} of 80.00 GiB per GPU "
        f"({human(gpu - needed, 'bytes')} spare)"
    )
    assert f"takes {human(report['time']['days'], 'days')} ({report['time']['gpu_hours']:,.0f} GPU-hours)" in answer
    name = max((key for key in parts if key != "total"), key=parts.get)
    assert name == "matmuls"  # Llama-3-8B on 64 H100s: the matmuls are most of a step
    share = human(parts[name] / parts["total"], "fraction")
    assert f"Main term: matmuls, {human(parts[name], 'seconds')} of each step ({share})." in answer


def test_a_run_that_does_not_fit_says_by_how_much_and_what_does(tfcost):
    """70B with AdamW at ZeRO-0 holds 16 bytes a parameter on every GPU: 1.1 TB, far over an 80 GiB card."""
    args = ("train", "llama-3.1-70b", "--gpus", "8", "--zero", "0")
    report = json.loads(tfcost(*args, "-f", "json").stdout)
    answer = opening(tfcost(*args).stdout)
    memory = report["memory_per_gpu"]
    needed = memory["total_bytes"] + memory["cuda_context_bytes"] + memory["allocator_reserve_bytes"]
    assert needed > 16 * 70 * 10**9
    assert (
        f"does not fit, {human(needed, 'bytes')} of 80.00 GiB per GPU ({human(needed - 80 * 2**30, 'bytes')} over)"
        in (answer)
    )
    options = " ".join(report["suggestion"]["options"])
    assert answer.endswith(f"Every layout: {report['suggestion']['command']}")
    assert f"Does not fit; the nearest layout that fits: {options} (" in answer


@pytest.mark.parametrize(
    ("args", "first"),
    [
        (("plan", "train", "llama-3.1-70b", "--gpus", "64", "--top", "3"), "fastest of"),
        (("plan", "serve", "llama-3-8b", "--gpus", "8", "--top", "3"), "most tokens/s per GPU of"),
    ],
)
def test_plan_opens_with_its_best_layout(tfcost, args, first):
    report = json.loads(tfcost(*args, "-f", "json").stdout)
    answer = opening(tfcost(*args).stdout)
    best = report["layouts"][0]
    assert answer.startswith(f"{report['model']} on {report['gpus']} x {report['gpu']}: {first} ")
    assert f"{report['feasible']:,} layouts that fit ({report['searched']:,} searched)" in answer
    assert f"{human(best['memory_per_gpu_bytes'], 'bytes')} per GPU" in answer
    if args[1] == "train":
        assert f"{human(best['step_seconds'], 'seconds')} a step, {best['days']:,.2f} days" in answer
    else:
        assert f"{best['tokens_per_s_per_gpu']:,.0f} tokens/s per GPU" in answer


def test_markdown_opens_with_the_answer_as_paragraphs(tfcost):
    out = tfcost("serve", "llama-3-8b", "-f", "markdown").stdout
    assert out.startswith("llama-3-8b on 1 x h100-sxm: fits, ")
    assert out.index("Main term:") < out.index("| quantity |")


def test_json_and_csv_carry_no_answer_lines(tfcost):
    for output in ("json", "csv"):
        assert "Main term" not in tfcost("serve", "llama-3-8b", "-f", output).stdout


def test_the_readme_shows_serve_as_it_prints():
    text = README.read_text(encoding="utf-8")
    said = re.search(r"`tfcost (serve [^`]+)` prints first:\n\n```\n(.*?)```", text, flags=re.DOTALL)
    assert said is not None
    from conftest import run_in_process

    printed = run_in_process(*said.group(1).split()).stdout
    assert printed.startswith(said.group(2))
