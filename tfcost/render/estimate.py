"""`tfcost estimate`, `compare`, `check` and `inspect`: a model's counts, FLOPs and memory at one workload."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from tfcost.render.common import CONVENTIONS, neutral, print_csv, report_rows
from tfcost.render.layout import add_section, new_table, print_table, terminal_width
from tfcost.render.sections import LABEL_WIDTH, exact, quantity_rows, sections_table
from tfcost.units import Unit, human

if TYPE_CHECKING:
    from tfcost.costs.crossover import Crossover
    from tfcost.engines.report import CheckReport, EngineEstimate
    from tfcost.reports.estimate import CrossoverReport, Estimate
    from tfcost.reports.stored import InspectReport


def workload_caption(result: Estimate | EngineEstimate | CheckReport) -> str:
    w = result.workload
    mask = "causal-masked scores" if w.causal else "full T x T scores"
    images = f" + {w.images:,} image{'s' * (w.images > 1)}" if getattr(w, "images", 0) else ""
    images += f" + {w.audio_seconds:g} s of audio" if getattr(w, "audio_seconds", 0) else ""
    return f"T = {w.seq_len:,} tokens{images}, batch {w.batch:,}, {w.dtype}, {mask}"


def estimate_table(result: Estimate | EngineEstimate, markdown: bool = False) -> None:
    from tfcost.reports.estimate import SECTIONS, Estimate  # here: train and serve build none of its classes

    result = neutral(result)
    notes = [f"source: {result.source}"] if result.source else []
    title = f"{result.model}: {workload_caption(result)}"
    if not isinstance(result, Estimate):  # the transformers engine answered: its module is imported only then
        from tfcost.engines.report import ENGINE_NOTE, ENGINE_SECTIONS

        sections_table(result, ENGINE_SECTIONS, title, [*notes, ENGINE_NOTE], markdown)
        return
    found = result.crossovers or []
    crossovers = [(c.label, *crossover_cells(c)) for c in found]
    notes += [result.kv_cache.note] if result.kv_cache.note else []
    notes += [f"{c.label}: none, {c.reason}." for c in found if c.reason]
    notes.append(CROSSOVER_NOTE)
    sections_table(result, SECTIONS, title, [*notes, CONVENTIONS], markdown, extra={"Crossovers (T)": crossovers})


CROSSOVER_NOTE = (
    "Crossovers are rounded down: the largest T at which the growing cost is at most the fixed one (it is larger "
    "from T + 1 on); 'exact' is the crossing itself, a fraction where the cost is linear in T there."
)


MIXED_NUMBER_DENOMINATOR = 10**6  # larger denominators are shown as decimals


def crossover_cells(c: Crossover | CrossoverReport) -> tuple[str, str]:
    """The value and exact cells of a crossover: T rounded down, and the crossing as a fraction or a decimal."""
    if c.seq_len is None:
        return "none", ""
    if c.exact is not None:
        numerator, denominator = (int(part) for part in c.exact.split("/"))
        whole, rest = divmod(numerator, denominator)
        if rest == 0:
            exact = f"{whole:,}"
        elif denominator <= MIXED_NUMBER_DENOMINATOR:
            exact = f"{whole:,} {rest}/{denominator}"
        else:  # an absurd model's fraction would be wider than the table; JSON keeps it whole
            exact = f"{numerator / denominator:,.4f}"
    else:
        crossing = getattr(c, "crossing", None)  # a sweep's crossovers carry it as a float for the charts
        exact = f"{crossing:,.4f}" if crossing is not None else ""
    return f"{c.seq_len:,}", exact


def check_table(result: CheckReport, markdown: bool = False) -> None:
    """Per quantity: tfcost's value, transformers', and the difference; the verdict under it."""
    result = neutral(result)
    table = new_table(markdown, title=f"{result.model}: tfcost vs transformers", title_justify="left")
    for name in ("quantity", "tfcost (analytic)", "transformers", "difference"):
        table.add_column(name, justify="left" if name == "quantity" else "right", no_wrap=True)
    for row in result.rows:
        difference = "0" if row.difference == 0 else f"{row.difference:+,}"
        table.add_row(row.quantity, exact(row.analytic), exact(row.transformers), difference)
    verdict = "agree on every quantity" if result.agree else "DIFFER (transformers minus tfcost shown)"
    notes = [f"source: {result.source}"] if result.source else []
    print_table(table, workload_caption(result), *notes, f"the two engines {verdict}", CONVENTIONS)


def compare_table(
    results: Sequence[Estimate | EngineEstimate], breakdowns: bool = False, markdown: bool = False
) -> None:
    """Models as columns. The per-part breakdowns are left out unless asked for: with many models they are
    most of the table and little of the comparison."""
    from tfcost.reports.estimate import SECTIONS, Estimate  # here: train and serve build none of its classes

    results = neutral(list(results))
    blocks = []  # (heading, rows of [label, a cell per model])
    for section, heading in SECTIONS.items():
        columns = [
            {
                key: (label, unit, value)
                for key, label, unit, value in section_rows(getattr(r, section, None), breakdowns)
            }
            for r in results
        ]
        keys = list(dict.fromkeys(key for column in columns for key in column))
        rows = []
        for key in keys:
            label = next(column[key][0] for column in columns if key in column)
            cells = []
            for column in columns:
                if key not in column:
                    cells.append("-")
                else:
                    _, unit, value = column[key]
                    cells.append("" if value is None else human(value, unit))
            rows.append([label, *cells])
        if rows:  # an optional section none of the models has (images, stored bytes) is left out
            blocks.append((heading, rows))

    def layout(chosen: Sequence[int], rowwise: bool) -> Any:
        """The table of the models at indices `chosen`; `rowwise`: a row per quantity, its label free to wrap."""
        table = new_table(markdown, title=workload_caption(results[0]), title_justify="left")
        table.add_column("quantity", no_wrap=not rowwise, max_width=label_width if rowwise else None)
        for index in chosen:
            table.add_column(results[index].model, justify="right", no_wrap=True)
        for heading, rows in blocks:
            table.add_section()
            add_section(table, heading, [[row[0], *(row[1 + index] for index in chosen)] for row in rows], rowwise)
        return table

    everyone = list(range(len(results)))
    notes = [CONVENTIONS] if breakdowns else ["Per-part breakdowns: --breakdown.", CONVENTIONS]
    engines = sorted({result.model for result in results if result.engine == "transformers"})
    if engines:
        notes.append(f"Answered by the transformers engine (meta device, FlopCounterMode): {', '.join(engines)}.")
    stepped = [result for result in results if isinstance(result, Estimate) and result.kv_cache.note]
    notes += [f"{result.model}: {result.kv_cache.note}" for result in stepped]
    # Widths from the cells themselves (a cell's text, its padding and a rule), not from a layout of the whole
    # table, which for 56 models took longer than the rest of the command.
    width = None if markdown else terminal_width()
    labels = max(len(row[0]) for _, rows in blocks for row in rows)
    # Wrapped labels break between words only: a label's longest word (a breakdown's path) is never cut.
    label_width = max([LABEL_WIDTH, *(len(row[0]) - len(row[0].lstrip()) + max(map(len, row[0].split()), default=0)
                                      for _, rows in blocks for row in rows)])  # fmt: skip
    column_widths = [
        max([len(results[index].model), *(len(row[1 + index]) for _, rows in blocks for row in rows)]) + 3
        for index in everyone
    ]
    if width is None or labels + 4 + sum(column_widths) <= width:
        print_table(layout(everyone, False), *notes)
        return
    if min(label_width, labels) + 4 + sum(column_widths) <= width:  # every model side by side, the labels wrapped
        print_table(layout(everyone, True), *notes)
        return
    # Too wide: as many tables as it takes, each holding as many models as fit; the labels whole (stacked lines,
    # cheap to lay out) where two models fit beside them, else wrapped a row per quantity.
    rowwise = labels + 4 + 2 * max(column_widths) > width
    label_column = (min(label_width, labels) if rowwise else labels) + 3
    groups: list[list[int]] = [[]]
    used = label_column + 1
    for index in everyone:
        if groups[-1] and used + column_widths[index] > width:
            groups.append([])
            used = label_column + 1
        groups[-1].append(index)
        used += column_widths[index]
    for number, group in enumerate(groups, 1):
        print_table(layout(group, rowwise), *(notes if number == len(groups) else []))


def section_rows(section: BaseModel | None, breakdowns: bool) -> Iterator[tuple[str, str, Unit, int | None]]:
    """A section's rows, or none where a result lacks the section (the transformers engine has no score matrix)."""
    return quantity_rows(section, breakdowns=breakdowns) if section is not None else iter(())


