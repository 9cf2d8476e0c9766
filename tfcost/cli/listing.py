"""`tfcost list` and `tfcost gpus`: what is shipped.

No `from __future__ import annotations` here: typer would then eval and compile every option's annotation
string twice on each run, where real annotations cost nothing.
"""

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    pass


from tfcost.cli.app import app
from tfcost.cli.options import FormatOption, parse_tokens
from tfcost.schema import FrameworkKind


@app.command("list")
def list_presets(
    family: Annotated[
        str | None,
        typer.Option(
            "--family", metavar="NAME", help="Only presets whose name starts with NAME: llama, qwen3, gemma-3."
        ),
    ] = None,
    min_params: Annotated[
        int | None,
        typer.Option(
            "--min-params", parser=parse_tokens, metavar="COUNT", help="Only presets of at least COUNT parameters: 7B."
        ),
    ] = None,
    output: FormatOption = "table",
) -> None:
    """List the built-in model presets with their size: total and active parameters."""
    from tfcost.core.params import active_params, total_params
    from tfcost.errors import UsageError
    from tfcost.readers.presets import model_preset_paths, shipped_model
    from tfcost.render.listing import models_listing

    paths = model_preset_paths()
    names = [name for name in paths if family is None or name.startswith(family.strip().lower())]
    if not names:
        raise UsageError(f"--family {family}: no preset's name starts with it; `tfcost list` shows them all")
    # Only the family's files are read (a preset's name is its file's name: tests/test_trusted.py), not all 56.
    models = [shipped_model(paths[name]) for name in names]
    if min_params is not None:
        models = [model for model in models if total_params(model) >= min_params]
    totals, actives = [total_params(model) for model in models], [active_params(model) for model in models]
    models_listing(models, totals, actives, output)


@app.command()
def gpus(output: FormatOption = "table") -> None:
    """List the GPU spec table: dense peaks, memory and bandwidth, with sources."""
    from tfcost.readers.presets import all_gpus
    from tfcost.render.listing import gpus_listing

    gpus_listing(all_gpus(), output)


@app.command()
def frameworks(
    name: Annotated[
        str | None,
        typer.Argument(
            metavar="[NAME[@VERSION]]",
            help="One framework: every convention it sets, with its source.",
            show_default=False,
        ),
    ] = None,
    kind: Annotated[
        FrameworkKind | None, typer.Option("--kind", help="Only trainers or only serving engines.", show_default=False)
    ] = None,
    output: FormatOption = "table",
) -> None:
    """List the trainers and serving engines tfcost prices runs under (`--framework`), or one with every field."""
    from tfcost.readers.frameworks import all_frameworks, framework_used, load_framework
    from tfcost.render import frameworks as render
    from tfcost.render.common import print_csv, print_json

    if name is None:
        render.print_frameworks(all_frameworks(kind), output)
        return
    framework, _ = load_framework(name, kind or load_framework_kind(name))
    used = framework_used(name, framework.kind, {})
    if output == "json":
        print_json(used)
    elif output == "csv":
        print_csv(render.field_rows(used))
    else:
        render.framework_table(framework, used, markdown=output == "markdown")


def load_framework_kind(name: str) -> "FrameworkKind":
    """The kind of the framework `name` names, read from its file (its own kind, whatever it is)."""
    from tfcost.readers.frameworks import framework_paths, read_framework

    path = framework_paths().get(name.partition("@")[0].strip().lower())
    return read_framework(path).kind if path is not None else "training"
