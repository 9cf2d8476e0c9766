"""Tables are laid out from their cells' widths (tfcost.render.layout.cell_widths) instead of rich's measuring
passes: the widths must be rich's, and every command must print the same bytes either way."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import run_in_process

from tfcost.readers.presets import presets_dir
from tfcost.render import layout


def as_rich(table: Any) -> Any:
    """rich's Table: the table itself, or the one a PlainTable gives rich when rich prints it."""
    return table.rich_table() if isinstance(table, layout.PlainTable) else table


def rich_natural_width(table: Any) -> int:
    """rich's own measure, on the console the tables print on (no markup: text prints as written)."""
    return int(layout.console(width=1 << 16).measure(as_rich(table)).maximum)


@pytest.mark.parametrize("show_header", [True, False])
def test_cell_widths_are_richs_measure(show_header):
    """Wide (CJK) and zero-width characters, empty cells, stacked lines under a bold heading (rich Text cells, from
    add_section), text that would be markup or an emoji code, and a column's min and max width: the sum of
    cell_widths and the rules is rich's natural width, and so is each column's."""
    title = "a title far wider than the table itself, which rich's measure leaves out"
    table = layout.new_table(False, title=title, show_header=show_header)
    table.add_column("quantity", max_width=6)
    table.add_column("値", justify="right", min_width=9)
    table.add_column("", justify="right")
    table.add_column("empty")
    layout.add_section(
        table, "Parameters", [["per block", "1", "漢字漢字", ""], ["total \u200bparameters", "22", "x", ""]]
    )
    table.add_row("a long label that the max width clips", "[/bold] [not markup]", "e\u0301 :smile:", "")
    widths = layout.cell_widths(table)
    assert widths is not None and len(widths) == 4
    assert widths[0] == 6 + 2 and widths[2] == 9 + 2  # clipped; "e\u0301 :smile:" is 9 cells (漢字漢字 8)
    assert sum(widths) + len(widths) + 1 == rich_natural_width(table)
    for index in range(4):  # each column alone: its width is rich's for a table of that column
        alone = layout.new_table(False, show_header=show_header)
        column = table.columns[index]
        alone.add_column(column.header, min_width=column.min_width, max_width=column.max_width)
        for cell in column._cells:
            alone.add_row(cell)
        assert widths[index] + 2 == rich_natural_width(alone)


def test_tables_outside_the_plain_case_are_left_to_rich():
    for options in ({"width": 50}, {"min_width": 10}, {"box": None}, {"show_edge": False}, {"padding": (0, 2)},
                    {"show_footer": True}, {"collapse_padding": True}, {"pad_edge": False}):  # fmt: skip
        table = layout.new_table(False, **options)
        table.add_column("x")
        table.add_row("1")
        assert layout.cell_widths(table) is None, options
        assert layout.natural_width(table) == rich_natural_width(table)
    fixed = layout.new_table(False)
    fixed.add_column("x", width=5)
    assert layout.cell_widths(fixed) is None
    assert layout.natural_width(fixed) == rich_natural_width(fixed) == 9


def rich_text(table: Any) -> str:
    """What rich itself prints for a table, to no terminal."""
    out = layout.console(width=1 << 16)
    with out.capture() as captured:
        out.print(as_rich(table))
    return captured.get()


@pytest.mark.parametrize("kind", ["plain", "rich"])
def test_plain_text_is_what_rich_prints(kind):
    """A header of two lines (bottom-aligned) beside one, stacked lines under bold headings, sections and their
    rules, right and left justification, wide characters and empty cells, a title of two lines: the same text,
    from a PlainTable (rich-free, for no terminal) and from rich's own Table (what plain_text reads elsewhere)."""
    table = layout.PlainTable(title="a title\nof two lines", title_justify="left")
    if kind == "rich":
        table = table.rich_table()
    table.add_column("quantity\n(unit)")
    table.add_column("値", justify="right")
    table.add_column("", justify="right")
    table.add_section()
    layout.add_section(table, "Parameters", [["per block", "1", "漢字"], ["total", "22", ""]])
    table.add_section()
    layout.add_section(table, "FLOPs", [["forward", "333", "x"]])
    table.add_row("last", "", "4,444")
    table.add_row("short")  # the cells not given are empty, as rich's
    text = layout.plain_text(table, layout.console(width=1 << 16))
    assert text is not None and text == rich_text(table)
    assert text.splitlines()[0] == "a title" + " " * (len(text.splitlines()[2]) - len("a title"))
    assert isinstance(table, layout.PlainTable) == (kind == "plain")


