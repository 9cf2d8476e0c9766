"""The one place text from outside (a model's name or source, a profile's fields, a path, a file's words, torch's
or a library's messages) is made safe for the sink it goes to. Every renderer calls one of these; JSON alone takes
the text exact (json.dumps escapes what JSON needs, and a script wants the bytes as written).

- terminal: every character that would not print as itself (escape, C0 and C1 controls, bidi overrides and
  isolates, line breaks, lone surrogates) written as its Python escape, visibly: no file can move the cursor,
  retitle the window, write the clipboard, reorder what follows (CVE-2021-42574, "Trojan Source") or make a line
  the encoder cannot write.
- csv: a cell a spreadsheet would run as a formula (starting with = + - @, a tab or a carriage return) prefixed
  with ' (OWASP's advice against CSV injection, CWE-1236).
- markdown: a table cell with Markdown's characters (pipes, backslashes, backticks, emphasis, brackets) escaped.
- chart: a label for matplotlib with `$` escaped (its mathtext would parse it) and a leading `_` kept visible
  (matplotlib's legend leaves out labels starting with `_`).
"""

from __future__ import annotations

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
MARKDOWN_CHARACTERS = "\\|*_`<>[]"


def terminal(text: str) -> str:
    """Text safe to print to a terminal: what would not print as itself becomes its visible Python escape."""
    if text.isprintable():  # the common case, checked at C speed
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def csv_cell(text: str) -> str:
    """A CSV cell a spreadsheet shows as text: terminal-safe, and prefixed with ' where it would start a formula."""
    safe = terminal(text)
    return "'" + safe if text.startswith(FORMULA_STARTS) or safe.startswith(FORMULA_STARTS) else safe


def markdown(text: str, keep_bold: bool = False) -> str:
    """A Markdown table cell: no line breaks, nothing unprintable, Markdown's own characters escaped. With
    `keep_bold`, a whole cell written **like this** (a section heading) stays bold."""
    bold = keep_bold and text.startswith("**") and text.endswith("**") and len(text) > 4
    inner = text[2:-2] if bold else text
    safe = inner
    for char in MARKDOWN_CHARACTERS:
        safe = safe.replace(char, "\\" + char)
    safe = terminal(safe)
    safe = safe.replace("  ", " &nbsp;")  # keep a breakdown's indentation
    return f"**{safe}**" if bold else safe


def chart(text: str) -> str:
    """A label for matplotlib: terminal-safe, every `$` escaped so mathtext reads none, and a leading `_` (which
    the legend would take as "leave me out") kept visible behind a space."""
    safe = terminal(text).replace("$", r"\$")
    return " " + safe if safe.startswith("_") else safe
