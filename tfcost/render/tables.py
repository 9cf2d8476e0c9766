"""The one place results become text: rich tables for people, JSON for scripts. The only module importing rich.

Nothing here computes: every number comes from a result object of the core, and each is printed through
tfcost.units in its labelled unit (SI for counts and FLOPs, IEC for bytes).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import math
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from tfcost import __version__
from tfcost.errors import TfcostError, redact_credentials
from tfcost.render import safe_text
from tfcost.reports.base import Line, SourceNotes
from tfcost.schema import GpuSpec, ModelShape
from tfcost.units import Unit, human

if TYPE_CHECKING:  # imported where used: only `measure` needs its report classes built
    from tfcost.costs.crossover import Crossover
    from tfcost.costs.sweep import SweepReport
    from tfcost.engines.report import CheckReport, EngineEstimate, EngineServeReport, EngineTrainReport
    from tfcost.readers.presets import ModelSource
    from tfcost.reports.estimate import CrossoverReport, Estimate
    from tfcost.reports.measure import Measurement, MeasureReport
    from tfcost.reports.serve import ServeReport
    from tfcost.reports.stored import InspectReport
    from tfcost.reports.train import TrainReport

Report = TypeVar("Report", bound=BaseModel)
CONVENTIONS = (
    "FLOPs are 2*m*k*n per matmul (not MACs). Counts and FLOPs in SI units (G = 10^9), bytes in IEC units "
    "(MiB = 2^20 B); --format json gives exact integers."
)


def clean(text: str) -> str:
    """Text from outside made safe to print to a terminal (tfcost.render.safe_text.terminal, the one place)."""
    return safe_text.terminal(text)


NOT_FINITE = "a result is not a finite number; is an option extreme?"


def neutral(value: Any) -> Any:
    """A result whose every string, however deeply nested, has been through clean(), refused if it holds a number
    that is not finite (an MFU of 5e-324 makes a time infinite), as JSON refuses it. Every renderer of text applies
    it to what it is given, before any layout, so no format can forget a field. What needs no change is returned
    as it is (the same object), so a clean result, the common case, is walked but never copied."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TfcostError(NOT_FINITE)
        return value
    if isinstance(value, int | bool) or value is None:
        return value
    if isinstance(value, BaseModel):
        changed = changed_fields(value, type(value).model_fields)
        return value.model_copy(update=changed) if changed else value
    if isinstance(value, dict):
        items = [(neutral(key), neutral(item)) for key, item in value.items()]
        same = all(new[0] is old[0] and new[1] is old[1] for new, old in zip(items, value.items(), strict=True))
        return value if same else dict(items)
    if isinstance(value, list | tuple):
        cleaned = [neutral(item) for item in value]
        return value if all(new is old for new, old in zip(cleaned, value, strict=True)) else type(value)(cleaned)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # a sweep's report and its crossovers
        changed = changed_fields(value, [field.name for field in dataclasses.fields(value)])
        return dataclasses.replace(value, **changed) if changed else value
    return value


def changed_fields(value: Any, names: Iterable[str]) -> dict[str, Any]:
    """The fields of a model or dataclass that neutral() changes, with their new values."""
    changed = {}
    for name in names:
        item = getattr(value, name)
        new = neutral(item)
        if new is not item:
            changed[name] = new
    return changed


def console(width: int | None = None) -> Any:
    from rich.console import Console

    # No markup or emoji codes: model names and sources come from users' files and print exactly as written.
    return Console(file=sys.stdout, highlight=False, soft_wrap=False, markup=False, emoji=False, width=width)


class MarkdownTable:
    """A GitHub-flavoured Markdown table with the few methods of rich's Table that the tables here use, so each
    table is built once and printed either way. A cell of several lines (a section, see add_section) becomes as
    many rows; its first line, the section's heading, is bold."""

    def __init__(self, title: str | None = None, **_: Any) -> None:
        self.title = title
        self.columns: list[str] = []
        self.aligns: list[str] = []
        self.rows: list[list[str]] = []

    def add_column(self, header: str, justify: str = "left", **_: Any) -> None:
        self.columns.append(header)
        self.aligns.append("---:" if justify == "right" else ":---")

    def add_section(self) -> None:
        """Sections are told apart by their bold headings."""

    def add_row(self, *cells: Any) -> None:
        texts = [str(cell) for cell in cells]
        sectioned = any(isinstance(cell, Heading) for cell in cells)  # add_section's stacked lines
        lines = [text.split("\n") for text in texts]
        for index in range(max(len(cell_lines) for cell_lines in lines)):
            row = [cell_lines[index] if index < len(cell_lines) else "" for cell_lines in lines]
            if sectioned and index == 0:
                row[0] = f"**{row[0]}**"
            self.rows.append(row)

    def render(self) -> str:
        out = [f"**{markdown_text(line)}**  " for line in (self.title or "").splitlines()]
        out = [*out[:-1], out[-1].removesuffix("  ")] if out else []
        if out:
            out.append("")
        out.append("| " + " | ".join(markdown_text(c) for c in self.columns) + " |")
        out.append("|" + "|".join(self.aligns) + "|")
        out.extend("| " + " | ".join(markdown_text(c, keep_bold=True) for c in row) + " |" for row in self.rows)
        return "\n".join(out) + "\n"


def markdown_text(text: str, keep_bold: bool = False) -> str:
    """A cell's text made safe for a Markdown table (tfcost.render.safe_text.markdown)."""
    return safe_text.markdown(text, keep_bold)


@dataclasses.dataclass
class Heading:
    """A section's first cell (add_section): its heading, bold, over the rows' labels. It becomes rich's
    Text(heading, style="bold") with the labels appended only when rich prints the table."""

    heading: str
    rest: str = ""

    @property
    def plain(self) -> str:
        return self.heading + self.rest

    def __str__(self) -> str:
        return self.plain

    def rich(self) -> Any:
        from rich.text import Text

        text = Text(self.heading, style="bold")
        text.append(self.rest)
        return text


@dataclasses.dataclass
class PlainColumn:
    """A PlainTable's column: the options of rich's Column that the tables here use, any other option given (which
    leaves the table to rich: cell_widths), and its cells."""

    header: str
    justify: str = "left"
    no_wrap: bool = False
    min_width: int | None = None
    max_width: int | None = None
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    _cells: list[Any] = dataclasses.field(default_factory=list)  # named as rich's, which cell_widths reads
    vertical = "top"

    @property
    def width(self) -> Any:
        return self.options.get("width")

    @property
    def ratio(self) -> Any:
        return self.options.get("ratio")


