"""The typer app every command module registers on, and its root options (--version).

No `from __future__ import annotations` here: typer would then eval and compile every option's annotation
string twice on each run, where real annotations cost nothing.
"""

from typing import Annotated

import typer

from tfcost import __version__

app = typer.Typer(
    name="tfcost",
    help="What a transformer costs: parameters, FLOPs, KV cache and attention memory, from model presets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def show_version(value: bool) -> None:
    if value:
        print(f"tfcost {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", callback=show_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """What a transformer costs: parameters, FLOPs, KV cache and attention memory, from model presets."""
