"""Notes: what tfcost says beside a result (a GPU name taken as another, a cache it could not write), said to
whoever listens. The Python API listens to none and prints nothing (docs/api.md); the command line, while it runs,
sends each to stderr as one `tfcost: note:` line (tfcost.cli.main). A note that matters to the figures is also in
the report itself (its gpu, ignored_fields, not_priced, ...), where a program reads it."""

from __future__ import annotations

from collections.abc import Callable

LISTENER: Callable[[str], None] | None = None  # set by the command line for the length of a command


def note(text: str) -> None:
    """Say `text` to the listener, if there is one."""
    if LISTENER is not None:
        LISTENER(text)