@dataclasses.dataclass
class PlainRow:
    end_section: bool = False


class PlainTable:
    """A table bound for a file or a pipe, where rich would print it without any style (plain_output), held as
    its cells' text: rich (~10 ms of import, and its objects for every cell) is used only if the table must be
    laid out by rich after all (rich_table), where plain_text does not cover it. It takes the calls the tables
    here make of rich's Table (the title, add_column's justify, no_wrap, min_width and max_width, add_row,
    add_section) and keeps rich's defaults for the rest."""

    show_header = True  # rich's default, read by cell_widths

    def __init__(self, title: str | None = None, title_justify: str = "center") -> None:
        self.title = title
        self.title_justify = title_justify
        self.columns: list[PlainColumn] = []
        self.rows: list[PlainRow] = []

    @property
    def row_count(self) -> int:
        return len(self.rows)

    def add_column(
        self,
        header: str = "",
        justify: str = "left",
        no_wrap: bool = False,
        min_width: int | None = None,
        max_width: int | None = None,
        **options: Any,
    ) -> None:
        column = PlainColumn(header, justify, no_wrap, min_width, max_width, options)
        column._cells = [""] * len(self.rows)  # as rich pads a column added after rows
        self.columns.append(column)

    def add_row(self, *cells: Any) -> None:
        if len(cells) > len(self.columns):
            raise ValueError(f"a row of {len(cells)} cells for a table of {len(self.columns)} columns")
        for column, cell in zip(self.columns, [*cells, *[""] * (len(self.columns) - len(cells))], strict=True):
            column._cells.append("" if cell is None else cell)
        self.rows.append(PlainRow())

    def add_section(self) -> None:
        if self.rows:  # as rich's: the row added last ends a section
            self.rows[-1].end_section = True

    def rich_table(self) -> Any:
        """The same table as rich's Table."""
        from rich.table import Table

        table = Table(title=self.title, title_justify=self.title_justify)  # type: ignore[arg-type]
        for column in self.columns:
            table.add_column(
                column.header,
                justify=column.justify,  # type: ignore[arg-type]
                no_wrap=column.no_wrap,
                min_width=column.min_width,
                max_width=column.max_width,
                **column.options,
            )
        for index, row in enumerate(self.rows):
            cells = [column._cells[index] for column in self.columns]
            table.add_row(
                *(cell.rich() if isinstance(cell, Heading) else cell for cell in cells), end_section=row.end_section
            )
        return table


def plain_output() -> bool:
    """Whether rich would print to standard output with no style and no terminal handling: no terminal (nor
    FORCE_COLOR or TTY_COMPATIBLE, which make rich take one), not Windows, a UTF encoding (rich draws an ASCII box
    otherwise). Anything in doubt is left to rich (rich's Console.is_terminal and _detect_color_system)."""
    import os

    stream = sys.stdout
    if stream is None or sys.platform == "win32" or "FORCE_COLOR" in os.environ or "TTY_COMPATIBLE" in os.environ:
        return False
    try:
        if stream.isatty():
            return False
    except (AttributeError, ValueError):
        return False
    return (getattr(stream, "encoding", "utf-8") or "utf-8").lower().startswith("utf")


def new_table(markdown: bool, **options: Any) -> Any:
    """A rich Table, or a MarkdownTable or PlainTable taking the same calls."""
    if markdown:
        return MarkdownTable(**options)
    if options.keys() <= {"title", "title_justify"} and plain_output():
        return PlainTable(**options)
    from rich.table import Table

    return Table(**options)


def cell_len(text: str) -> int:
    """The cells a line takes on a terminal (rich's cell_len), without importing rich for ASCII."""
    if text.isascii():
        return len(text)
    from rich.cells import cell_len as rich_cell_len

    return rich_cell_len(text)


def terminal_width() -> int | None:
    """The width tables must fit: COLUMNS when set (as rich and the shell set it), else the terminal's; None when
    standard output is no terminal and COLUMNS is unset (a file or a pipe: tables at their natural width)."""
    import os
    import shutil

    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    stream = sys.stdout
    if stream is not None and hasattr(stream, "isatty") and stream.isatty():
        return shutil.get_terminal_size().columns
    return None


def natural_width(table: Any) -> int:
    """The width a rich table takes when nothing limits it: from its cells' text (cell_widths), else by a layout
    pass of rich's own; worked out once per table."""
    known = getattr(table, "tfcost_natural_width", None)
    if known is None:
        widths = cell_widths(table)
        if widths is not None:
            known = sum(widths) + len(widths) + 1  # a rule between columns and one at each edge
        else:
            rich_table = table.rich_table() if isinstance(table, PlainTable) else table
            known = int(console(width=1 << 16).measure(rich_table).maximum)
        table.tfcost_natural_width = known
    return int(known)


def cell_widths(table: Any) -> list[int] | None:
    """Each column's width, padding included, as rich's Table.__rich_measure__ works it out for a table nothing
    limits (the widest line of the header and cells, by cell_len, plus the padding, clamped to the
    column's min_width and max_width), read off the cells' text instead of two layout passes over every cell (a
    third of `compare`'s rendering for 56 models). None for a table outside the plain case the builders here make
    (str or Text cells, a box with edges, the default padding, no fixed or ratio widths), which rich measures.
    tests/test_render_widths.py checks it against rich's measure for every command's tables."""
    known = getattr(table, "tfcost_cell_widths", None)
    if known is not None:
        return list(known)
    if isinstance(table, PlainTable):  # any option besides the few it knows leaves the table to rich
        plain = bool(table.columns) and not any(column.options for column in table.columns)
    else:
        plain = (
            table.columns
            and table.box is not None
            and table.show_edge
            and table.pad_edge
            and not table.collapse_padding
            and not table.show_footer
            and table.width is None
            and table.min_width is None
            and tuple(table.padding) == (0, 1, 0, 1)
        )
    if not plain:
        return None
    widths = []
    for column in table.columns:
        given = getattr(column, "_cells", None)  # rich's own list of a column's cells
        if column.width is not None or column.ratio is not None or not isinstance(given, list):
            return None
        cells = [column.header, *given] if table.show_header else given
        widest = 0
        for cell in cells:
            text = cell if isinstance(cell, str) else getattr(cell, "plain", None)  # rich's Text, or a Heading
            if not isinstance(text, str):
                return None
            widest = max(widest, max((cell_len(line) for line in text.splitlines()), default=0))
        width = widest + 2  # the padding: one space either side
        if column.min_width is not None:
            width = max(width, column.min_width + 2)
        if column.max_width is not None:
            width = min(width, column.max_width + 2)
        widths.append(width)
    table.tfcost_cell_widths = widths
    return list(widths)


