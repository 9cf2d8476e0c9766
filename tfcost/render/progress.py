"""What a long command shows on stderr while it works (`check`, `measure`, `plan`'s search): a spinner with the
elapsed time, or a bar over known steps. Never on stdout, which may carry JSON or CSV; silent where stderr is no
terminal (a pipe, a file, a test) or with --quiet. rich is imported only when something is shown."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator


def shown(quiet: bool) -> bool:
    """Whether to show progress: not asked to be quiet, and standard error a terminal."""
    stream = sys.stderr
    try:
        return not quiet and stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream: nothing to draw on
        return False


@contextlib.contextmanager
def status(label: str, quiet: bool = False) -> Iterator[None]:
    """A spinner, `label` and the seconds elapsed on stderr while the block runs, erased when it ends."""
    if not shown(quiet):
        yield
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from tfcost.render.common import clean

    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=Console(file=sys.stderr), transient=True) as bar:
        bar.add_task(clean(label), total=None)
        yield


@contextlib.contextmanager
def steps(total: int, quiet: bool = False) -> Iterator[Callable[[str], None]]:
    """A progress bar over `total` steps on stderr; the function it gives names each step as it starts (the steps
    before it are done)."""
    if not shown(quiet):
        yield lambda label: None
        return
    from rich.console import Console
    from rich.progress import Progress

    from tfcost.render.common import clean

    with Progress(console=Console(file=sys.stderr), transient=True) as bar:
        task = bar.add_task("measuring", total=total)
        started = 0

        def begin(label: str) -> None:
            nonlocal started
            bar.update(task, completed=started, description=clean(label))
            started += 1

        yield begin
        bar.update(task, completed=total)