def compare_csv(results: Sequence[Estimate | EngineEstimate]) -> None:
    """compare as CSV: a row per quantity, a column of exact values per model ('' where a model lacks it)."""
    results = neutral(list(results))
    columns = [{key: (label, unit, value) for key, label, unit, value in report_rows(r)} for r in results]
    keys = list(dict.fromkeys(key for column in columns for key in column))
    names = [r.model for r in results]
    header = ["quantity", "label", "unit", *names]
    if len(set(names)) < len(names):  # the same model twice (a --set variant keeps its name only with name=)
        header = ["quantity", "label", "unit", *(f"{name} [{n}]" for n, name in enumerate(names, 1))]
    rows = []
    for key in keys:
        label, unit, _ = next(column[key] for column in columns if key in column)
        values = [column[key][2] if key in column else "" for column in columns]
        rows.append(dict(zip(header, [key, label, unit, *values], strict=True)))
    print_csv(rows, header)


def inspect_table(result: InspectReport, markdown: bool = False) -> None:
    """`tfcost inspect`: the stored bytes, with the model the files hold and the tensors outside the op tables."""
    result = neutral(result)
    stored = result.stored
    title = f"{result.checkpoint}: {len(stored.files):,} file{'s' if len(stored.files) != 1 else ''}, headers only"
    notes = [f"source: {result.source}"] if result.source else ["no config: the model is not priced"]
    if result.parameters is not None:
        notes.append(f"tfcost counts {result.parameters:,} parameters for {result.model}")
    if stored.unaccounted:
        shown = ", ".join(stored.unaccounted)
        notes.append(f"outside the op tables ({human(stored.unaccounted_bytes, 'bytes')}): {shown}")
    sections_table(result, {"stored": "Stored bytes (the files' headers)"}, title, [*notes, CONVENTIONS], markdown)
