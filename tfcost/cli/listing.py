"""`tfcost list` and `tfcost gpus`: what is shipped.

No `from __future__ import annotations` here: typer would then eval and compile every option's annotation
string twice on each run, where real annotations cost nothing.
"""

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    pass


from tfcost.cli.app import app
from tfcost.cli.options import (
    FormatOption,
    TableFormat,
)


@app.command("list")
def list_presets(
    output: Annotated[
        TableFormat, typer.Option("--format", "-f", help="table for people, markdown for documents.")
    ] = "table",
) -> None:
    """List the built-in model presets with their size: total and active parameters."""
    from tfcost.core.params import active_params, total_params
    from tfcost.readers.presets import all_models
    from tfcost.render.tables import models_table

    models = all_models()
    totals, actives = [total_params(model) for model in models], [active_params(model) for model in models]
    models_table(models, totals, actives, markdown=output == "markdown")


@app.command()
def gpus(output: FormatOption = "table") -> None:
    """List the GPU spec table: dense peaks, memory and bandwidth, with sources."""
    from tfcost.readers.presets import all_gpus
    from tfcost.render import tables as render

    table = all_gpus()
    if output == "json":
        render.print_json(table)
    else:
        render.gpus_table(table, markdown=output == "markdown")
