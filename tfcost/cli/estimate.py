"""`tfcost estimate` and `tfcost compare`: one model's counts, or several side by side.

No `from __future__ import annotations` here: typer would then eval and compile every option's annotation
string twice on each run, where real annotations cost nothing.
"""

from typing import Annotated

import typer

from tfcost.cli.app import app
from tfcost.cli.options import (
    AudioSeconds,
    Batch,
    Causal,
    ConfigOption,
    DtypeOption,
    EngineOption,
    ExplainOption,
    FormatOption,
    Images,
    ImageSize,
    LenientOption,
    ModelArgument,
    RevisionOption,
    Seq,
    SetOption,
    StrictOption,
    default,
)
from tfcost.schema import (
    Workload,
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
    images: Images = 0,
    image_size: ImageSize = None,
    audio_seconds: AudioSeconds = 0,
    gpu: Annotated[
        str | None,
        typer.Option("--gpu", help="GPU from `tfcost gpus`: also the T at which one layer's score matrix outgrows it."),
    ] = None,
    engine: EngineOption = "auto",
    output: FormatOption = "table",
    explain: ExplainOption = False,
) -> None:
    """Parameters, FLOPs, KV cache, score-matrix size and the lesson's crossovers in T of one model."""
    from tfcost import api
    from tfcost.render.estimate import estimate_table
    from tfcost.render.notes import print_context_warning, print_report_notes
    from tfcost.render.sections import print_report

    result = api.estimate(
        model, config=config, overrides=overrides, seq=seq, batch=batch, dtype=dtype, causal=causal, gpu=gpu,
        engine=engine, explain=explain, strict=strict, lenient=lenient, revision=revision, images=images,
        image_size=image_size, audio_seconds=audio_seconds,
    )  # fmt: skip
    print_report_notes(result)
    print_report(result, output, estimate_table)
    print_context_warning(result)  # after the answer: a run that fails says only its one error line


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
    from tfcost import api
    from tfcost.errors import UsageError
    from tfcost.readers.presets import split_column
    from tfcost.render.common import print_json
    from tfcost.render.estimate import compare_csv, compare_table
    from tfcost.render.notes import print_context_warning, print_report_notes

    columns = [split_column(model) for model in models or ()]
    sources: list[tuple[str | None, str | None, list[str]]] = [(model, None, own) for model, own in columns]
    sources += [(None, path, []) for path in configs or ()]
    if not sources:
        raise UsageError("give the models to compare: preset names, YAML or config.json paths, or --config PATH")
    results = []
    for model, path, own in sources:
        found = api.estimate(
            model, config=path, overrides=[*(overrides or ()), *own], seq=seq, batch=batch, dtype=dtype,
            causal=causal, engine=engine, strict=strict, lenient=lenient, revision=revision,
            crossovers=output == "json",  # the JSON carries every report whole; the table and CSV print none
        )  # fmt: skip
        print_report_notes(found)
        results.append(found)
    if output == "json":
        print_json(results)
    elif output == "csv":
        compare_csv(results)
    else:
        compare_table(results, breakdowns=breakdown, markdown=output == "markdown")
    for found in results:
        print_context_warning(found)