def too_wide(table: Any) -> bool:
    """Whether a rich table is wider than the terminal it will print on (never, for a file or a pipe)."""
    width = terminal_width()
    return not isinstance(table, MarkdownTable) and width is not None and natural_width(table) > width


def print_table(table: Any, *notes: str) -> None:
    """Print a table, then each note. On a terminal (or with COLUMNS set) a table wider than it gets columns that
    wrap (their text folded onto more lines), so that no line is longer than the terminal: the builders lay out
    narrower forms first (fit); this is the last resort. To a file or a pipe, at its natural width. A Markdown
    table prints as text, each note a paragraph."""
    if isinstance(table, MarkdownTable):
        sys.stdout.write(table.render() + "".join(f"\n{markdown_text(note)}\n" for note in notes))
        return
    width = terminal_width()
    if isinstance(table, PlainTable):
        text = plain_text(table, None) if width is None or natural_width(table) <= width else None
        lines = plain_notes(notes, width) if text is not None else None
        if text is not None and lines is not None:
            sys.stdout.write(text + lines)
            return
        table = table.rich_table()  # rich lays it out (wrapped to the terminal), or prints the notes
    if width is not None and natural_width(table) > width:
        for column in table.columns:
            column.no_wrap = False
            column.overflow = "fold"
        table.title_justify = "left"
        console(width=width).print(table)
    else:
        # A table that does not expand is laid out at min(natural width, console width): an unbounded console gives
        # the natural width. With each column's width known from its cells, given as the column's fixed width
        # (rich lays a fixed column out at exactly that width, as it would have chosen), rich skips its own
        # measuring pass over every cell.
        whole = console(width=1 << 16)
        text = plain_text(table, whole)
        if text is not None:
            whole.file.write(text)
        else:
            for column, column_width in zip(table.columns, cell_widths(table) or (), strict=False):
                column.width = column_width - 2
            whole.print(table)
    out = console(width=width) if width is not None else console()
    if out.width < 1:  # COLUMNS=0 would print every note as nothing
        out = console(width=1 << 16)
    for note in notes:
        out.print(note)


def plain_notes(notes: Sequence[str], width: int | None) -> str | None:
    """The notes under a table as rich prints them to no terminal, each line of each note wrapped at the width
    rich prints at (rich_wrap); None where a line is not one rich_wrap covers, and rich prints them. `width`:
    terminal_width()'s; without it, rich's own (Console.size): the first of standard input, output and error that
    is a terminal, else 80 columns."""
    import os

    if width is None:
        if "COLUMNS" in os.environ:  # one terminal_width() does not take ("0"): rich's own reading of it
            return None
        for descriptor in (0, 1, 2):
            try:
                width = os.get_terminal_size(descriptor).columns
            except (AttributeError, ValueError, OSError):
                continue
            break
        width = width or 80
    out = []
    for note in notes:
        for line in note.split("\n"):
            pieces = rich_wrap(line, width)
            if pieces is None:
                return None
            out += pieces
    return "".join(piece + "\n" for piece in out)


WORD = re.compile(r"\s*\S+\s*")  # rich's word: leading space, the word and the space after it (rich/_wrap.py)


def rich_wrap(line: str, width: int) -> list[str] | None:
    """One line of text as rich's Console.print wraps it at `width` (rich/_wrap.py divide_line: a word goes to a
    new line when it does not fit what is left; then Text.rstrip_end: a piece longer than the width loses the
    spaces past it), for printable lines only, and of ASCII where a line must be wrapped; None for the rest (a
    word wider than the line, which rich folds, a tab, a control character), which rich prints itself."""
    if not line.isprintable():
        return None
    if not line.isascii():
        return [line] if len(line) <= width and cell_len(line) <= width else None
    pieces, start, offset = [], 0, 0
    for match in WORD.finditer(line):
        word = match.group()
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:
            return None
        elif offset and match.start():
            pieces.append(line[start : match.start()])
            start, offset = match.start(), len(word)
    pieces.append(line[start:])
    return [piece[: max(width, len(piece.rstrip()))] for piece in pieces]


def plain_text(table: Any, out: Any) -> str | None:
    """The text rich prints for a table that fits, where rich would print it without any style (to a file or a
    pipe: no colour, no bold) in its default heavy-headed box; None for anything else, which rich prints.

    rich spends a few ms a table, and most of `compare`'s 56 models, laying out lines whose every width is known
    already (cell_widths): here each line is its text padded to its column, between the box's rules, as rich
    draws them (the header row bottom-aligned, the others top-aligned; a rule after each section; the title's lines
    padded to the table's width). tests/test_render_widths.py checks every command's output against rich's."""
    widths = cell_widths(table)
    if isinstance(table, PlainTable):  # bound for no terminal (plain_output) and built in the plain case
        plain = widths is not None and (not table.title or table.title_justify == "left")
    else:
        from rich import box

        plain = (
            widths is not None
            and out.color_system is None
            and not out.options.ascii_only
            and not out.legacy_windows
            and table.box is box.HEAVY_HEAD
            and table.show_header
            and not table.show_lines
            and not table.leading
            and not table.caption
            and (not table.title or (isinstance(table.title, str) and table.title_justify == "left"))
            and all(column.vertical == "top" for column in table.columns)
        )
    if not plain or widths is None:
        return None
    width = sum(widths) + len(widths) + 1
    columns = [[column.header, *column._cells] for column in table.columns]
    lines_of = [[(cell if isinstance(cell, str) else cell.plain).split("\n") for cell in cells] for cells in columns]
    title = table.title.split("\n") if table.title else []
    texts = [line for cells in lines_of for lines in cells for line in lines] + title
    if not all(text.isprintable() for text in texts) or any(cell_len(line) > width for line in title):
        return None  # a control character or a tab, which rich treats specially, or a title rich would wrap
    for cells, column_width in zip(lines_of, widths, strict=True):
        if any(cell_len(line) > column_width - 2 for lines in cells for line in lines):
            return None  # a cell wider than its column's max_width, which rich wraps
    out_lines = [line + " " * (width - cell_len(line)) for line in title]

    def rule(left: str, horizontal: str, cross: str, right: str) -> str:
        return left + cross.join(horizontal * column_width for column_width in widths) + right

    def row_lines(index: int, edge: str, divider: str) -> list[str]:
        cells = [lines[index] for lines in lines_of]
        height = max(len(lines) for lines in cells)
        padded = []
        for lines, column_width, column in zip(cells, widths, table.columns, strict=True):
            blank = [""] * (height - len(lines))
            stacked = blank + lines if index == 0 else lines + blank  # the header row is bottom-aligned
            room = [column_width - 2 - cell_len(line) for line in stacked]
            if column.justify == "right":
                padded.append([f" {' ' * space}{line} " for line, space in zip(stacked, room, strict=True)])
            else:
                padded.append([f" {line}{' ' * space} " for line, space in zip(stacked, room, strict=True)])
        return [edge + divider.join(parts) + edge for parts in zip(*padded, strict=True)]

    rows = table.row_count
    out_lines.append(rule("┏", "━", "┳", "┓"))
    out_lines += row_lines(0, "┃", "┃")
    out_lines.append(rule("┡", "━", "╇", "┩"))
    for index in range(1, rows + 1):
        out_lines += row_lines(index, "│", "│")
        if table.rows[index - 1].end_section and index < rows:
            out_lines.append(rule("├", "─", "┼", "┤"))
    out_lines.append(rule("└", "─", "┴", "┘"))
    return "".join(line + "\n" for line in out_lines)


