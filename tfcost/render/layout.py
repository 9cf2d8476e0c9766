"""Tables laid out for a terminal, a file or a pipe, or as Markdown: rich's Table, or the PlainTable and
MarkdownTable that take the same calls, printed to fit the terminal (fit, print_table). Every report's table is
built with these. Where rich is imported (lazily: a table to a file or a pipe is written without it).
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from tfcost.render import safe_text


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


# Below this many columns no table can keep a number or a unit whole (a 1-column terminal split every cell into
# single characters): tables are laid out at this width, and the terminal wraps the lines.
MIN_TERMINAL_WIDTH = 40


def terminal_width() -> int | None:
    """The width tables must fit: COLUMNS when set (as rich and the shell set it), else the terminal's, at least
    MIN_TERMINAL_WIDTH; None when standard output is no terminal and COLUMNS is unset (a file or a pipe: tables at
    their natural width)."""
    import os
    import shutil

    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return max(int(columns), MIN_TERMINAL_WIDTH)
    stream = sys.stdout
    if stream is not None and hasattr(stream, "isatty") and stream.isatty():
        return max(shutil.get_terminal_size().columns, MIN_TERMINAL_WIDTH)
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
    """Print a table, then each note. On a terminal (or with COLUMNS set) a table wider than it is narrowed
    without breaking a word or a number (narrow: text wrapped between words, the columns the builder named as
    optional left out, each said in a note), then split into tables of as many columns as fit (split_columns);
    only where a single column is wider than the terminal do its cells fold. The builders lay out narrower forms
    first (fit). To a file or a pipe, at its natural width. A Markdown table prints as text, each note a
    paragraph."""
    if isinstance(table, MarkdownTable):
        sys.stdout.write(table.render() + "".join(f"\n{markdown_text(note)}\n" for note in notes))
        return
    width = terminal_width()
    if width is not None and natural_width(table) > width:
        notes = (*narrow(table, width), *notes)
        parts = split_columns(table, width)
        for part in parts[:-1]:
            print_table(part)
        table = parts[-1]
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
    print_notes(*notes, width=width)


def print_notes(*notes: str, width: int | None = None) -> None:
    """Lines of text wrapped to the terminal between words, as rich prints them (plain_notes, else rich itself);
    `width`: terminal_width()'s, read here when not given."""
    width = terminal_width() if width is None else width
    text = plain_notes(notes, width)
    if text is not None:
        sys.stdout.write(text)
        return
    out = console(width=width) if width is not None else console()
    if out.width < 1:  # COLUMNS=0 would print every note as nothing
        out = console(width=1 << 16)
    for note in notes:
        out.print(note)


def optional_columns(table: Any, *headers: str) -> None:
    """The columns a table may lose where the terminal is too narrow for it whole, the first named first (narrow);
    a column whose every row holds the same value goes before any other, its value said in a note."""
    table.tfcost_optional = headers


def forget_widths(table: Any) -> None:
    """Drop the widths worked out for a table (natural_width, cell_widths) after its columns or cells change."""
    for name in ("tfcost_natural_width", "tfcost_cell_widths"):
        if hasattr(table, name):
            delattr(table, name)
    for index, column in enumerate(table.columns):
        if hasattr(column, "_index"):  # rich pads a column by its place (Table._get_padding_width)
            column._index = index


def cell_lines(cell: Any) -> list[str]:
    return (cell if isinstance(cell, str) else getattr(cell, "plain", str(cell))).split("\n")


def widest(texts: Sequence[Any]) -> int:
    return max((cell_len(line) for text in texts for line in cell_lines(text)), default=0)


def words(text: str, header: bool) -> list[str]:
    """The pieces a cell's line may be broken between: its words; a header's also after a slash that leads to
    three characters or more ("memory/" "GPU", "tok/s/" "user", but "TFLOP/s" whole)."""
    if not header:
        return text.split()
    pieces: list[str] = []
    for word in text.split():
        parts: list[str] = []
        for part in re.findall(r"[^/]+/?|/", word):
            if parts and len(part.rstrip("/")) < 3:
                parts[-1] += part
            else:
                parts.append(part)
        pieces += parts
    return pieces


def wrap_words(text: str, width: int, header: bool = False) -> str:
    """Each line of `text` wrapped at `width` between its words (words(): never inside one; a longer word keeps
    its own line)."""
    out = []
    for line in text.split("\n"):
        indent = line[: len(line) - len(line.lstrip(" "))]
        pieces: list[str] = []
        rest = line.lstrip(" ")
        for word in words(line, header):
            at = rest.index(word)
            glue, rest = ("" if at == 0 and pieces else " "), rest[at + len(word) :]
            if pieces and cell_len(pieces[-1] + glue + word) <= width:
                pieces[-1] += glue + word
            else:
                pieces.append((indent if not pieces else "") + word)
        out += pieces or [line]
    return "\n".join(out)


