"""Charts of a sweep: in the terminal (plotext) or to a file (matplotlib: PNG, SVG, or an HTML page around the SVG).

Both libraries are the optional extra `tfcost[plot]`, imported here, only when a chart is asked for. Nothing here
computes a cost: every value, level and crossover comes from the SweepReport; the axes' tick labels are printed
through tfcost.units like every other number.
"""

from __future__ import annotations

import html
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfcost.costs.crossover import Crossover
from tfcost.costs.sweep import METRICS, SweepReport, spans_decades
from tfcost.errors import TfcostError
from tfcost.render import safe_text
from tfcost.units import human

INSTALL = "pip install 'tfcost[plot]'"
X_LABEL = "T, tokens per sequence"
UNIT_NAMES = {"flops": "FLOPs", "bytes": "bytes, IEC", "count": "count", "fraction": "share", "ms": "ms"}
FILE_SUFFIXES = (".png", ".svg", ".html")
REFERENCES = {"attention_vs_6n": "6N", "kv_cache_vs_weights": "the weights", "score_matrix_vs_gpu": "GPU memory"}


def need(module: str) -> Any:
    """Import an optional plotting library, or fail in one line saying what to install. matplotlib's own log
    messages while it loads (where HOME has no writable folder for its settings and cache it logs two warnings,
    quoting the path, and makes a temporary one) are kept from stderr and said as one note of tfcost's."""
    import importlib
    import logging
    import sys

    class Kept(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.WARNING)
            self.count = 0

        def emit(self, record: logging.LogRecord) -> None:
            self.count += 1

    logger = logging.getLogger("matplotlib")
    loading = module.split(".")[0] == "matplotlib" and "matplotlib" not in sys.modules
    kept, propagates = Kept(), logger.propagate
    if loading:
        logger.addHandler(kept)
        logger.propagate = False
    try:
        return importlib.import_module(module)
    except ImportError:
        raise TfcostError(f"charts need {module.split('.')[0]}: {INSTALL}") from None
    finally:
        if loading:
            logger.removeHandler(kept)
            logger.propagate = propagates
            if kept.count:
                sys.stderr.write(
                    f"tfcost: note: matplotlib warned {kept.count} time(s) while loading, as it does when HOME has no "
                    "writable folder for its settings (set MPLCONFIGDIR to one)\n"
                )


def installed(module: str) -> bool:
    """Whether an optional plotting library imports (sweep's default chart falls back to its table without it)."""
    try:
        need(module)
    except TfcostError:
        return False
    return True


@dataclass(frozen=True)
class Line:
    label: str
    values: list[float]
    crossover: Crossover | None  # the crossover to mark on this line, if it has one


@dataclass(frozen=True)
class Panel:
    metric: str
    title: str
    y_label: str
    lines: list[Line]
    log_x: bool
    log_y: bool


def panels(report: SweepReport) -> Iterator[Panel]:
    """One chart per metric: a line per model (and batch, where the metric depends on it)."""
    several_batches = len(report.batches) > 1
    for metric in report.metrics:
        spec = METRICS[metric]
        lines = []
        for series in (s for s in report.series if s.metric == metric):
            label = f"{series.model} B={series.batch}" if spec.per_batch and several_batches else series.model
            mark = next(
                (
                    c
                    for c in report.crossovers
                    if c.name == spec.crossover
                    and c.model == series.model
                    and (c.batch == series.batch or c.name == "attention_vs_6n")
                ),
                None,
            )
            lines.append(Line(label, [float(v) for v in series.values], mark))
        everything = [v for line in lines for v in line.values]
        yield Panel(
            metric,
            spec.label,
            f"{spec.label} ({UNIT_NAMES.get(spec.unit, spec.unit)})",
            lines,
            spans_decades(report.seq_lens),
            spans_decades(everything) and spec.unit != "fraction",
        )


def binary_ticks(low: float, high: float, log: bool, count: int) -> list[float]:
    """Byte ticks a binary (IEC) label names exactly: powers of two on a log axis, multiples of a power of two on a
    linear one, at most about `count` of them. (Decimal decades labelled in IEC read 9.54 MiB for 10^7 bytes.)"""
    import math

    if log:
        first, last = math.ceil(math.log2(low)), math.floor(math.log2(high))
        stride = max(1, math.ceil((last - first + 1) / count))
        return [2.0**exponent for exponent in range(first, last + 1, stride)]
    step = 2.0 ** math.ceil(math.log2((high - low) / max(count - 1, 1)))
    return [step * k for k in range(math.ceil(low / step), math.floor(high / step) + 1)]