def fit(layouts: Sequence[Callable[[], Any]]) -> Any:
    """The first of a table's layouts (widest first) that fits the terminal, else the last, which print_table
    wraps. Each is built only if the one before it was too wide."""
    table = None
    for layout in layouts:
        table = layout()
        if not too_wide(table):
            return table
    return table


def add_section(table: Any, heading: str, rows: Sequence[Sequence[str]], rowwise: bool = False) -> None:
    """A bold heading over `rows`, added as ONE table row whose cells hold a line per quantity.

    rich's cost is per cell, so a row per quantity made a 13-model comparison spend 80 ms in rendering; stacked
    lines look the same and take a quarter of that. Columns must not wrap (no_wrap=True) so the lines stay aligned.
    `rowwise`: a row per quantity, for a table narrowed to the terminal, whose labels may wrap.
    """
    rich = not isinstance(table, MarkdownTable | PlainTable)  # rich's Table: its cells are rich's Text
    if rowwise and not isinstance(table, MarkdownTable):
        first = Heading(heading)
        table.add_row(first.rich() if rich else first, *[""] * (len(table.columns) - 1))
        for row in rows:
            table.add_row(*row)
        return

    first = Heading(heading, "".join(f"\n{row[0]}" for row in rows))
    others = ["".join(f"\n{row[column]}" for row in rows) for column in range(1, len(table.columns))]
    table.add_row(first.rich() if rich else first, *others)


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
        table.add_column("quantity", no_wrap=not rowwise, max_width=LABEL_WIDTH if rowwise else None)
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
    column_widths = [
        max([len(results[index].model), *(len(row[1 + index]) for _, rows in blocks for row in rows)]) + 3
        for index in everyone
    ]
    if width is None or labels + 4 + sum(column_widths) <= width:
        print_table(layout(everyone, False), *notes)
        return
    if min(LABEL_WIDTH, labels) + 4 + sum(column_widths) <= width:  # every model side by side, the labels wrapped
        print_table(layout(everyone, True), *notes)
        return
    # Too wide: as many tables as it takes, each holding as many models as fit; the labels whole (stacked lines,
    # cheap to lay out) where two models fit beside them, else wrapped a row per quantity.
    rowwise = labels + 4 + 2 * max(column_widths) > width
    label_width = (min(LABEL_WIDTH, labels) if rowwise else labels) + 3
    groups: list[list[int]] = [[]]
    used = label_width + 1
    for index in everyone:
        if groups[-1] and used + column_widths[index] > width:
            groups.append([])
            used = label_width + 1
        groups[-1].append(index)
        used += column_widths[index]
    for number, group in enumerate(groups, 1):
        print_table(layout(group, rowwise), *(notes if number == len(groups) else []))


def section_rows(section: BaseModel | None, breakdowns: bool) -> Iterator[tuple[str, str, Unit, int | None]]:
    """A section's rows, or none where a result lacks the section (the transformers engine has no score matrix)."""
    return quantity_rows(section, breakdowns=breakdowns) if section is not None else iter(())


def models_csv(models: Sequence[ModelShape], totals: Sequence[int], actives: Sequence[int]) -> None:
    """`tfcost list --format csv`: the table's columns, exact."""
    models = neutral(list(models))
    rows = [
        {"name": model.name, "parameters": total, "active": active, "layers": model.n_layers,
         "d_model": model.d_model, "heads": model.n_heads, "kv_heads": model.n_kv_heads, "context": model.max_seq_len}
        for model, total, active in zip(models, totals, actives, strict=True)
    ]  # fmt: skip
    print_csv(rows, ["name", "parameters", "active", "layers", "d_model", "heads", "kv_heads", "context"])


def models_table(
    models: Sequence[ModelShape], totals: Sequence[int], actives: Sequence[int], markdown: bool = False
) -> None:
    models = neutral(list(models))
    table = new_table(markdown, title="model presets", title_justify="left")
    for name, justify in (
        ("name", "left"),
        ("parameters", "right"),
        ("active", "right"),
        ("layers", "right"),
        ("d_model", "right"),
        ("heads (kv)", "right"),
        ("context", "right"),
    ):
        table.add_column(name, justify=justify)
    for model, total, active in zip(models, totals, actives, strict=True):
        table.add_row(
            model.name,
            human(total, "count"),
            human(active, "count"),
            str(model.n_layers),
            str(model.d_model),
            f"{model.n_heads} ({model.n_kv_heads})",
            f"{model.max_seq_len:,}",
        )
    print_table(table)