def breakable(column: Any) -> bool:
    """Whether a column's cells may wrap between words: not one laid out as lines that must stay aligned (a
    section's stacked rows), not a no_wrap column, and text rich measures as textwrap does (ASCII)."""
    cells = column._cells
    return not column.no_wrap and all(isinstance(cell, str) and "\n" not in cell and cell.isascii() for cell in cells)


QUANTITY = re.compile(r"[-+$]?\d[\d,.]*(e[-+]?\d+)? ?[^\s\d]{0,8}")  # '289.81 MiB', '4,513.70 ms', '62.5%'


def pieces_of(cell: str) -> list[str]:
    """What a breakable cell may wrap between: its words, but a number and its unit kept together."""
    return [cell] if QUANTITY.fullmatch(cell) else cell.split()


def narrowest(column: Any) -> int:
    """The narrowest a column can be without breaking a word: its longest header word, and its longest cell (a
    breakable column's longest word, a number with its unit counted whole)."""
    header = max((cell_len(word) for word in words(str(column.header), True)), default=0)
    if breakable(column):
        return max([header, *(len(piece) for cell in column._cells for piece in pieces_of(cell))])
    return max(header, widest(column._cells))


def same_value(column: Any, rows: int) -> str | None:
    """The one value in every row of a column of one-line cells, if there is one and more than one row."""
    values = {cell if isinstance(cell, str) else None for cell in column._cells}
    value = next(iter(values)) if len(values) == 1 else None
    return value if rows > 1 and value and "\n" not in value else None


def narrow(table: Any, width: int) -> list[str]:
    """Narrow a table to `width` without breaking a word or a number: leave out its optional columns
    (optional_columns) until the rest fit at their narrowest, then wrap the breakable ones between words. Returns
    the notes that say what went; a table that cannot be narrowed enough is left to split_columns."""
    optional = list(getattr(table, "tfcost_optional", ()))
    rows = len(table.columns[0]._cells) if table.columns else 0
    same = {h: v for h in optional for c in table.columns if c.header == h and (v := same_value(c, rows))}
    optional.sort(key=lambda header: header not in same)  # a column that says one thing goes first
    dropped, constant = [], []

    def fixed() -> int:  # the rules and padding: the table's width less its columns' text
        return natural_width(table) - sum(
            min(widest([c.header, *c._cells]), c.max_width or 1 << 30) for c in table.columns
        )

    while fixed() + sum(narrowest(column) for column in table.columns) > width and optional:
        header = optional.pop(0)
        index = next((i for i, column in enumerate(table.columns) if column.header == header), None)
        if index is None or len(table.columns) < 2:
            continue
        del table.columns[index]
        forget_widths(table)
        if same.get(header, "-") in ("-", ""):  # a column of no values says nothing but that it went
            dropped.append(header)
        else:
            constant.append(f"{header} {same[header]}")
    natural = [min(widest([c.header, *c._cells]), c.max_width or 1 << 30) for c in table.columns]
    least = [min(narrowest(column), natural[i]) for i, column in enumerate(table.columns)]
    chosen, excess = list(natural), fixed() + sum(natural) - width
    while excess > 0:
        room = [(chosen[i], i) for i in range(len(chosen)) if chosen[i] > least[i]]
        if not room:
            break
        chosen[max(room)[1]] -= 1
        excess -= 1
    for column, now, before in zip(table.columns, chosen, natural, strict=True):
        if now < before:
            column.header = wrap_words(str(column.header), now, header=True)
            if breakable(column):
                cells = column._cells
                cells[:] = [cell if QUANTITY.fullmatch(cell) else wrap_words(cell, now) for cell in cells]
    forget_widths(table)
    notes = [f"Every row has {', '.join(constant)}."] if constant else []
    if dropped:
        notes.append(
            f"Left out to fit {width} columns: {', '.join(dropped)} (a wider terminal, or --format csv or json, "
            "shows every column)."
        )
    return notes


def split_columns(table: Any, width: int) -> list[Any]:
    """A table still wider than `width` as several, each its first column and as many of the others as fit,
    the title over the first; the table itself where it fits, or where not even two columns do."""
    import copy

    if natural_width(table) <= width or len(table.columns) < 3:
        return [table]
    first, others = table.columns[0], table.columns[1:]
    fixed = natural_width(table) - sum(widest([c.header, *c._cells]) for c in table.columns)
    per_column = fixed // (len(table.columns) + 1) + 1
    groups: list[list[Any]] = [[]]
    used = widest([first.header, *first._cells]) + 2 * per_column
    for column in others:
        size = widest([column.header, *column._cells]) + per_column
        if groups[-1] and used + size > width:
            groups.append([])
            used = widest([first.header, *first._cells]) + 2 * per_column
        groups[-1].append(column)
        used += size
    if len(groups) == 1:
        return [table]
    parts = []
    for number, group in enumerate(groups):
        part = copy.copy(table)
        part.columns = [first, *group]
        part.title = table.title if number == 0 else None
        forget_widths(part)
        parts.append(part)
    return parts


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
