"""A report as a quantity/value/exact table, one block per section (estimate, train, serve, inspect), its
--explain lines, and print_report, which picks the format.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any, TypeVar

from pydantic import BaseModel

from tfcost.render.common import neutral, print_json, report_csv
from tfcost.render.layout import add_section, console, fit, new_table, print_table
from tfcost.reports.base import Line
from tfcost.units import Unit, human

Report = TypeVar("Report", bound=BaseModel)


def exact(value: float | str) -> str:
    """The 'exact' column: integers in full, other numbers to four decimals, words left to the value column."""
    if isinstance(value, bool | str):
        return ""
    if isinstance(value, int) or value.is_integer():
        return f"{int(value):,}"
    return f"{value:,.4f}"


LABEL_WIDTH = 30  # a narrowed table's quantity column: labels wrap at this width to leave room for the values


LONG_TEXT = 24  # a text value longer than this (a rate's source) is a numbered note under the table, not a cell


EXACT_DROPPED = "Exact values: --format json or csv (the 'exact' column is left out to fit the terminal)."


def quantity_rows(
    result: BaseModel, prefix: str = "", breakdowns: bool = True
) -> Iterator[tuple[str, str, Unit, int | None]]:
    """(key, label, unit, value) for each reported number of a section; a breakdown is a heading (value None)
    followed by its items, indented, or left out when `breakdowns` is false."""
    for name, field in type(result).model_fields.items():
        extra = field.json_schema_extra
        if not isinstance(extra, dict):
            continue
        unit: Unit = extra["unit"]  # type: ignore[assignment]
        value = getattr(result, name)
        if value is None:  # an optional quantity not asked for (a cost without a price)
            continue
        if isinstance(value, dict):
            if not breakdowns:
                continue
            yield f"{prefix}{name}", f"{field.description}:", unit, None
            for item, amount in value.items():
                yield f"{prefix}{name}.{item}", f"  {item}", unit, amount
        else:
            yield f"{prefix}{name}", field.description or name, unit, value


def sections_table(
    result: BaseModel,
    sections: dict[str, str],
    title: str,
    notes: Sequence[str],
    markdown: bool = False,
    extra: dict[str, Sequence[Sequence[str]]] | None = None,
) -> None:
    """A quantity/value/exact table with one block per section ("" names the result's own quantities), then any
    `extra` blocks of ready rows, then the notes a reader needs to check it. A long text value (a source) is a
    numbered note under the table; on a narrow terminal the exact column goes, then the labels wrap."""
    blocks: list[tuple[str, list[list[str]]]] = []
    sources: list[str] = []
    for attribute, heading in sections.items():
        section = getattr(result, attribute) if attribute else result
        if section is None:  # an optional section not computed (a step time when a throughput was given)
            continue
        rows = []
        for _, label, unit, value in quantity_rows(section):
            if value is None:
                rows.append([label, "", ""])
            elif unit == "text" and isinstance(value, str) and len(value) > LONG_TEXT:
                sources.append(value)
                rows.append([label, f"[{len(sources)}]", ""])
            else:
                rows.append([label, human(value, unit), exact(value)])
        blocks.append((heading, rows))
    blocks += [(heading, [list(row) for row in ready]) for heading, ready in (extra or {}).items()]
    numbered = [f"[{n}] {text}" for n, text in enumerate(sources, 1)]

    def layout(with_exact: bool, rowwise: bool) -> Any:
        table = new_table(markdown, title=title, title_justify="left")
        table.add_column("quantity", no_wrap=not rowwise)
        table.add_column("value", justify="right", no_wrap=True)
        if with_exact:
            table.add_column("exact", justify="right", no_wrap=True)
        for heading, rows in blocks:
            table.add_section()
            add_section(table, heading, [row if with_exact else row[:2] for row in rows], rowwise)
        return table

    table = fit([partial(layout, True, False), partial(layout, False, False), partial(layout, False, True)])
    dropped = [] if len(table.columns) == 3 else [EXACT_DROPPED]
    print_table(table, *numbered, *notes, *dropped)


def explain_text(line: Line) -> str:
    """One explained quantity: quantity = formula = working = result [source] (the formula is left out where it is
    the working itself, a quantity with no symbols)."""
    steps = [line.quantity, line.formula, line.working, line.result]
    if line.formula == line.working:
        steps.remove(line.formula)
    return f"{' = '.join(steps)}  [{line.source}]"


def print_explain(result: BaseModel, markdown: bool = False) -> None:
    """The --explain lines after a table, where the result has them: plain lines, or a Markdown list of code spans
    (the transformers engine's estimate has none: it measures, it does not derive)."""
    explained: list[Line] | None = getattr(result, "explain", None)
    if not explained:
        return
    lines = [explain_text(line) for line in neutral(explained)]
    if markdown:
        sys.stdout.write("\n**Working** (`--explain`)\n\n" + "".join(f"- `{text}`\n" for text in lines))
        return
    out = console(width=1 << 16)  # whole lines: a working is copied and searched as one line
    out.print("Working (--explain):")
    for text in lines:
        out.print(f"  {text}")


def print_report(result: Report, output: str, table: Callable[[Report, bool], None]) -> None:
    """A report as JSON (its --explain lines a key of it), CSV (a row per quantity), or as its table and then its
    --explain lines."""
    if output == "json":
        print_json(result)
    elif output == "csv":
        report_csv(result)
    else:
        table(result, output == "markdown")
        print_explain(result, markdown=output == "markdown")


def default(setup: BaseModel, field: str) -> Any:
    """A setup field's default, so that the report can say when the user's value is it."""
    return type(setup).model_fields[field].default


def images_suffix(setup: BaseModel) -> str:
    """Where --images was given: that T (or P) includes the images' tokens."""
    images, seconds = getattr(setup, "images", 0), getattr(setup, "audio_seconds", 0)
    parts = [f"{images:,} image{'s' * (images > 1)}"] * bool(images) + [f"{seconds:g} s of audio"] * bool(seconds)
    return f" (with the tokens of {' and '.join(parts)})" if parts else ""
