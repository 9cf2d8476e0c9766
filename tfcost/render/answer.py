"""The answer `train`, `serve` and `plan` open with, in a few lines, before their breakdown (one convention for the
three: answer first, then the title and the table): does it fit and by how much, how long or how fast, the main
term, and where it does not fit the nearest layout that does. The figures are the report's own
(tfcost.reports.answer), worded here."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from tfcost.render.common import clean, neutral
from tfcost.render.layout import markdown_text, print_notes
from tfcost.reports.answer import Memory, main_term, serve_memory, train_memory
from tfcost.units import human

if TYPE_CHECKING:
    from tfcost.reports.suggestion import Suggestion


def memory_line(where: str, memory: Memory) -> str:
    """'<where>: fits, 15.27 GiB of 72.00 GiB usable per GPU (56.73 GiB spare)', or 'does not fit ... over'."""
    of = f"{human(memory.needed_bytes, 'bytes')} of {human(memory.available_bytes, 'bytes')}"
    of += " usable per GPU" if memory.usable else " per GPU"
    if memory.fits:
        return f"{where}: fits, {of} ({human(memory.margin_bytes, 'bytes')} spare)"
    return f"{where}: does not fit, {of} ({human(-memory.margin_bytes, 'bytes')} over)"


def suggestion_text(result: Any, what: str) -> list[str]:
    """The nearest layout that fits, where the run does not (its module is loaded only then)."""
    suggestion = getattr(result, "suggestion", None)
    if suggestion is None:
        return []
    return [suggestion_line(suggestion, what)]


def suggestion_line(suggestion: Suggestion, what: str) -> str:
    """One line: the nearest layout that fits (or why none does), and the command that lists them all."""
    from tfcost.reports.plan import NOT_NEAR  # loaded only for a run that does not fit

    suggestion = neutral(suggestion)
    if not suggestion.options:
        if suggestion.reason == NOT_NEAR:  # the search near the asked layout stopped: others may fit
            return f"{what}; {NOT_NEAR}; see `{suggestion.command}`."
        reason = f" (most were refused as: {suggestion.reason})" if suggestion.reason else ""
        return f"No layout of these GPUs fits{reason}; see `{suggestion.command}`."
    figures = []
    if suggestion.step_seconds is not None:
        figures.append(f"{human(suggestion.step_seconds, 'seconds')} a step")
    if suggestion.tokens_per_s_per_gpu is not None:
        figures.append(f"{suggestion.tokens_per_s_per_gpu:,.0f} tokens/s per GPU")
    if suggestion.memory_per_gpu_bytes is not None:
        figures.append(f"{human(suggestion.memory_per_gpu_bytes, 'bytes')} per GPU")
    return (
        f"{what}; the nearest layout that fits: {' '.join(suggestion.options)} ({', '.join(figures)}). "
        f"Every layout: {suggestion.command}"
    )


def train_answer(result: Any) -> list[str]:
    """`train`: fits and by how much, the wall clock and GPU-hours, the step and MFU, the main term."""
    s, time = result.setup, result.time
    lines = [memory_line(f"{result.model} on {s.gpus:,} x {result.gpu}", train_memory(result))]
    cost = f", {human(time.cost, 'usd')}" if getattr(time, "cost", None) is not None else ""
    took = f"Training {human(s.tokens, 'count')} tokens takes {human(time.days, 'days')} "
    took += f"({time.gpu_hours:,.0f} GPU-hours{cost})"
    step = getattr(result, "step", None)
    term = main_term(step.seconds) if step is not None else None
    if term is None:  # an MFU or throughput given, or one the GPU table cannot predict: its line says which
        lines.append(f"{took}, {time.throughput_from}.")
    else:
        mfu = human(time.model_utilization, "fraction")
        lines.append(f"{took} at MFU {mfu}; {human(term.step_seconds, 'seconds')} a step.")
        lines.append(
            f"Main term: {term.name}, {human(term.seconds, 'seconds')} of each step ({human(term.share, 'fraction')})."
        )
    return lines + suggestion_text(result, "Does not fit")


def serve_answer(result: Any) -> list[str]:
    """`serve`: fits and by how much (and the largest batch), TTFT, TPOT and tokens/s, and what bounds each phase:
    the expected figures where the report has them, else the roofline bound (the transformers engine)."""
    s = result.setup
    expected = getattr(result, "expected", None)
    latency, which = (expected, "expected") if expected is not None else (result.latency, "bound")
    stages = getattr(s, "pp", 1)
    where = f"{result.model} on {s.gpus:,} x {result.gpu}" + (f" in each of {stages} stages" if stages > 1 else "")
    memory = memory_line(where, serve_memory(result))
    batch = getattr(expected, "max_batch", None) if expected is not None else getattr(result, "max_batch", None)
    memory += f"; up to batch {batch:,} at P + G" if batch is not None else ""
    return [
        memory + ".",
        f"TTFT {human(latency.ttft_ms, 'ms')}, TPOT {human(latency.tpot_ms, 'ms')} ({which}); "
        f"{latency.tokens_per_s_per_sequence:,.0f} tokens/s per sequence, {latency.tokens_per_s:,.0f} tokens/s in "
        f"all at B = {s.batch:,}.",
        f"Main term: decode is {latency.decode_bound}, prefill {latency.prefill_bound}.",
        *suggestion_text(result, "Does not fit (expected)"),
    ]


def plan_train_answer(report: Any) -> list[str]:
    """`plan train`: the fastest layout that fits, its step, days, MFU and memory, and how many fit."""
    best = report.layouts[0]
    layout = f"tp {best.tp} x pp {best.pp} x cp {best.cp} x dp {best.dp:,}"
    layout += f" x ep {best.ep}" if best.ep > 1 else ""
    layout += f", ZeRO-{best.zero}, recompute {best.recompute}, micro-batch {best.micro_batch}"
    layout += f", offload {best.offload}" if best.offload != "none" else ""
    return [
        f"{report.model} on {report.gpus:,} x {report.gpu}: fastest of {report.feasible:,} layouts that fit "
        f"({report.searched:,} searched): {layout}.",
        f"{human(best.step_seconds, 'seconds')} a step, {best.days:,.2f} days, MFU {human(best.mfu, 'fraction')}, "
        f"{human(best.memory_per_gpu_bytes, 'bytes')} per GPU; main term: {best.main_term}.",
    ]


def plan_serve_answer(report: Any) -> list[str]:
    """`plan serve`: the layout with the most tokens/s per GPU, its latency and memory, and how many fit."""
    best = report.layouts[0]
    return [
        f"{report.model} on {report.gpus:,} x {report.gpu}: most tokens/s per GPU of {report.feasible:,} layouts "
        f"that fit ({report.searched:,} searched): tp {best.tp}"
        f"{f' x pp {best.pp}' if best.pp > 1 else ''}{f' x ep {best.ep}' if best.ep > 1 else ''}, "
        f"{best.replicas:,} replica{'s' * (best.replicas != 1)}, batch {best.batch:,}, weights {best.weights_dtype}, "
        f"KV {best.kv_dtype}.",
        f"{best.tokens_per_s_per_gpu:,.0f} tokens/s per GPU, {best.tokens_per_s_per_user:,.1f} per user; TTFT "
        f"{human(best.ttft_ms, 'ms')}, TPOT {human(best.tpot_ms, 'ms')}; {human(best.memory_per_gpu_bytes, 'bytes')} "
        "per GPU.",
    ]


def print_answer(lines: list[str], markdown: bool) -> None:
    """The answer's lines, then a blank line before the breakdown; in Markdown, a paragraph each."""
    lines = [clean(line) for line in lines]
    if markdown:
        sys.stdout.write("".join(f"{markdown_text(line)}\n\n" for line in lines))
        return
    print_notes(*lines)
    sys.stdout.write("\n")