def gpus_table(gpus: Sequence[GpuSpec], markdown: bool = False) -> None:
    gpus = neutral(list(gpus))
    table = new_table(markdown, title="GPU spec table (dense peaks, without sparsity)", title_justify="left")
    for name in ("name", "BF16/FP16 TFLOP/s", "FP8 TFLOP/s", "FP32 TFLOP/s", "memory", "bandwidth"):
        table.add_column(name, justify="left" if name == "name" else "right")

    def tflops(value: float | None) -> str:
        return "-" if value is None else f"{value:g}"

    for gpu in gpus:
        table.add_row(
            gpu.name,
            tflops(gpu.peak_bf16_tflops),
            tflops(gpu.peak_fp8_tflops),
            tflops(gpu.peak_fp32_tflops),
            f"{gpu.memory_gib:g} GiB",
            f"{gpu.memory_bandwidth_tb_per_s:g} TB/s",
        )
    print_table(table, "'-': no verified figure. Sources and caveats: `tfcost gpus --format json`.")


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


def default(setup: BaseModel, field: str) -> Any:
    """A setup field's default, so that the report can say when the user's value is it."""
    return type(setup).model_fields[field].default


def train_title(result: TrainReport | EngineTrainReport) -> list[str]:
    """The first lines above a train table: the model and GPUs, D and T (saying which are the defaults)."""
    s = result.setup
    tokens, seq = result.notes.get("tokens", ""), result.notes.get("seq_len", "")
    return [
        f"{result.model}: training on {s.gpus:,} x {result.gpu}",
        f"D = {human(s.tokens, 'count')} tokens{tokens}",
        f"T = {s.seq_len:,} tokens per sequence{seq}{images_suffix(s)}; micro-batch {s.micro_batch}",
    ]


def images_suffix(setup: BaseModel) -> str:
    """Where --images was given: that T (or P) includes the images' tokens."""
    images, seconds = getattr(setup, "images", 0), getattr(setup, "audio_seconds", 0)
    parts = [f"{images:,} image{'s' * (images > 1)}"] * bool(images) + [f"{seconds:g} s of audio"] * bool(seconds)
    return f" (with the tokens of {' and '.join(parts)})" if parts else ""


def train_table(result: TrainReport, markdown: bool = False) -> None:
    from tfcost.reports.train import TRAIN_SECTIONS

    result = neutral(result)
    s = result.setup
    title = "\n".join(
        [
            *train_title(result),
            f"{s.gpus:,} GPUs = {result.inputs.data_parallel:,} data-parallel x tp {s.tp} x pp {s.pp}"
            f"{f' x cp {s.cp}' if s.cp > 1 else ''}; ZeRO-{s.zero}{result.notes.get('zero', '')}; {s.optimizer}, "
            f"{s.precision}",
            f"global batch {result.inputs.global_batch:,} sequences{result.notes.get('global_batch', '')}",
            f"recompute {s.recompute}; {'sequence parallel; ' if s.sequence_parallel else ''}"
            f"{'flash attention' if s.flash else 'no flash attention'}"
            f"{' (FlashAttention-1 class)' if s.flash and s.flash_kernel == 'fa1' else ''}; "
            f"{result.time.throughput_from}",
        ]
    )
    notes = [
        "Model FLOPs: matmuls only, 2*m*k*n each, full T x T scores (the MFU convention); backward = 2 x forward.",
        "Memory per GPU: ZeRO Fig. 1 for model states, Korthikanti et al. 2022 for activations. "
        "Every formula: docs/training.md.",
        *([f"Images: {result.notes['images']}."] if "images" in result.notes else []),
        CONVENTIONS,
    ]
    sections_table(result, TRAIN_SECTIONS, title, notes, markdown)


def serve_title(result: ServeReport | EngineServeReport, where: str) -> str:
    """The lines above a serve table: the model and where it runs, the workload, the dtypes and the assumptions."""
    s = result.setup
    return "\n".join(
        [
            f"{result.model}: serving on {where}",
            f"B = {s.batch:,} sequences, P = {s.prompt:,} prompt + G = {s.generate:,} generated tokens each"
            + images_suffix(s),
            f"weights {result.weights_format}, KV cache {s.kv_dtype}, matmuls at the {result.compute_dtype} peak",
            f"reserve {s.reserve:.0%}, compute efficiency {s.compute_efficiency:g}, "
            f"memory efficiency {s.memory_efficiency:g}",
        ]
    )


def serve_table(result: ServeReport, markdown: bool = False) -> None:
    from tfcost.reports.serve import SERVE_SECTIONS

    result = neutral(result)
    s = result.setup
    where = f"{s.gpus} x {result.gpu} (tensor parallel)"
    if s.pp > 1 or s.ep > 1:
        where += f" in each of {s.pp} pipeline stage{'s' if s.pp > 1 else ''}, experts over {s.ep} GPUs a stage"
    title = serve_title(result, where)
    notes = [
        "Bound: the roofline, max(FLOPs / reachable peak, bytes / reachable bandwidth) per GPU; no engine beats it.",
        "Expected: the kernels at the rates real kernels reach, plus a per-step floor, tensor-parallel all-reduces, "
        "dequantization; memory in whole KV blocks plus the CUDA context and activation workspace.",
        f"Defaults: reserve {default(s, 'reserve'):.0%} (vLLM's gpu_memory_utilization 0.9); compute and memory "
        f"efficiency {default(s, 'compute_efficiency'):g} and {default(s, 'memory_efficiency'):g} (llm-analysis "
        "README: up to 0.7 for inference, 0.9 an aggressive memory target). Every formula: docs/serving.md.",
        CONVENTIONS,
    ]
    if result.memory.kv_cache_note:
        notes.insert(0, result.memory.kv_cache_note)
    sections_table(result, SERVE_SECTIONS, title, notes, markdown)


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


def engine_train_table(result: EngineTrainReport, markdown: bool = False) -> None:
    """`tfcost train` by the transformers engine: the title as the analytic table's, its sections and its note."""
    from tfcost.engines.report import ENGINE_TRAIN_NOTE, ENGINE_TRAIN_SECTIONS

    result = neutral(result)
    s = result.setup
    title = "\n".join(
        [
            *train_title(result),
            f"{s.gpus:,} GPUs, data parallel; ZeRO-{s.zero}; {s.optimizer}, {s.precision}",
            f"{'flash attention' if s.flash else 'no flash attention'}; {result.time.throughput_from}",
        ]
    )
    notes = [*([f"source: {result.source}"] if result.source else []), ENGINE_TRAIN_NOTE, CONVENTIONS]
    sections_table(result, ENGINE_TRAIN_SECTIONS, title, notes, markdown)