def test_rich_prints_what_plain_text_does_not_cover():
    """A terminal (styles: bold headings), rules between all rows, a title rich would wrap, a tab: rich prints
    them."""

    def table_of(**options: Any) -> Any:
        table = layout.new_table(False, **options) if options else layout.PlainTable().rich_table()
        table.add_column("x")
        table.add_row("1")
        return table

    plain = layout.console(width=1 << 16)
    assert layout.plain_text(table_of(), plain) == rich_text(table_of())
    terminal = type(plain)(force_terminal=True, width=1 << 16)  # rich's Console, as a terminal
    assert terminal.color_system is not None and layout.plain_text(table_of(), terminal) is None
    assert layout.plain_text(table_of(show_lines=True), plain) is None
    assert layout.plain_text(table_of(show_header=False), plain) is None
    assert layout.plain_text(table_of(title="a title wider than the table"), plain) is None
    tabbed = table_of()
    tabbed.add_row("a\tb")
    assert layout.plain_text(tabbed, plain) is None
    plain_tabbed = layout.PlainTable()
    plain_tabbed.add_column("x")
    plain_tabbed.add_row("a\tb")
    assert layout.plain_text(plain_tabbed, None) is None
    centred = layout.PlainTable(title="centred")  # rich's default title_justify
    centred.add_column("a column wider than its title")
    assert layout.plain_text(centred, None) is None


class Stream:
    """A standard output that is, or is not, a terminal."""

    def __init__(self, terminal: bool, encoding: str = "utf-8") -> None:
        self.terminal, self.encoding = terminal, encoding

    def isatty(self) -> bool:
        return self.terminal


