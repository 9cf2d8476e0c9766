"""`tfcost check` (tfcost against transformers) and `tfcost import` (a config as a preset).

No `from __future__ import annotations` here: typer would then eval and compile every option's annotation
string twice on each run, where real annotations cost nothing.
"""

from typing import TYPE_CHECKING

import typer

from tfcost.schema import (
    Workload,
)

if TYPE_CHECKING:
    pass


from tfcost.cli.app import app
from tfcost.cli.options import (
    Batch,
    ConfigOption,
    DtypeOption,
    FormatOption,
    LenientOption,
    ModelArgument,
    RevisionOption,
    Seq,
    SetOption,
    StrictOption,
    default,
    load_source,
    validated,
)


@app.command()
def check(
    model: ModelArgument = None,
    config: ConfigOption = None,
    seq: Seq = default(Workload, "seq_len"),
    batch: Batch = default(Workload, "batch"),
    dtype: DtypeOption = default(Workload, "dtype"),
    revision: RevisionOption = None,
    output: FormatOption = "table",
) -> None:
    """tfcost's own reader against transformers' implementation, quantity by quantity; exit 1 when they differ
    (needs tfcost[hf])."""
    from tfcost.engines.dispatch import check as run_check
    from tfcost.render.estimate import check_table
    from tfcost.render.sections import print_report

    workload = validated(Workload, seq_len=seq, batch=batch, dtype=dtype, causal=False)
    result = run_check(model, config, workload, revision)
    print_report(result, output, check_table)
    if not result.agree:
        raise typer.Exit(1)


@app.command("import")
def import_config(
    model: ModelArgument = None,
    config: ConfigOption = None,
    overrides: SetOption = None,
    strict: StrictOption = False,
    lenient: LenientOption = False,
    revision: RevisionOption = None,
) -> None:
    """Print the preset YAML equivalent to a Hugging Face config.json (or any model source), to stdout.

    `tfcost import config.json > my-model.yaml` writes a preset that `tfcost estimate my-model.yaml` reads.
    """
    from tfcost.render.notes import print_preset_yaml

    source = load_source(model, config, overrides, strict, lenient, revision)
    print_preset_yaml(source.shape, source.ignored_fields, source.not_priced)
