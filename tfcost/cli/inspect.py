"""`tfcost inspect`: the bytes a checkpoint stores, from its files' headers alone.

No `from __future__ import annotations` here: typer would then eval and compile every option's annotation
string twice on each run, where real annotations cost nothing.
"""

from typing import Annotated

import typer

from tfcost.cli.app import app
from tfcost.cli.options import FormatOption, RevisionOption


@app.command()
def inspect(
    checkpoint: Annotated[
        str,
        typer.Argument(
            help="A model folder (config.json with *.safetensors, sharded or not), a .safetensors or .gguf file, or "
            "a Hub id (owner/name: only the safetensors headers are fetched, by HTTP range requests).",
            show_default=False,
        ),
    ],
    revision: RevisionOption = None,
    output: FormatOption = "table",
) -> None:
    """The bytes a checkpoint stores, by dtype and by part, read from its files' headers (no tensor data is read),
    beside tfcost's figures for the same model, and the tensors its op tables do not account for."""
    from tfcost.readers.presets import inspected
    from tfcost.render.estimate import inspect_table
    from tfcost.render.notes import print_note, print_source_notes
    from tfcost.render.sections import print_report
    from tfcost.reports.stored import inspect_report

    files, source, unread = inspected(checkpoint, revision)
    if source is not None:
        print_source_notes(source)
    if unread is not None:
        print_note(f"the model is not priced: {unread}")
    print_report(inspect_report(checkpoint, files, source), output, inspect_table)