def engine_serve_table(result: EngineServeReport, markdown: bool = False) -> None:
    """`tfcost serve` by the transformers engine: the title as the analytic table's, its sections and its note."""
    from tfcost.engines.report import ENGINE_SERVE_NOTE, ENGINE_SERVE_SECTIONS

    result = neutral(result)
    title = serve_title(result, f"1 x {result.gpu}")
    notes = [*([f"source: {result.source}"] if result.source else []), ENGINE_SERVE_NOTE, CONVENTIONS]
    sections_table(result, ENGINE_SERVE_SECTIONS, title, notes, markdown)


def profiles_table(found: Sequence[Any], folder: str, markdown: bool = False) -> None:
    found = neutral(list(found))  # a shared profile's fields are outside text
    table = new_table(markdown, title=f"Measured profiles ({clean(folder)})", title_justify="left")
    for name in ("name", "device", "dtype", "copy", "decode matmul", "prefill matmul", "tiny kernel", "date"):
        table.add_column(name)
    for profile in found:
        table.add_row(
            profile.name,
            profile.device_name,
            profile.dtype,
            human(profile.copy_bytes_per_s, "bytes_per_s"),
            human(profile.matmul("decode").bytes_per_s, "bytes_per_s"),
            human(profile.matmul("prefill").flops_per_s, "flops_per_s"),
            human(profile.tiny_kernel_us, "count") + " us",
            profile.date,
        )
    print_table(table, "Use one with `tfcost serve MODEL --profile NAME`; save one with `tfcost measure --roofline "
                "--save-profile NAME`.")  # fmt: skip


PROFILE_CSV_FIELDS = (
    "name", "device_name", "dtype", "copy_bytes_per_s", "decode_matmul_bytes_per_s", "prefill_matmul_flops_per_s",
    "tiny_kernel_us", "date",
)  # fmt: skip


def profiles_csv(found: Sequence[Any]) -> None:
    """The profiles table's columns, exact (the whole profile: `tfcost profiles --format json`)."""
    found = neutral(list(found))
    rows = [
        dict(zip(PROFILE_CSV_FIELDS, (
            profile.name, profile.device_name, profile.dtype, profile.copy_bytes_per_s,
            profile.matmul("decode").bytes_per_s, profile.matmul("prefill").flops_per_s, profile.tiny_kernel_us,
            profile.date,
        ), strict=True))
        for profile in found
    ]  # fmt: skip
    print_csv(rows, PROFILE_CSV_FIELDS)


# The table's numbers; --format json and csv add bytes moved, bandwidth and the roofline time.
MEASURE_COLUMNS = [
    "median_ms",
    "flops",
    "tflops_per_s",
    "peak_fraction",
    "roofline_ratio",
    "peak_memory_bytes",
    "peak_memory_estimate_bytes",
]


def measured_cell(row: Measurement, name: str) -> str:
    """A measured field in its labelled unit; '-' where there is no value (not run, or no GPU spec)."""
    value = getattr(row, name)
    extra = type(row).model_fields[name].json_schema_extra
    unit: Unit = extra["unit"] if isinstance(extra, dict) else "count"  # type: ignore[assignment]
    return "-" if value is None else human(value, unit)


def measure_table(report: MeasureReport, markdown: bool = False) -> None:
    from rich.box import SIMPLE_HEAD

    from tfcost.reports.measure import Measurement

    report = neutral(report)
    first = report.measurements[0]
    mask = "causal" if first.causal else "full"
    shape = f"B={first.batch}, H={first.heads} (kv {first.kv_heads}), Q={first.head_dim}, {first.dtype}, {mask}"
    where = report.device_name + (f" [{report.gpu}]" if report.gpu else "")
    table = new_table(
        markdown,
        title=f"{report.model or 'attention'}: {shape} on {where}",
        title_justify="left",
        box=SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("T", justify="right", no_wrap=True)
    table.add_column("pass", no_wrap=True)
    table.add_column("backend", no_wrap=True)
    for name in MEASURE_COLUMNS:
        table.add_column(Measurement.model_fields[name].description or name, justify="right", no_wrap=True)
        if name == "median_ms":
            table.add_column("p10-p90 ms", justify="right", no_wrap=True)
    reasons: dict[str, list[str]] = {}  # one footnote per distinct reason, naming the backends it stopped
    for row in report.measurements:
        backend = row.backend if row.backend_ran in (None, row.backend) else f"{row.backend}>{row.backend_ran}"
        cells = [measured_cell(row, name) for name in MEASURE_COLUMNS]
        spread = "-" if row.p10_ms is None else f"{measured_cell(row, 'p10_ms')}-{measured_cell(row, 'p90_ms')}"
        cells.insert(1, spread)
        if row.status != "ok":
            who = reasons.setdefault(row.reason or row.status, [])
            who.extend([] if row.backend in who else [row.backend])
            cells[:2] = [row.status, f"[{list(reasons).index(row.reason or row.status) + 1}]"]
        cells = [f"{row.seq:,}", "fwd" if row.direction == "forward" else "fwd+bwd", backend, *cells]
        table.add_row(*cells)
    problems = [f"[{n}] {', '.join(who)}: {reason}" for n, (reason, who) in enumerate(reasons.items(), 1)]
    # torch's words may hold brackets ("[enforce fail at alloc_cpu.cpp:127]"): the console reads no markup.
    print_table(
        table,
        *problems,
        *report.notes,
        f"FLOPs: {report.flop_convention}.",
        f"Bytes: {report.bytes_convention}.",
        f"Memory: {report.memory_convention}.",
        f"Timing: {report.timing}. torch {report.torch_version}.",
        "--format json or csv adds the bytes moved, the achieved bandwidth and the roofline time.",
    )


def csv_cell(value: Any) -> Any:
    """A CSV cell: text through safe_text.csv_cell (no formula a spreadsheet would run); booleans are JSON's true
    and false; numbers as they are (a negative number is a number, not a formula)."""
    import json  # the JSON and CSV paths only: a table need not import it

    if isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, list | tuple):  # a GPU's device-name patterns: one cell, the items apart
        value = "; ".join(str(item) for item in value)
    return safe_text.csv_cell(value) if isinstance(value, str) else value


def warn_noisy(report: MeasureReport) -> None:
    """A `tfcost: warning:` line on stderr when the repeats of some measurement spread too wide to trust."""
    from tfcost.reports.measure import NOISY_SPREAD, noisiest

    found = noisiest(report)
    if found is None:
        return
    row, value = found
    where = f"T={row.seq:,} ({row.backend}, {row.direction})"
    sys.stderr.write(
        f"tfcost: warning: timings are noisy: p90/p10 = {value:.1f}x at {where}, above {NOISY_SPREAD}x; this "
        "machine is too busy for the medians (and the ratios) to be trusted: stop other work, or raise --repeats\n"
    )


