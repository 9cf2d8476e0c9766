"""`tfcost plan train` and `tfcost plan serve`: every legal layout searched, those that fit ranked.

No `from __future__ import annotations` here: typer would then eval and compile every option's annotation
string twice on each run, where real annotations cost nothing.
"""

import os
import sys
from typing import Annotated, Any, Literal

import typer

from tfcost.cli.app import app
from tfcost.cli.options import (
    ConfigOption,
    FrameworkOption,
    FrameworkSetOption,
    GpuOption,
    LenientOption,
    ModelArgument,
    QuietOption,
    RevisionOption,
    SetOption,
    StrictOption,
    default,
    load_source,
    parse_tokens,
)
from tfcost.schema import Optimizer, Precision, ServingSetup, TrainingSetup

plan_app = typer.Typer(
    name="plan",
    help="Search every legal layout of a training run or a server; list those that fit, best first.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app.add_typer(plan_app)

PlanFormat = Literal["table", "json", "csv", "markdown"]
ServePlanFormat = Literal["table", "json", "csv", "markdown", "chart"]
TopOption = Annotated[int, typer.Option("--top", "-k", min=1, help="Layouts to list.")]
PlanGpus = Annotated[int, typer.Option("--gpus", min=1, help="GPUs to lay the run out on.")]


def model_words(model: str | None, config: str | None, overrides: list[str] | None) -> list[str]:
    """The model as it was given on the command line, for the `tfcost plan` command a suggestion prints."""
    words = [model] if model is not None else ["--config", config or ""]
    return [*words, *(word for override in overrides or () for word in ("--set", override))]


def with_suggestion(
    result: Any,
    model: str | None,
    config: str | None,
    overrides: list[str] | None,
    strict: bool,
    lenient: bool,
    revision: str | None,
    gpu: str,
) -> Any:
    """A `train` or `serve` report; when its layout does not fit, with the nearest that does
    (tfcost.reports.plan.with_suggestion), the model read again without its notes (printed once already)."""
    if not result.needs_suggestion():  # a layout that fits never imports the search
        return result
    from tfcost.readers.presets import load_gpu, resolve_source
    from tfcost.reports.plan import with_suggestion as suggested

    shape = resolve_source(model, config, overrides or (), strict=strict, lenient=lenient, revision=revision).shape
    words = [*model_words(model, config, overrides), *framework_words(result.framework)]
    return suggested(result, shape, load_gpu(gpu), words)


def framework_words(used: Any) -> list[str]:
    """The framework a report was priced under, as the options that name it again (none for tfcost's defaults)."""
    if used is None:
        return []
    words = ["--framework", f"{used.name}@{used.version}"] if used.name is not None else []
    for key in used.overridden:
        words += ["--framework-set", f"{key}={used.fields[key].value}"]
    return words


def fail_when_empty(feasible: int, line: str) -> None:
    """No layout fits: the one line, exit 1."""
    if feasible == 0:
        from tfcost.errors import TfcostError

        raise TfcostError(line)


@plan_app.command("train")
def plan_train(
    model: ModelArgument = None,
    config: ConfigOption = None,
    overrides: SetOption = None,
    strict: StrictOption = False,
    lenient: LenientOption = False,
    revision: RevisionOption = None,
    gpus: PlanGpus = 8,
    gpu: GpuOption = "h100-sxm",
    seq: Annotated[
        int | None,
        typer.Option("--seq", "-T", min=1, help="T: tokens per sequence [default: 4,096, or the model's context]."),
    ] = None,
    tokens: Annotated[
        int | None,
        typer.Option(
            "--tokens", "-D", parser=parse_tokens, metavar="COUNT", help="D: training tokens [default: 20 N]."
        ),
    ] = None,
    global_batch: Annotated[
        int | None,
        typer.Option("--global-batch", min=1, help="B: sequences per step [default: 4M tokens (Llama 2) / T]."),
    ] = None,
    precision: Annotated[Precision, typer.Option("--precision", help="Training precision.")] = default(
        TrainingSetup, "precision"
    ),
    optimizer: Annotated[Optimizer, typer.Option("--optimizer", help="Optimizer.")] = default(
        TrainingSetup, "optimizer"
    ),
    price_per_gpu_hour: Annotated[
        float | None,
        typer.Option("--price", "--price-per-gpu-hour", min=0, help="Price of one GPU-hour: adds a cost column."),
    ] = None,
    framework: FrameworkOption = None,
    framework_set: FrameworkSetOption = None,
    top: TopOption = 10,
    output: Annotated[PlanFormat, typer.Option("--format", "-f", help="table, json, csv or markdown.")] = "table",
    quiet: QuietOption = False,
) -> None:
    """Training: every tp x pp x cp x dp (x ep) layout, virtual stages, ZeRO, recomputation, micro-batch and
    offload; those that fit, by predicted step time."""
    from tfcost.api import convention_values, conventions_of
    from tfcost.readers.presets import load_gpu
    from tfcost.render import plan as render
    from tfcost.render.common import print_json
    from tfcost.render.progress import status
    from tfcost.reports.plan import plan_train as run_plan
    from tfcost.reports.plan import with_intervals

    used = conventions_of(framework, framework_set, "training")
    shape = load_source(model, config, overrides, strict, lenient, revision).shape
    with status(f"searching the training layouts of {shape.name} on {gpus:,} x {gpu}", quiet):
        report = run_plan(
            shape, load_gpu(gpu), gpus=gpus, seq=seq, tokens=tokens, global_batch=global_batch, precision=precision,
            optimizer=optimizer, price=price_per_gpu_hour, top=top, conventions=convention_values(used),
        )  # fmt: skip
    report = with_intervals(report, used)
    if output == "json":
        print_json(report)
    elif output == "csv":
        render.print_plan_csv(report)
    elif report.feasible:
        render.plan_train_table(report, markdown=output == "markdown")
    fail_when_empty(report.feasible, render.no_layout_line(report))


@plan_app.command("serve")
def plan_serve(
    model: ModelArgument = None,
    config: ConfigOption = None,
    overrides: SetOption = None,
    strict: StrictOption = False,
    lenient: LenientOption = False,
    revision: RevisionOption = None,
    gpus: PlanGpus = 8,
    gpu: GpuOption = "h100-sxm",
    prompt: Annotated[int, typer.Option("--prompt", "-P", min=1, help="P: prompt tokens per sequence.")] = default(
        ServingSetup, "prompt"
    ),
    generate: Annotated[
        int, typer.Option("--generate", "-G", min=1, help="G: generated tokens per sequence.")
    ] = default(ServingSetup, "generate"),
    ttft_ms: Annotated[
        float | None, typer.Option("--ttft-ms", min=0, help="Keep layouts whose expected TTFT is at most this.")
    ] = None,
    tpot_ms: Annotated[
        float | None, typer.Option("--tpot-ms", min=0, help="Keep layouts whose expected TPOT is at most this.")
    ] = None,
    weights_dtype: Annotated[
        str | None,
        typer.Option(
            "--weights-dtype",
            help="Weight formats to try, comma-separated [default: bf16,fp8,int8,int4; a quantized checkpoint: as "
            "stored].",
            show_default=False,
        ),
    ] = None,
    kv_dtype: Annotated[str, typer.Option("--kv-dtype", help="KV-cache formats to try, comma-separated.")] = "bf16,fp8",
    reserve: Annotated[
        float | None,
        typer.Option(
            "--reserve",
            help=f"Fraction of GPU memory kept free, in [0, 1) [default: the framework's, else "
            f"{default(ServingSetup, 'reserve')}].",
            show_default=False,
        ),
    ] = None,
    framework: FrameworkOption = None,
    framework_set: FrameworkSetOption = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency",
            min=1,
            help="Rank layouts under load: N requests in flight on each replica, a simulated benchmark each (TTFT "
            "and TPOT targets on its means).",
        ),
    ] = None,
    rate: Annotated[
        float | None,
        typer.Option("--rate", help="Rank layouts under load: requests per second (Poisson) over all replicas."),
    ] = None,
    requests: Annotated[
        int | None, typer.Option("--requests", min=1, help="Requests each simulated benchmark sends.")
    ] = None,
    price_per_gpu_hour: Annotated[
        float | None,
        typer.Option("--price-per-gpu-hour", help="Under load: $ a GPU-hour, for each layout's $ per million tokens."),
    ] = None,
    top: TopOption = 10,
    plot: Annotated[
        str | None,
        typer.Option("--plot", metavar="PATH", help="Also write the Pareto chart to a .png, .svg or .html file."),
    ] = None,
    output: Annotated[
        ServePlanFormat,
        typer.Option("--format", "-f", help="table, json, csv, markdown, or chart (the Pareto front in the terminal)."),
    ] = "table",
    quiet: QuietOption = False,
) -> None:
    """Serving: tensor parallel x replicas, weight and KV formats and batch; those that fit and meet the TTFT/TPOT
    targets in `serve`'s expected figures, by tokens/s per GPU, with the Pareto front against tokens/s per user."""
    from tfcost.api import convention_values, conventions_of
    from tfcost.readers.presets import load_gpu
    from tfcost.render import plan as render
    from tfcost.render.common import print_json
    from tfcost.render.progress import status
    from tfcost.reports.plan import plan_serve as run_plan
    from tfcost.reports.plan import with_intervals

    if plot is not None:
        from tfcost.render import plot as plotting

        plotting.check_path(plot)
    used = conventions_of(framework, framework_set, "serving")
    shape = load_source(model, config, overrides, strict, lenient, revision).shape
    with status(f"searching the serving layouts of {shape.name} on {gpus:,} x {gpu}", quiet):
        report = run_plan(
            shape, load_gpu(gpu), gpus=gpus, prompt=prompt, generate=generate, ttft_ms=ttft_ms, tpot_ms=tpot_ms,
            weights_dtype=weights_dtype, kv_dtype=kv_dtype, reserve=reserve, top=top,
            conventions=convention_values(used), concurrency=concurrency, rate=rate, requests=requests,
            price_per_gpu_hour=price_per_gpu_hour,
        )  # fmt: skip
    report = with_intervals(report, used)
    if output == "json":
        print_json(report)
    elif output == "csv":
        render.print_plan_csv(report)
    elif report.feasible and output == "chart":
        color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        render.print_chart(report, render.terminal_chart(report, color=color))
    elif report.feasible:
        render.plan_serve_table(report, markdown=output == "markdown")
    fail_when_empty(report.feasible, render.no_layout_line(report))
    if plot is not None:
        written = render.write_chart(report, plot)
        sys.stderr.write(f"tfcost: wrote {written}\n")