def ticks(values: list[float], log: bool, unit: str, count: int = 5) -> tuple[list[float], list[str]]:
    """Tick positions across the values' range (equal ratios on a log axis), labelled in the metric's unit; bytes
    at binary positions, so that their IEC labels are round (binary_ticks)."""
    low, high = min(values), max(values)
    if high <= low:
        return [low], [human(low, unit)]  # type: ignore[arg-type]
    if unit == "bytes" and (low > 0 or not log) and low >= 0:
        positions = binary_ticks(low, high, log, count)
        if len(positions) >= 2:
            return positions, [human(p, unit) for p in positions]  # type: ignore[arg-type]
    if log:
        positions = [low * (high / low) ** (i / (count - 1)) for i in range(count)]
    else:
        positions = [low + (high - low) * i / (count - 1) for i in range(count)]
    return positions, [human(p, unit) for p in positions]  # type: ignore[arg-type]


def printable(text: str) -> str:
    """A model name as the terminal chart shows it (tfcost.render.safe_text.terminal)."""
    return safe_text.terminal(text)


def contexts_in_range(report: SweepReport) -> list[tuple[str, int]]:
    """(model, its own context) for each model whose context falls inside the swept range: the region right of it
    is past the context, priced as asked but not what the model was built for."""
    return [
        (model, context)
        for model, context in zip(report.models, report.contexts, strict=True)
        if report.seq_lens[0] <= context < report.seq_lens[-1]
    ]


def crossover_note(c: Crossover) -> str:
    if c.seq_len is None:
        return f"{c.model}: {c.label}: none, {c.reason}"
    return f"{c.model}: {c.label} at T = {c.seq_len:,} (rounded down)"


# Narrower than this, plotext leaves the plotting area empty (its labels take the width): a chart wider than the
# terminal wraps, which is better than a blank one, as a table prints at its natural width.
MIN_CHART_WIDTH = 50
MARKERS = ("braille", "dot", "x", "+", "o", "*", "#", "@")  # lines stay apart without colour too