def roofline_rows(profile: dict[str, Any]) -> list[tuple[str, str, str, Any]]:
    """(part, item, quantity, value) of a --roofline profile: the machine's rates, each matmul and attention run."""
    rows: list[tuple[str, str, str, Any]] = [
        ("roofline", "device", "device_name", profile["device_name"]),
        ("roofline", "device", "memory_bytes", profile["memory_bytes"]),
        ("roofline", "copy", "bytes_per_s", profile["copy_bytes_per_s"]),
        ("roofline", "tiny kernel", "us", profile["tiny_kernel_us"]),
        ("roofline", "tiny matmul", "us", profile["tiny_matmul_us"]),
        ("roofline", "kernels per layer", "count", profile["kernels_per_layer"]),
    ]
    for run in profile["matmuls"]:
        item = f"matmul {run['kind']} {run['m']}x{run['k']}x{run['n']} x{run['count']} {run['dtype']}"
        rows += [("roofline", item, key, run[key]) for key in ("median_ms", "flops_per_s", "bytes_per_s")]
    for run in profile["attentions"]:
        item = f"attention H={run['heads']} T={run['seq']} Q={run['head_dim']} {run['dtype']}"
        rows += [("roofline", item, key, run[key]) for key in ("median_ms", "flops_per_s")]
    return rows


def step_rows(step: dict[str, Any]) -> list[tuple[str, str, str, Any]]:
    """(part, item, quantity, value) of a --step report: each phase's measured, bound and expected times."""
    return [
        ("step", phase, key, step[phase][key])
        for phase in ("prefill", "decode")
        for key in ("measured_ms", "bound_ms", "expected_ms", "expected_over_measured")
    ]


MACHINE_CSV_FIELDS = ("part", "item", "quantity", "value")


def print_machine(payload: dict[str, Any], output: str) -> None:
    """measure --roofline/--step in the format asked: JSON as before; CSV a row per measured quantity; a table
    (or Markdown) per part."""
    if output == "json":
        print_plain_json(payload)
        return
    payload = neutral(payload)
    rows = roofline_rows(payload["roofline"]) if "roofline" in payload else []
    rows += step_rows(payload["step"]) if "step" in payload else []
    if output == "csv":
        print_csv([dict(zip(MACHINE_CSV_FIELDS, row, strict=True)) for row in rows], MACHINE_CSV_FIELDS)
        return
    markdown = output == "markdown"
    if "roofline" in payload:
        profile = payload["roofline"]
        title = f"Roofline of {profile['device_name']} ({profile['dtype']})"
        table = new_table(markdown, title=title, title_justify="left")
        for name in ("run", "median ms", "compute", "bandwidth"):
            table.add_column(name, justify="left" if name == "run" else "right")
        table.add_row("copy (read + write)", "", "", human(profile["copy_bytes_per_s"], "bytes_per_s"))
        table.add_row(f"tiny kernel: {human(profile['tiny_kernel_us'], 'count')} us each", "", "", "")
        for run in profile["matmuls"]:
            table.add_row(
                f"matmul {run['kind']} {run['m']}x{run['k']}x{run['n']} x{run['count']} {run['dtype']}",
                human(run["median_ms"], "kernel_ms"),
                human(run["flops_per_s"], "flops_per_s"),
                human(run["bytes_per_s"], "bytes_per_s"),
            )
        for run in profile["attentions"]:
            table.add_row(
                f"attention H={run['heads']} T={run['seq']:,} Q={run['head_dim']} {run['dtype']}",
                human(run["median_ms"], "kernel_ms"),
                human(run["flops_per_s"], "flops_per_s"),
                "",
            )
        print_table(table, f"torch {profile['torch_version']}; every run's exact figures: --format json or csv.")
    if "step" in payload:
        step = payload["step"]
        title = f"{step['model']}: a real step on {step['device_name']}"
        table = new_table(markdown, title=title, title_justify="left")
        for name in ("phase", "measured ms", "bound ms", "expected ms", "expected / measured"):
            table.add_column(name, justify="left" if name == "phase" else "right")
        for phase in ("prefill", "decode"):
            times = step[phase]
            table.add_row(
                phase,
                *(human(times[key], "kernel_ms") for key in ("measured_ms", "bound_ms", "expected_ms")),
                human(times["expected_over_measured"], "ratio"),
            )
        print_table(table, *step["notes"], f"Timing: {step['timing']}. Profile: {step['profile']}.")
    if "saved" in payload:
        sys.stdout.write(f"\nSaved the profile to {payload['saved']}\n")


def print_csv(rows: Sequence[dict[str, Any]], fields: Sequence[str] | None = None) -> None:
    """One header line, then a line per row; null is an empty cell, booleans are JSON's true and false."""
    if not rows and fields is None:
        return
    names = list(fields or rows[0])
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow([csv_cell(name) for name in names])  # a column may be named after a model from a file
    writer.writerows([csv_cell(row.get(name)) for name in names] for row in rows)


def report_rows(result: BaseModel, prefix: str = "") -> Iterator[tuple[str, str, Unit, Any]]:
    """(key, label, unit, value) of every quantity of a report, however deeply its sections nest: the rows of its
    CSV, keyed as in its JSON (flops.forward_per_sequence; a breakdown's items as flops.forward.attention)."""
    for name, field in type(result).model_fields.items():
        value = getattr(result, name)
        extra = field.json_schema_extra
        if isinstance(extra, dict) and "unit" in extra:
            unit: Unit = extra["unit"]  # type: ignore[assignment]
            if value is None:
                continue
            if isinstance(value, dict):
                for item, amount in value.items():
                    yield f"{prefix}{name}.{item}", f"{field.description}: {item}", unit, amount
            else:
                yield f"{prefix}{name}", field.description or name, unit, value
        elif isinstance(value, BaseModel):
            yield from report_rows(value, f"{prefix}{name}.")


REPORT_CSV_FIELDS = ("model", "quantity", "label", "unit", "value")


