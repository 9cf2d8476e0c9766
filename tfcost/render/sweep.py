"""`tfcost sweep`: a table per metric over T, the crossovers in words, CSV and JSON."""

from __future__ import annotations

import csv
import dataclasses
import io
import sys
from typing import TYPE_CHECKING

from tfcost import __version__
from tfcost.render import safe_text
from tfcost.render.common import neutral
from tfcost.render.estimate import CROSSOVER_NOTE, crossover_cells
from tfcost.render.layout import console, new_table, print_table, terminal_width
from tfcost.units import human

if TYPE_CHECKING:
    from tfcost.costs.crossover import Crossover
    from tfcost.costs.sweep import SweepReport


def crossover_line(c: Crossover) -> str:
    """One crossover in words: T rounded down and the exact crossing, or why there is none."""
    if c.seq_len is None:
        return f"{c.model}: {c.label}: none, {c.reason}."
    value, exact = crossover_cells(c)
    crossing = f"exact {exact}" if c.exact is not None else f"crossing at about {exact}"
    return f"{c.model}: {c.label} at T = {value} (rounded down; {crossing})."


PAST_CONTEXT_MARK = "*"


def context_note(report: SweepReport) -> list[str]:
    """The note under a sweep's table or chart naming the models swept past their own context, if any."""
    from tfcost.costs.sweep import past_context

    past = [
        f"{model} ({context:,})"
        for model, context in zip(report.models, report.contexts, strict=True)
        if any(past_context(report, model))
    ]
    if not past:
        return []
    return [
        f"{PAST_CONTEXT_MARK} past the model's own context: {', '.join(past)}; priced as asked, "
        "but the model was not built for it."
    ]


def sweep_table(report: SweepReport, markdown: bool = False) -> None:
    """A table per metric: T down the side, a column per model (and batch, where the metric depends on it); a value
    at a T past that model's context is marked."""
    from tfcost.costs.sweep import METRICS, past_context

    report = neutral(report)
    several_batches = len(report.batches) > 1
    marks = {model: past_context(report, model) for model in report.models}
    for metric in report.metrics:
        spec = METRICS[metric]
        series = [s for s in report.series if s.metric == metric]
        table = new_table(markdown, title=spec.label, title_justify="left")
        table.add_column("T", justify="right", no_wrap=True)
        for s in series:
            name = f"{s.model} B={s.batch}" if spec.per_batch and several_batches else s.model
            table.add_column(name, justify="right", no_wrap=True)
        for index, seq_len in enumerate(report.seq_lens):
            cells = [
                human(s.values[index], spec.unit) + (PAST_CONTEXT_MARK if marks[s.model][index] else "") for s in series
            ]
            table.add_row(f"{seq_len:,}", *cells)
        last = metric == report.metrics[-1]
        notes = [crossover_line(c) for c in report.crossovers] + [CROSSOVER_NOTE] if last else []
        print_table(table, *(context_note(report) + notes if last else []))


def sweep_csv(report: SweepReport) -> None:
    """One row per model, batch and T, a column per metric. Written as joined lines: csv.writer's per-row cost
    was most of a 10,000-row sweep; only the model name can need quoting, and it is quoted once per model."""
    from tfcost.costs.sweep import METRICS

    report = neutral(report)
    by_key = {(s.model, s.batch, s.metric): s.values for s in report.series}
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(["model", "batch", "seq_len", *report.metrics])
    quoted = io.StringIO()
    first = report.batches[0]
    for model in report.models:
        quoted.seek(0)
        quoted.truncate()
        csv.writer(quoted, lineterminator="").writerow([safe_text.csv_cell(model)])
        for batch in report.batches:
            prefix = f"{quoted.getvalue()},{batch},"
            columns = [
                by_key[(model, batch if METRICS[metric].per_batch else first, metric)] for metric in report.metrics
            ]
            if len(columns) == 1:
                lines = [f"{prefix}{t},{v}\n" for t, v in zip(report.seq_lens, columns[0], strict=True)]
            else:
                lines = [prefix + ",".join(map(str, row)) + "\n" for row in zip(report.seq_lens, *columns, strict=True)]
            out.write("".join(lines))
    sys.stdout.write(out.getvalue())


def sweep_json(report: SweepReport) -> None:
    import json  # the JSON and CSV paths only: a table need not import it

    document = {"tfcost_version": __version__, **dataclasses.asdict(report)}
    sys.stdout.write(json.dumps(document, indent=1, allow_nan=False) + "\n")


def sweep_chart(text: str, report: SweepReport) -> None:
    """The terminal chart (drawn by tfcost.render.plot), then the crossovers in words."""
    report = neutral(report)
    sys.stdout.write(text)
    width = terminal_width()
    lines = [*(crossover_line(c) for c in report.crossovers), CROSSOVER_NOTE]
    if width is None:
        sys.stdout.write("".join(f"{line}\n" for line in lines))
        return
    out = console(width=width)  # wrapped to the terminal, as the notes under a table
    for line in lines:
        out.print(line)
