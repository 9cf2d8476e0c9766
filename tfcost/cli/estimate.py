"""`tfcost estimate` and `tfcost compare`: one model's counts, or several side by side.

No `from __future__ import annotations` here: typer would then eval and compile every option's annotation
string twice on each run, where real annotations cost nothing.
"""

from functools import partial
from typing import TYPE_CHECKING, Annotated

import typer

from tfcost.schema import (
    Workload,
)

if TYPE_CHECKING:
    from tfcost.reports.estimate import Estimate


from tfcost.cli.app import app
from tfcost.cli.options import (
    Batch,
    Causal,
    ConfigOption,
    DtypeOption,
    EngineOption,
    ExplainOption,
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
def estimate(
    model: ModelArgument = None,
    config: ConfigOption = None,
    overrides: SetOption = None,
    strict: StrictOption = False,
    lenient: LenientOption = False,
    revision: RevisionOption = None,
    seq: Seq = default(Workload, "seq_len"),
    batch: Batch = default(Workload, "batch"),
    dtype: DtypeOption = default(Workload, "dtype"),
    causal: Causal = default(Workload, "causal"),
    gpu: Annotated[
        str | None,
        typer.Option("--gpu", help="GPU from `tfcost gpus`: also the T at which one layer's score matrix outgrows it."),
    ] = None,
    engine: EngineOption = "auto",
    output: FormatOption = "table",
    explain: ExplainOption = False,
) -> None:
    """Parameters, FLOPs, KV cache, score-matrix size and the lesson's crossovers in T of one model."""
    from tfcost.engines.dispatch import engine_answer
    from tfcost.readers.presets import load_gpu
    from tfcost.render import tables as render
    from tfcost.reports.estimate import estimate as run_estimate
    from tfcost.reports.estimate import with_source

    workload = validated(Workload, seq_len=seq, batch=batch, dtype=dtype, causal=causal)

    def analytic() -> "Estimate":
        source = load_source(model, config, overrides, strict, lenient, revision)
        warnings.append((source.shape.name, workload.seq_len, source.shape.max_seq_len, "T"))
        chosen_gpu = load_gpu(gpu) if gpu is not None else None
        found = with_source(run_estimate(source.shape, workload, chosen_gpu, explained=explain), source)
        render.print_checkpoint_check(found)
        return found

    warnings: list[tuple[str, int, int, str]] = []
    result = engine_answer(model, config, overrides or (), workload, engine, analytic, revision)
    render.print_report(result, output, render.estimate_table)
    for warning in warnings:  # after the answer: a run that fails says only its one error line
        render.warn_past_context(*warning)


@app.command()
def compare(
    models: Annotated[
        list[str] | None,
        typer.Argument(
            help="Preset names, YAML preset files or config.json paths, each with its own overrides if wanted: "
            "llama-3-8b llama-3-8b:n_kv_heads=32 (as --set KEY=VALUE, comma-separated, after the column's --set).",
            show_default=False,
        ),
    ] = None,
    configs: Annotated[
        list[str] | None,
        typer.Option("--config", metavar="PATH", help="A Hugging Face config.json to add as a column (repeatable)."),
    ] = None,
    overrides: SetOption = None,
    strict: StrictOption = False,
    lenient: LenientOption = False,
    revision: RevisionOption = None,
    seq: Seq = default(Workload, "seq_len"),
    batch: Batch = default(Workload, "batch"),
    dtype: DtypeOption = default(Workload, "dtype"),
    causal: Causal = default(Workload, "causal"),
    breakdown: Annotated[
        bool, typer.Option("--breakdown", help="Also show the per-part breakdowns (always in --format json).")
    ] = False,
    engine: EngineOption = "auto",
    output: FormatOption = "table",
) -> None:
    """The same quantities for several models, side by side (--set applies to each)."""
    from tfcost.engines.dispatch import engine_answer
    from tfcost.errors import UsageError
    from tfcost.readers.presets import split_column
    from tfcost.render import tables as render
    from tfcost.reports.estimate import estimate as run_estimate
    from tfcost.reports.estimate import with_source

    columns = [split_column(model) for model in models or ()]
    sources: list[tuple[str | None, str | None, list[str]]] = [(model, None, own) for model, own in columns]
    sources += [(None, path, []) for path in configs or ()]
    if not sources:
        raise UsageError("give the models to compare: preset names, YAML or config.json paths, or --config PATH")
    workload = validated(Workload, seq_len=seq, batch=batch, dtype=dtype, causal=causal)

    def analytic(model: str | None, path: str | None, column: list[str]) -> "Estimate":
        source = load_source(model, path, [*(overrides or ()), *column], strict, lenient, revision)
        warnings.append((source.shape.name, workload.seq_len, source.shape.max_seq_len, "T"))
        found = with_source(run_estimate(source.shape, workload), source)
        render.print_checkpoint_check(found)
        return found

    warnings: list[tuple[str, int, int, str]] = []
    results = [
        engine_answer(
            model, path, [*(overrides or ()), *own], workload, engine, partial(analytic, model, path, own), revision
        )
        for model, path, own in sources
    ]
    if output == "json":
        render.print_json(results)
    elif output == "csv":
        render.compare_csv(results)
    else:
        render.compare_table(results, breakdowns=breakdown, markdown=output == "markdown")
    for warning in warnings:
        render.warn_past_context(*warning)
