"""`tfcost plan`'s tables and Pareto chart, and the suggestion line `train` and `serve` print under a layout that
does not fit. Nothing here computes: every number comes from the plan reports (tfcost.reports.plan), printed
through tfcost.units; the chart is drawn by plotext in the terminal and by matplotlib to a file, as `sweep`'s are
(tfcost.render.plot), both imported only when a chart is asked for."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

from tfcost.errors import TfcostError
from tfcost.render.answer import plan_serve_answer, plan_train_answer, print_answer
from tfcost.render.common import CONVENTIONS, neutral, print_csv
from tfcost.render.layout import new_table, optional_columns, print_table
from tfcost.reports.plan import ServePlanLayout, ServePlanReport, TrainPlanReport
from tfcost.units import human

X_LABEL = "tokens/s per user (1 / TPOT)"
Y_LABEL = "tokens/s per GPU"


def rejected_line(rejected: dict[str, int]) -> str:
    return "; ".join(f"{reason}: {count:,}" for reason, count in rejected.items()) or "none"


def no_layout_line(report: TrainPlanReport | ServePlanReport) -> str:
    """The one line when nothing fits: the reason that refused the most layouts."""
    report = neutral(report)
    count = report.rejected.get(report.most_rejected or "", 0)
    return (
        f"no layout of {report.gpus:,} x {report.gpu} works for {report.model}: {report.most_rejected} "
        f"({count:,} of {report.searched:,} layouts searched)"
    )


def plan_train_table(report: TrainPlanReport, markdown: bool = False) -> None:
    report = neutral(report)
    print_answer(plan_train_answer(report), markdown)
    title = "\n".join(
        [
            f"{report.model}: training layouts on {report.gpus:,} x {report.gpu}, fastest first",
            f"D = {human(report.tokens, 'count')} tokens, T = {report.seq_len:,}, global batch "
            f"{report.global_batch:,} sequences; {report.optimizer}, {report.precision}",
        ]
    )
    costed = any(layout.cost is not None for layout in report.layouts)
    table = new_table(markdown, title=title, title_justify="left")
    experts = any(layout.etp is not None for layout in report.layouts)  # the etp column where a layout sets it
    headers = ("#", "tp", "pp", "cp", "dp", "ep", *(["etp"] if experts else []), "v", "ZeRO", "recompute", "b",
               "offload", "step", "days", "MFU", "memory/GPU", "main term", *(["cost"] if costed else []))  # fmt: skip
    for header in headers:
        text = header in ("recompute", "offload", "main term")
        table.add_column(header, justify="left" if text else "right", no_wrap=header != "main term")
    optional_columns(table, "v", "cp", "ep", "etp", "offload", "b", "main term", "dp", "cost", "days")
    for index, layout in enumerate(report.layouts, 1):
        stages = f"{layout.pp}" if layout.pp_first_layers is None and layout.pp_last_layers is None else (
            f"{layout.pp} ({layout.pp_first_layers or '='}|{layout.pp_last_layers or '='})"
        )  # fmt: skip
        table.add_row(
            str(index), str(layout.tp), stages, str(layout.cp), f"{layout.dp:,}", str(layout.ep),
            *([str(layout.tp if layout.etp is None else layout.etp)] if experts else []),
            str(layout.virtual_stages), str(layout.zero), layout.recompute, str(layout.micro_batch), layout.offload,
            human(layout.step_seconds, "seconds"), f"{layout.days:,.2f}", human(layout.mfu, "fraction"),
            human(layout.memory_per_gpu_bytes, "bytes"), layout.main_term,
            *([human(layout.cost, "usd") if layout.cost is not None else ""] if costed else []),
        )  # fmt: skip
    assumed = [layout for layout in report.layouts if not layout.step_predicted]
    notes = [
        f"Searched {report.searched:,} layouts; {report.feasible:,} fit. Rejected: {rejected_line(report.rejected)}.",
        "step: predicted (Calculon's method, as `train` predicts it), the busiest pipeline stage; main term: its "
        "largest part. pp (first|last): Megatron's uneven first and last stages."
        + (" etp: the experts' own tensor parallelism (Megatron-Core's folded layout)." if experts else "")
        + " Layouts that need offload come last: the step time does not price their host traffic. Layouts equal in "
        "step time and memory but for a higher ZeRO stage are shown once, at the lowest. How the search works: "
        "docs/plan.md.",
        *(
            [
                f"MFU assumed: the GPU table lacks the link or matmul figures to predict the step time of "
                f"{report.gpu}, so it is `train`'s, at MFU {human(assumed[0].mfu, 'fraction')} (its default), the "
                "same for every such layout: they rank by the fewest options changed, after any predicted."
            ]
            if assumed
            else []
        ),
        CONVENTIONS,
    ]
    print_table(table, *notes)


def serve_rows(table: Any, layouts: list[ServePlanLayout]) -> None:
    for index, layout in enumerate(layouts, 1):
        table.add_row(
            str(index), str(layout.tp), str(layout.pp), str(layout.ep), f"{layout.replicas:,}", f"{layout.batch:,}",
            layout.weights_dtype, layout.kv_dtype, human(layout.ttft_ms, "ms"), human(layout.tpot_ms, "ms"),
            f"{layout.tokens_per_s_per_gpu:,.0f}", f"{layout.tokens_per_s_per_user:,.1f}",
            human(layout.memory_per_gpu_bytes, "bytes"),
        )  # fmt: skip


def serve_columns(table: Any) -> None:
    for header in ("#", "tp", "pp", "ep", "replicas", "batch", "weights", "KV", "TTFT", "TPOT", "tok/s/GPU",
                   "tok/s/user", "memory/GPU"):  # fmt: skip
        table.add_column(header, justify="left" if header in ("weights", "KV") else "right", no_wrap=True)
    optional_columns(table, "ep", "pp", "replicas", "KV", "weights", "tok/s/user")


def targets(report: ServePlanReport) -> str:
    limits = (("TTFT", report.ttft_ms_target), ("TPOT", report.tpot_ms_target))
    parts = [f"{name} <= {value:,g} ms" for name, value in limits if value is not None]
    return ", ".join(parts) or "no latency target"


def plan_serve_table(report: ServePlanReport, markdown: bool = False) -> None:
    report = neutral(report)
    print_answer(plan_serve_answer(report), markdown)
    title = "\n".join(
        [
            f"{report.model}: serving layouts on {report.gpus:,} x {report.gpu}, most tokens/s per GPU first",
            f"P = {report.prompt:,} prompt + G = {report.generate:,} generated tokens a sequence; {targets(report)}",
        ]
    )
    table = new_table(markdown, title=title, title_justify="left")
    serve_columns(table)
    serve_rows(table, report.layouts)
    print_table(table)
    front = new_table(markdown, title="Pareto front: tokens/s per GPU against tokens/s per user", title_justify="left")
    serve_columns(front)
    serve_rows(front, report.pareto)
    figures = (
        "TTFT, TPOT and memory: `serve`'s expected figures (not the bound). tok/s/GPU: batch / TPOT over the "
        "pp x max(tp, ep) GPUs of a replica (decode); tok/s/user: 1 / TPOT. ep > tp: ep / tp attention data-parallel "
        "ranks share the experts. How the search works: docs/plan.md."
        if report.load is None
        else f"Under load ({report.load}): TTFT and TPOT the means of each layout's simulated benchmark (`serve "
        "--concurrency/--rate`, docs/serving.md); batch the sequences a step carried, mean; tok/s/GPU its output "
        "tokens over the run over a replica's GPUs; tok/s/user (G - 1) / (E2E - TTFT); memory `serve`'s expected."
    )
    notes = [
        f"Searched {report.searched:,} layouts; {report.feasible:,} fit and meet the targets. Rejected: "
        f"{rejected_line(report.rejected)}.",
        figures,
    ]
    print_table(front, *notes)


def pareto_points(report: ServePlanReport) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """(tokens/s per user, tokens/s per GPU) of the layouts listed and of the front."""
    listed = [(layout.tokens_per_s_per_user, layout.tokens_per_s_per_gpu) for layout in report.layouts]
    front = [(layout.tokens_per_s_per_user, layout.tokens_per_s_per_gpu) for layout in report.pareto]
    return listed, front


def chart_title(report: ServePlanReport) -> str:
    from tfcost.render import plot  # the chart's module, here and below: `train`'s suggestion line needs none of it

    return f"{plot.printable(report.model)} on {report.gpus} x {plot.printable(report.gpu)}: {targets(report)}"


def terminal_chart(report: ServePlanReport, width: int | None = None, height: int = 22, color: bool = False) -> str:
    """The front (a line) over the layouts listed (points), in the terminal."""
    from tfcost.render import plot

    plt = plot.need("plotext")
    listed, front = pareto_points(report)
    plt.clf()
    plt.plotsize(width or min(plt.terminal_width() or 100, 120), height)
    plt.theme("clear")
    plt.title(chart_title(report))
    plt.xlabel(X_LABEL)
    plt.ylabel(Y_LABEL)
    if listed:
        plt.scatter([x for x, _ in listed], [y for _, y in listed], marker="dot", label="layouts listed")
    if front:
        plt.plot([x for x, _ in front], [y for _, y in front], marker="braille", label="Pareto front")
    chart = plt.build()
    plt.clf()
    return (chart if color else plt.uncolorize(chart)) + "\n"


def write_chart(report: ServePlanReport, path: str) -> Path:
    """The chart to a .png, .svg or .html file through matplotlib."""
    from tfcost.render import plot

    target = plot.check_path(path)
    report = neutral(report)
    matplotlib = plot.need("matplotlib")
    matplotlib.use("Agg")
    pyplot = plot.need("matplotlib.pyplot")
    listed, front = pareto_points(report)
    fig, ax = pyplot.subplots(figsize=(7, 4.5))
    ax.scatter([x for x, _ in listed], [y for _, y in listed], s=12, alpha=0.5, label="layouts listed")
    ax.plot([x for x, _ in front], [y for _, y in front], "o-", markersize=4, label="Pareto front")
    for layout in report.pareto:
        ax.annotate(f"tp{layout.tp} B{layout.batch} {layout.weights_dtype}", (layout.tokens_per_s_per_user,
                    layout.tokens_per_s_per_gpu), xytext=(3, 3), textcoords="offset points", fontsize=6)  # fmt: skip
    ax.set_xlabel(X_LABEL)
    ax.set_ylabel(Y_LABEL)
    ax.set_title(chart_title(report), fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    suffix = target.suffix.lower()
    from tfcost.readers.files import atomic_write

    try:  # through the one atomic writer: never a torn file, never a write through a link
        if suffix == ".html":
            svg = io.StringIO()
            fig.savefig(svg, format="svg", metadata=plot.file_metadata(".svg"))
            text = svg.getvalue()
            page = (
                '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>tfcost plan serve</title>'
                f"</head>\n<body>\n{text[text.index('<svg') :]}\n</body></html>\n"
            )
            atomic_write(target, page)
        else:
            png = {"dpi": 80, "pil_kwargs": {"optimize": True}} if suffix == ".png" else {}
            metadata = plot.file_metadata(suffix)
            atomic_write(target, lambda temporary: fig.savefig(temporary, format=suffix[1:], metadata=metadata, **png))
    except OSError as error:
        raise TfcostError(f"--plot: cannot write '{plot.printable(path)}': {error.strerror}") from None
    finally:
        pyplot.close(fig)
    return target


def print_chart(report: ServePlanReport, text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.write(f"{len(neutral(report).pareto)} layouts on the front; `-f table` lists them.\n")


def print_plan_csv(report: TrainPlanReport | ServePlanReport) -> None:
    """The layouts that fit, a row each with the model, GPU and GPU count first, the columns named as in the
    JSON's layouts (exact values: bytes and seconds unrounded); a search with none prints nothing (the error line
    says why)."""
    first = {"model": report.model, "gpu": report.gpu, "gpus": report.gpus}
    rows = [{**first, **layout} for layout in report.model_dump(mode="json")["layouts"]]
    print_csv(rows)
