"""`tfcost sweep`: the costs over a range of T, as a table or a chart.

No `from __future__ import annotations` here: typer would then eval and compile every option's annotation
string twice on each run, where real annotations cost nothing.
"""

import os
import sys
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from tfcost.schema import (
    ServingSetup,
    WeightsDtype,
    Workload,
)

if TYPE_CHECKING:
    pass


from tfcost.cli.app import app
from tfcost.cli.options import (
    Causal,
    DtypeOption,
    SetOption,
    default,
    validated,
)

SweepFormat = Literal["chart", "table", "json", "csv", "markdown"]
Spacing = Literal["geometric", "linear"]


@app.command()
def sweep(
    models: Annotated[list[str], typer.Argument(help="Preset names, YAML preset files or config.json paths.")],
    seq: Annotated[
        str,
        typer.Option("--seq", "-T", help="T: a range LOW..HIGH (doubling steps unless --points), or values 1024,4096."),
    ] = "512..131072",
    batch: Annotated[str, typer.Option("--batch", "-B", help="B: batch sizes, comma-separated.")] = "1",
    metric: Annotated[
        str,
        typer.Option(
            "--metric",
            "-m",
            help="Comma-separated: params, six_n, attention_flops, flops_per_token, attention_share, forward_flops, "
            "training_flops, kv_cache, score_matrix; with --gpu also serve_memory, max_batch, prefill_ms, decode_ms.",
        ),
    ] = "attention_flops",
    points: Annotated[
        int | None, typer.Option("--points", "-n", help="Values of T across the range [default: doubling].")
    ] = None,
    spacing: Annotated[Spacing, typer.Option("--spacing", help="Steps across the range.")] = "geometric",
    overrides: SetOption = None,
    dtype: DtypeOption = default(Workload, "dtype"),
    causal: Causal = default(Workload, "causal"),
    gpu: Annotated[
        str | None,
        typer.Option("--gpu", help="GPU from `tfcost gpus`: the serving metrics and the score-matrix crossover."),
    ] = None,
    gpus: Annotated[int, typer.Option("--gpus", min=1, help="GPUs in tensor parallel (serving metrics).")] = 1,
    weights_dtype: Annotated[
        WeightsDtype,
        typer.Option("--weights-dtype", help="Weight storage: serving and the KV = weights crossover."),
    ] = "bf16",
    plot: Annotated[
        str | None,
        typer.Option("--plot", metavar="PATH", help="Also write the chart to a .png, .svg or .html file."),
    ] = None,
    output: Annotated[
        SweepFormat | None,
        typer.Option(
            "--format",
            "-f",
            help="chart (needs tfcost[plot]), table, json, csv or markdown [default: chart; with --plot, table].",
        ),
    ] = None,
) -> None:
    """Costs over a range of sequence lengths and batch sizes, as a chart or a table, with the crossovers."""
    from tfcost.costs import sweep as sweeping
    from tfcost.readers.presets import load_gpu, resolve_model
    from tfcost.render.common import neutral
    from tfcost.render.sweep import sweep_chart, sweep_csv, sweep_json, sweep_table

    if plot is not None:
        from tfcost.render import plot as plotting

        plotting.check_path(plot)
    refuse_unused_options(seq, spacing, gpus, gpu)
    seq_lens = sweeping.parse_seq(seq, points, spacing)
    batches = sweeping.parse_positive_list(batch, "--batch")
    metrics = sweeping.parse_metrics(metric)
    shapes = [resolve_model(name, None, overrides or ()) for name in models]
    setup = validated(ServingSetup, gpus=gpus, weights_dtype=weights_dtype, kv_dtype=dtype)
    spec = load_gpu(gpu) if gpu is not None else None
    report = sweeping.sweep(shapes, seq_lens, batches, metrics, dtype, causal, spec, setup)
    chosen = output or ("table" if plot else "chart")
    if chosen != "json":  # names from users' files reach the charts too
        report = neutral(report)
    if chosen == "chart":
        from tfcost.render import plot as plotting

        color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        sweep_chart(plotting.terminal(report, color=color), report)
    elif chosen == "json":
        sweep_json(report)
    elif chosen == "csv":
        sweep_csv(report)
    else:
        sweep_table(report, markdown=chosen == "markdown")
    if plot is not None:
        from tfcost.render import plot as plotting

        written = plotting.write(report, plot)
        sys.stderr.write(f"tfcost: wrote {written}\n")


def refuse_unused_options(seq: str, spacing: str, gpus: int, gpu: str | None) -> None:
    """An option that would do nothing as given is an error: --spacing spaces a range's steps, --gpus splits the
    serving metrics, which need --gpu."""
    from tfcost.errors import UsageError

    if spacing != "geometric" and ".." not in seq:
        raise UsageError("--spacing: give --seq as a range LOW..HIGH")
    if gpus != 1 and gpu is None:
        raise UsageError("--gpus: the serving metrics it splits need --gpu")