def report_csv(result: BaseModel) -> None:
    """A report as CSV: a row per quantity, exact values, each row naming the model so a saved file stands alone.
    A check report: a row per compared quantity, both engines' values and the difference."""
    result = neutral(result)
    model = getattr(result, "model", "")
    rows_of_check = getattr(result, "rows", None)
    if rows_of_check is not None:
        print_csv([{"model": model, **row.model_dump(mode="json")} for row in rows_of_check])
        return
    print_csv(
        [
            dict(zip(REPORT_CSV_FIELDS, (model, key, label, unit, value), strict=True))
            for key, label, unit, value in report_rows(result)
        ],
        REPORT_CSV_FIELDS,
    )


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


def measure_csv(report: MeasureReport) -> None:
    """A row per measurement, each carrying the device, GPU and torch version so a saved file stands alone."""
    report = neutral(report)
    context = {"device": report.device, "gpu": report.gpu, "torch_version": report.torch_version}
    print_csv([{**context, **row.model_dump(mode="json")} for row in report.measurements])


@contextlib.contextmanager
def progress(total: int) -> Iterator[Callable[[str], None]]:
    """A progress bar on stderr (never stdout, which may carry JSON or CSV), shown only on a terminal."""
    from rich.console import Console
    from rich.progress import Progress

    err = Console(file=sys.stderr)
    with Progress(console=err, transient=True, disable=not err.is_terminal) as bar:
        task = bar.add_task("measuring", total=total)
        started = 0

        def begin(label: str) -> None:
            """Name the step starting now; the steps before it are done."""
            nonlocal started
            bar.update(task, completed=started, description=label)
            started += 1

        yield begin
        bar.update(task, completed=total)


def print_json(payload: BaseModel | Sequence[BaseModel]) -> None:
    """Exact integers, with the tool's version so a saved file says what produced it."""
    import json  # the JSON and CSV paths only: a table need not import it

    if isinstance(payload, BaseModel):
        document: Any = {"tfcost_version": __version__, **payload.model_dump(mode="json")}
    else:
        document = {"tfcost_version": __version__, "results": [item.model_dump(mode="json") for item in payload]}
    try:
        text = json.dumps(document, indent=2, allow_nan=False)
    except ValueError:  # an extreme option (an efficiency of 1e-320) overflowed a float result to infinity
        raise TfcostError(NOT_FINITE) from None
    sys.stdout.write(text + "\n")


def print_plain_json(payload: dict[str, Any]) -> None:
    """measure --roofline/--step: their results as JSON, with the version (a table would repeat the same rows)."""
    import json  # the JSON and CSV paths only: a table need not import it

    print(json.dumps({"tfcost_version": __version__, **payload}, indent=2))


def source_notes(ignored: Sequence[str], not_priced: Sequence[str]) -> list[str]:
    """The notes on a model's source: config keys ignored, multimodal towers not priced."""
    notes = []
    if ignored:
        notes.append(f"ignored config fields (tfcost does not use them; --strict refuses): {', '.join(ignored)}")
    if not_priced:
        notes.append(f"not priced: {', '.join(not_priced)}; every figure is the language model's")
    return [clean(note) for note in notes]


def print_source_notes(source: ModelSource) -> None:
    """One `tfcost: note:` line on stderr per note, never on stdout (which may carry JSON or YAML)."""
    for note in [*source_notes(source.ignored_fields, source.not_priced), *map(clean, source.notes)]:
        sys.stderr.write(f"tfcost: note: {clean(source.shape.name)}: {note}\n")


def print_report_notes(report: BaseModel) -> None:
    """What a report's source said that was not used (config keys ignored, towers not priced), and a Hub
    checkpoint's stored bytes: `tfcost: note:` lines on stderr, never on stdout (which may carry JSON or YAML)."""
    if not isinstance(report, SourceNotes):  # the transformers engine's reports carry no source notes
        return
    for note in [*source_notes(report.ignored_fields, report.not_priced), *map(clean, report.quantization_notes)]:
        sys.stderr.write(f"tfcost: note: {clean(getattr(report, 'model', ''))}: {note}\n")
    print_checkpoint_check(report)


def print_note(note: str) -> None:
    """One `tfcost: note:` line on stderr."""
    sys.stderr.write(f"tfcost: note: {clean(note)}\n")


def print_context_warning(report: BaseModel) -> None:
    """A `tfcost: warning:` line on stderr when the tokens asked for pass the model's own context (the report's
    context_warning). Never a refusal: the figures are for the length asked, which is how one prices a context
    extension; the warning says the model was not built for it."""
    warning = getattr(report, "context_warning", None)
    if warning:
        sys.stderr.write(f"tfcost: warning: {clean(getattr(report, 'model', ''))}: {clean(warning)}\n")


def print_checkpoint_check(report: SourceNotes) -> None:
    """A Hub checkpoint's stored bytes beside tfcost's figure for the same weights, on stderr."""
    if report.checkpoint_bytes is None or report.checkpoint_bytes_estimate is None:
        return
    stored, estimate = report.checkpoint_bytes, report.checkpoint_bytes_estimate
    sys.stderr.write(
        f"tfcost: note: the checkpoint's safetensors index holds {stored:,} bytes of tensors "
        f"({human(stored, 'bytes')}); tfcost counts {estimate:,} ({human(estimate, 'bytes')}) "
        "for its weights as stored\n"
    )


def print_preset_yaml(shape: ModelShape, ignored: Sequence[str] = (), not_priced: Sequence[str] = ()) -> None:
    """A model as a preset file: every field that differs from its default, in schema order, after a comment per
    note on its source."""
    import yaml

    class PresetDumper(yaml.SafeDumper):
        """Mappings as blocks, lists of layer indices on one line, as the shipped presets are written."""

    PresetDumper.add_representer(
        list, lambda dumper, items: dumper.represent_sequence("tag:yaml.org,2002:seq", items, flow_style=True)
    )
    document = shape.model_dump(mode="json", exclude_defaults=True)
    sys.stdout.write("".join(f"# {note}\n" for note in source_notes(ignored, not_priced)))
    sys.stdout.write(yaml.dump(document, Dumper=PresetDumper, sort_keys=False, default_flow_style=False, width=120))


def print_error(message: str) -> None:
    """One line on stderr, whatever the message quotes (a key or a name may hold a newline): characters that would
    not print as themselves are written as escapes. No rich here, so that an error can never fail to print."""
    sys.stderr.write(f"tfcost: error: {clean(redact_credentials(message))}\n")


# `tfcost sweep` ---------------------------------------------------------------------------------------------


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