def test_tables_for_no_terminal_are_built_without_rich(monkeypatch):
    """A table bound for a file or a pipe is a PlainTable (rich-free); for a terminal, with FORCE_COLOR or
    TTY_COMPATIBLE (which make rich treat the output as a terminal), an encoding rich would draw in ASCII, or
    options a PlainTable does not know, rich's own Table."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("sys.stdout", Stream(terminal=False))
    assert isinstance(layout.new_table(False, title="t", title_justify="left"), layout.PlainTable)
    assert not isinstance(layout.new_table(False, title="t", show_lines=True), layout.PlainTable)
    monkeypatch.setattr("sys.stdout", Stream(terminal=False, encoding="ascii"))
    assert not isinstance(layout.new_table(False), layout.PlainTable)
    monkeypatch.setattr("sys.stdout", Stream(terminal=True))
    assert not isinstance(layout.new_table(False), layout.PlainTable)
    monkeypatch.setattr("sys.stdout", Stream(terminal=False))
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.setenv(name, "0")
        assert not isinstance(layout.new_table(False), layout.PlainTable)
        monkeypatch.delenv(name)


NOTES = [
    "'-': no verified figure. Sources and caveats: `tfcost gpus --format json`.",
    "Crossovers are rounded down: the largest T at which the growing cost is at most the fixed one (it is larger "
    "from T + 1 on); 'exact' is the crossing itself, a fraction where the cost is linear in T there.",
    "[1] two\nlines,  two spaces   and three, then some trailing spaces     ",
    "",
    "    ",
    "a note that ends in a new line\n",
    "  indented, and a run of spaces exactly at the edge" + " " * 40 + "x",
    "模型 fits",
]


@pytest.mark.parametrize("width", [120, 80, 41, 30, None])
def test_plain_notes_are_what_rich_prints(monkeypatch, width):
    """Notes print as rich prints them, wrapped where rich wraps them (between words, a line's trailing spaces kept
    up to the width); a word wider than the line (which rich folds), a tab, wide characters that do not fit, or a
    COLUMNS that terminal_width does not take are left to rich."""
    monkeypatch.delenv("COLUMNS", raising=False)
    out = layout.console(width=width) if width is not None else layout.console()
    with out.capture() as captured:
        for note in NOTES:
            out.print(note)
    assert layout.plain_notes(NOTES, width) == captured.get()
    assert layout.plain_notes(["a\tb"], 120) is None
    assert layout.plain_notes(["x" * 31], 30) is None
    assert layout.plain_notes(["模型" * 8], 30) is None
    monkeypatch.setenv("COLUMNS", "0")
    assert layout.plain_notes(NOTES, None) is None


def commands(tmp_path) -> list[tuple[str, ...]]:
    wide = tmp_path / "wide.yaml"  # a user's model named in wide characters
    text = (presets_dir() / "models" / "gpt2-small.yaml").read_text(encoding="utf-8")
    wide.write_text("name: 模型\n" + "\n".join(line for line in text.splitlines() if not line.startswith("name:")))
    every = [path.stem for path in sorted((presets_dir() / "models").glob("*.yaml"))]
    return [
        ("estimate", "gpt2-small"), ("estimate", "deepseek-v3", "--explain"), ("estimate", str(wide)),
        ("compare", "gpt2-small", str(wide), "llama-3-8b"), ("compare", *every), ("compare", *every[:9], "--breakdown"),
        ("train", "llama-3-8b"), ("train", "llama-3-8b", "--gpus", "8"), ("train", "mixtral-8x7b", "--gpus", "64"),
        ("serve", "llama-3-8b", "--batch", "4"), ("serve", "qwen3-8b", "--gpu", "h100"), ("list",), ("gpus",),
        ("plan", "train", "llama-3-8b", "--gpus", "64"), ("plan", "serve", "llama-3-8b", "--gpus", "8"),
    ]  # fmt: skip


@pytest.mark.parametrize("columns", ["120", "80", None])
def test_every_command_prints_the_same_with_richs_own_widths(tmp_path, monkeypatch, columns):
    """Each command's output with cell_widths as shipped, and with it returning None (rich measures every table
    itself, as before): byte for byte the same, at several terminal widths and none (a pipe)."""
    seen, printed = [], []
    shipped, shipped_plain = layout.cell_widths, layout.plain_text

    def recorded(table: Any, out: Any) -> str | None:
        printed.append(shipped_plain(table, out))
        return printed[-1]

    def counted(table):
        widths = shipped(table)
        seen.append(widths is not None)
        if widths is not None:  # the widths are rich's own measure, wherever they are used
            fixed = any(column.width is not None for column in as_rich(table).columns)  # printed: laid out as given
            assert fixed or sum(widths) + len(widths) + 1 == rich_natural_width(table)
        return widths

    env = {"COLUMNS": columns} if columns else {}
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    for argv in commands(tmp_path):
        monkeypatch.setattr(layout, "cell_widths", counted)
        monkeypatch.setattr(layout, "plain_text", recorded)
        fast = run_in_process(*argv, env=env)
        monkeypatch.setattr(layout, "cell_widths", lambda table: None)
        monkeypatch.setattr(layout, "plain_text", lambda table, out: None)
        slow = run_in_process(*argv, env=env)
        assert fast.code == slow.code == 0, (argv, fast.stderr)
        assert fast.stdout == slow.stdout, argv
        assert fast.stderr == slow.stderr, argv
    assert seen and all(seen)  # every table the commands built was laid out from its cells
    # tables printed without rich's layout: all that fit (at 80 columns most are narrowed, their labels wrapped)
    assert sum(text is not None for text in printed) > (0 if columns == "80" else len(printed) * 3 // 4)
