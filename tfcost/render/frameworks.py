"""`tfcost frameworks`: the trainers and engines as tables, and the one line `train` and `serve` print about the
framework a run was priced under."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tfcost.render.common import clean, neutral
from tfcost.render.layout import new_table, print_table, terminal_width
from tfcost.schema import Framework, FrameworkUsed


def framework_rows(frameworks: Sequence[Framework]) -> list[dict[str, Any]]:
    """A row per framework: what the listing shows, for CSV."""
    return [
        {
            "name": framework.name,
            "kind": framework.kind,
            "title": framework.title,
            "versions": " ".join(release.version for release in framework.versions),
            "newest": framework.versions[-1].version,
            "url": framework.url,
        }
        for framework in frameworks
    ]


def print_frameworks(frameworks: Sequence[Framework], output: str) -> None:
    """The listing in the format asked (table, JSON of the whole files, CSV, markdown), by name in natural order."""
    from tfcost.render.listing import Column, print_listing

    columns = [
        Column("name", lambda row: row["name"], "left"),
        Column("kind", lambda row: row["kind"], "left"),
        Column("title", lambda row: row["title"], "left"),
        Column("versions", lambda row: row["versions"], "left"),
    ]
    print_listing(
        framework_rows(frameworks),
        columns,
        output,
        "Frameworks (--framework NAME[@VERSION])",
        notes=["Every field with its source: `tfcost frameworks NAME`; as data: --format json or csv."],
        optional=["title"],
        document=list(frameworks),
    )


def field_rows(used: FrameworkUsed) -> list[dict[str, Any]]:
    """A row per convention of a framework release, for CSV."""
    return [
        {"field": key, "value": field.value, "switch": field.switch, "source": field.source}
        for key, field in used.fields.items()
    ]


def framework_table(framework: Framework, used: FrameworkUsed, markdown: bool = False) -> None:
    used = neutral(used)
    title = f"{clean(framework.title)} {used.version} ({framework.kind}): {clean(framework.about)}"
    table = new_table(markdown, title=title, title_justify="left")
    for column in ("field", "value", "set by its users as"):
        table.add_column(column)
    rows = field_rows(used)
    for row in rows:
        table.add_row(row["field"], str(row["value"]), row["switch"] or "-")
    releases = ", ".join(release.version for release in framework.versions)
    sources = [f"{row['field']}: {row['source']}" for row in rows]
    print_table(table, f"Releases: {releases} (NAME@VERSION picks one). Read at: {used.source or '-'}", *sources)


def framework_line(used: FrameworkUsed | None) -> str | None:
    """What `train` and `serve` say under their table about the conventions that priced the run."""
    if used is None:
        return None
    if used.name is None:
        overridden = f"; set: {', '.join(used.overridden)}" if used.overridden else ""
        return (
            "Framework: none given, tfcost's defaults assumed (name yours with --framework, `tfcost frameworks`; "
            f"--format json lists every convention){overridden}."
        )
    values = ", ".join(f"{key}={field.value}" for key, field in used.fields.items())
    overridden = f" (--framework-set: {', '.join(used.overridden)})" if used.overridden else ""
    return f"Framework: {clean(used.title)} {used.version}{overridden}: {values}."


def print_framework_line(result: Any, output: str) -> None:
    """The framework line after a `train` or `serve` table (JSON and CSV carry the `framework` field instead)."""
    line = framework_line(getattr(result, "framework", None))
    if line is not None and output in ("table", "markdown"):
        import sys
        import textwrap

        width = terminal_width() or 100
        sys.stdout.write(textwrap.fill(line, width=max(width, 40), break_on_hyphens=False) + "\n")