def terminal(report: SweepReport, width: int | None = None, height: int = 22, color: bool = False) -> str:
    """The sweep's charts as text: log axes where a range spans a decade or more, a line per model, the fixed
    cost each crosses as a horizontal line and the crossover marked with a vertical one."""
    plt = need("plotext")
    out = []
    xs = [float(t) for t in report.seq_lens]
    for panel in panels(report):
        plt.clf()
        plt.limitsize(False, False)  # the size asked for, not cropped to a narrow terminal
        plt.plotsize(max(width or min(plt.terminal_width() or 100, 120), MIN_CHART_WIDTH), height)
        plt.theme("clear")
        plt.title(panel.title)
        plt.xlabel(X_LABEL)
        plt.ylabel(UNIT_NAMES.get(METRICS[panel.metric].unit, ""))
        if panel.log_x:
            plt.xscale("log")
        if panel.log_y:
            plt.yscale("log")
        everything = [v for line in panel.lines for v in line.values]
        for index, line in enumerate(panel.lines):
            plt.plot(xs, line.values, label=printable(line.label), marker=MARKERS[index % len(MARKERS)])
        marks = []
        for line in panel.lines:
            c = line.crossover
            if c is not None and c.crossing is not None and xs[0] <= c.crossing <= xs[-1]:
                plt.vline(c.crossing)
                marks.append(f"| {printable(line.label)}: crossover at T = {c.seq_len:,} (the vertical line)")
                if METRICS[panel.metric].reference and min(everything) <= c.level <= max(everything):
                    plt.hline(c.level)
        for model, context in contexts_in_range(report):
            plt.vline(context)
            marks.append(f"| {printable(model)}: context {context:,} (vertical line; past it to the right)")
        step = max(1, (len(report.seq_lens) - 1) // 5)  # ticks at swept values: round ones, for doubling steps
        xt = [float(t) for t in report.seq_lens[::step]]
        plt.xticks(xt, [f"{round(x):,}" for x in xt])
        yt, yl = ticks([v for v in everything if v > 0] or everything, panel.log_y, METRICS[panel.metric].unit)
        plt.yticks(yt, yl)
        chart = plt.build()
        out.append(chart if color else plt.uncolorize(chart))
        out.extend(marks)
    plt.clf()
    return "\n".join(out) + "\n"


def figure(report: SweepReport) -> Any:
    """A matplotlib figure of the sweep, one panel per metric, the crossovers marked with dotted lines."""
    matplotlib = need("matplotlib")
    matplotlib.use("Agg")  # files only: no display needed
    pyplot = need("matplotlib.pyplot")
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    charts = list(panels(report))
    fig, axes = pyplot.subplots(len(charts), 1, figsize=(7, 3.6 * len(charts)), squeeze=False)
    for ax, panel in zip(axes[:, 0], charts, strict=True):
        unit = METRICS[panel.metric].unit
        for line in panel.lines:
            (drawn,) = ax.plot(report.seq_lens, line.values, label=safe_text.chart(line.label), linewidth=1.6)
            c = line.crossover
            if c is None or c.crossing is None or not report.seq_lens[0] <= c.crossing <= report.seq_lens[-1]:
                continue
            ax.axvline(c.crossing, color=drawn.get_color(), linestyle=":", linewidth=1)
            at = c.level if METRICS[panel.metric].reference else line.values[0]
            if METRICS[panel.metric].reference:
                ax.axhline(c.level, color=drawn.get_color(), linestyle="--", linewidth=0.8)
                ax.plot([c.crossing], [c.level], "o", color=drawn.get_color(), markersize=4)
            ax.annotate(
                f"T = {c.seq_len:,}",
                (c.crossing, at),
                xytext=(4, -10),
                textcoords="offset points",
                fontsize=7,
                color=drawn.get_color(),
            )
        for model, context in contexts_in_range(report):
            ax.axvspan(context, report.seq_lens[-1], color="grey", alpha=0.08, linewidth=0)
            ax.annotate(
                f"past {model}'s context ({context:,})", (context, 0.97), xycoords=("data", "axes fraction"),
                xytext=(4, 0), textcoords="offset points", fontsize=7, va="top", color="grey",
            )  # fmt: skip
        if panel.log_x:
            ax.set_xscale("log")
        if panel.log_y:
            ax.set_yscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _, unit=unit: human(v, unit)))
        if unit == "bytes":  # matplotlib's decimal decades would read 9.54 MiB: ticks where IEC labels are round
            values = [v for line in panel.lines for v in line.values if v > 0]
            if values:
                ax.yaxis.set_major_locator(FixedLocator(ticks(values, panel.log_y, unit, count=6)[0]))
                ax.yaxis.set_minor_locator(NullLocator())
        ax.set_xlabel(X_LABEL)
        ax.set_ylabel(panel.y_label, fontsize=8)
        crossed = METRICS[panel.metric].crossover
        legend = ""
        if crossed is not None:
            fixed = f"dashed: {REFERENCES[crossed]}; " if METRICS[panel.metric].reference else ""
            legend = f"\n({fixed}dotted: the crossover)"
        ax.set_title(panel.title + legend, fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def check_path(path: str) -> Path:
    """The file --plot names, refused before any work (and before any table is printed) when its kind is not one
    tfcost writes, its folder is missing or cannot be written, it is a folder, or matplotlib is not installed."""
    import os

    target = Path(path)
    shown = printable(path)
    if target.suffix.lower() not in FILE_SUFFIXES:
        raise TfcostError(f"--plot: '{shown}' should end in {', '.join(FILE_SUFFIXES)}")
    folder = target.parent
    if not folder.is_dir():
        raise TfcostError(f"--plot: '{shown}': no folder {printable(str(folder))}")
    if target.is_dir() or (target.exists() and not target.is_file()):
        raise TfcostError(f"--plot: '{shown}' is not a regular file")
    if not os.access(folder, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise TfcostError(f"--plot: cannot write '{shown}': permission denied")
    need("matplotlib")
    return target


def write(report: SweepReport, path: str) -> Path:
    """Write the chart to `path`: .png or .svg through matplotlib, .html as a page holding the SVG inline."""
    import warnings

    target = check_path(path)
    suffix = target.suffix.lower()
    # matplotlib's warnings (a glyph its font lacks, quoting the name) are counted, never printed raw.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig = figure(report)
        save(fig, report, target, suffix, path)
    if caught:
        import sys

        kinds = sorted(
            {type(item.message).__name__ if not isinstance(item.message, str) else "warning" for item in caught}
        )
        sys.stderr.write(
            f"tfcost: note: matplotlib warned {len(caught)} time(s) ({', '.join(kinds)}) drawing the chart; "
            "a name may hold characters its font lacks\n"
        )
    return target


def save(fig: Any, report: SweepReport, target: Path, suffix: str, path: str) -> None:
    """The figure written as `suffix` says, through the one atomic writer (tfcost.readers.files.atomic_write)."""
    from tfcost.readers.files import atomic_write

    try:
        if suffix == ".html":
            svg = io.StringIO()
            fig.savefig(svg, format="svg")
            text = svg.getvalue()
            body = text[text.index("<svg") :]  # drop the XML prolog and doctype: the page is HTML
            notes = "".join(f"<li>{html.escape(printable(crossover_note(c)))}</li>" for c in report.crossovers)
            page = (
                '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>tfcost sweep</title></head>\n'
                f"<body>\n<h1>tfcost sweep: {html.escape(printable(', '.join(report.models)))}</h1>\n{body}\n"
                f"<h2>Crossovers</h2><ul>{notes}</ul>\n</body></html>\n"
            )
            atomic_write(target, page)
        else:
            png = {"dpi": 80, "pil_kwargs": {"optimize": True}} if suffix == ".png" else {}
            metadata = file_metadata(suffix)
            atomic_write(target, lambda temporary: fig.savefig(temporary, format=suffix[1:], metadata=metadata, **png))
    except OSError as error:
        raise TfcostError(f"--plot: cannot write '{printable(path)}': {error.strerror}") from None
    finally:
        need("matplotlib.pyplot").close(fig)


def file_metadata(suffix: str) -> dict[str, Any]:
    """No creation date or software version in the file, so the same sweep always writes the same bytes."""
    return {"Software": None} if suffix == ".png" else {"Date": None, "Creator": None}
