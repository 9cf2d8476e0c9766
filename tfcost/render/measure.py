"""`tfcost measure`: measured attention timings, the machine's roofline and a real step; its progress bar."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from tfcost.render.common import neutral, print_csv, print_plain_json
from tfcost.render.layout import new_table, optional_columns, print_table
from tfcost.units import Unit, human

if TYPE_CHECKING:
    from tfcost.reports.measure import Measurement, MeasureReport


# The table's numbers; --format json and csv add bytes moved, bandwidth and the roofline time.
MEASURE_COLUMNS = [
    "median_ms",
    "flops",
    "tflops_per_s",
    "peak_fraction",
    "roofline_ratio",
    "peak_memory_bytes",
    "peak_memory_estimate_bytes",
]


def measured_cell(row: Measurement, name: str) -> str:
    """A measured field in its labelled unit; '-' where there is no value (not run, or no GPU spec)."""
    value = getattr(row, name)
    extra = type(row).model_fields[name].json_schema_extra
    unit: Unit = extra["unit"] if isinstance(extra, dict) else "count"  # type: ignore[assignment]
    return "-" if value is None else human(value, unit)


def measure_table(report: MeasureReport, markdown: bool = False) -> None:
    from rich.box import SIMPLE_HEAD

    from tfcost.reports.measure import Measurement

    report = neutral(report)
    first = report.measurements[0]
    mask = "causal" if first.causal else "full"
    shape = f"B={first.batch}, H={first.heads} (kv {first.kv_heads}), Q={first.head_dim}, {first.dtype}, {mask}"
    where = report.device_name + (f" [{report.gpu}]" if report.gpu else "")
    table = new_table(
        markdown,
        title=f"{report.model or 'attention'}: {shape} on {where}",
        title_justify="left",
        box=SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("T", justify="right", no_wrap=True)
    table.add_column("pass", no_wrap=True)
    table.add_column("backend", no_wrap=True)
    for name in MEASURE_COLUMNS:
        table.add_column(Measurement.model_fields[name].description or name, justify="right", no_wrap=True)
        if name == "median_ms":
            table.add_column("p10-p90 ms", justify="right", no_wrap=True)
    names = {name: Measurement.model_fields[name].description or name for name in MEASURE_COLUMNS}
    optional_columns(table, names["roofline_ratio"], names["peak_fraction"], names["peak_memory_estimate_bytes"],
                     "p10-p90 ms", names["peak_memory_bytes"], "backend")  # fmt: skip
    reasons: dict[str, list[str]] = {}  # one footnote per distinct reason, naming the backends it stopped
    for row in report.measurements:
        backend = row.backend if row.backend_ran in (None, row.backend) else f"{row.backend}>{row.backend_ran}"
        cells = [measured_cell(row, name) for name in MEASURE_COLUMNS]
        spread = "-" if row.p10_ms is None else f"{measured_cell(row, 'p10_ms')}-{measured_cell(row, 'p90_ms')}"
        cells.insert(1, spread)
        if row.status != "ok":
            who = reasons.setdefault(row.reason or row.status, [])
            who.extend([] if row.backend in who else [row.backend])
            cells[:2] = [row.status, f"[{list(reasons).index(row.reason or row.status) + 1}]"]
        cells = [f"{row.seq:,}", "fwd" if row.direction == "forward" else "fwd+bwd", backend, *cells]
        table.add_row(*cells)
    problems = [f"[{n}] {', '.join(who)}: {reason}" for n, (reason, who) in enumerate(reasons.items(), 1)]
    # torch's words may hold brackets ("[enforce fail at alloc_cpu.cpp:127]"): the console reads no markup.
    print_table(
        table,
        *problems,
        *report.notes,
        f"FLOPs: {report.flop_convention}.",
        f"Bytes: {report.bytes_convention}.",
        f"Memory: {report.memory_convention}.",
        f"Timing: {report.timing}. torch {report.torch_version}.",
        "--format json or csv adds the bytes moved, the achieved bandwidth and the roofline time.",
    )


def warn_noisy(report: MeasureReport) -> None:
    """A `tfcost: warning:` line on stderr when the repeats of some measurement spread too wide to trust."""
    from tfcost.reports.measure import NOISY_SPREAD, noisiest

    found = noisiest(report)
    if found is None:
        return
    row, value = found
    where = f"T={row.seq:,} ({row.backend}, {row.direction})"
    sys.stderr.write(
        f"tfcost: warning: timings are noisy: p90/p10 = {value:.1f}x at {where}, above {NOISY_SPREAD}x; this "
        "machine is too busy for the medians (and the ratios) to be trusted: stop other work, or raise --repeats\n"
    )


def roofline_rows(profile: dict[str, Any]) -> list[tuple[str, str, str, Any]]:
    """(part, item, quantity, value) of a --roofline profile: the machine's rates, each matmul and attention run."""
    rows: list[tuple[str, str, str, Any]] = [
        ("roofline", "device", "device_name", profile["device_name"]),
        ("roofline", "device", "memory_bytes", profile["memory_bytes"]),
        ("roofline", "copy", "bytes_per_s", profile["copy_bytes_per_s"]),
        ("roofline", "tiny kernel", "us", profile["tiny_kernel_us"]),
        ("roofline", "tiny matmul", "us", profile["tiny_matmul_us"]),
        ("roofline", "kernels per layer", "count", profile["kernels_per_layer"]),
    ]
    for run in profile["matmuls"]:
        item = f"matmul {run['kind']} {run['m']}x{run['k']}x{run['n']} x{run['count']} {run['dtype']}"
        rows += [("roofline", item, key, run[key]) for key in ("median_ms", "flops_per_s", "bytes_per_s")]
    for run in profile["attentions"]:
        item = f"attention H={run['heads']} T={run['seq']} Q={run['head_dim']} {run['dtype']}"
        rows += [("roofline", item, key, run[key]) for key in ("median_ms", "flops_per_s")]
    return rows


def step_rows(step: dict[str, Any]) -> list[tuple[str, str, str, Any]]:
    """(part, item, quantity, value) of a --step report: each phase's measured, bound and expected times."""
    return [
        ("step", phase, key, step[phase][key])
        for phase in ("prefill", "decode")
        for key in ("measured_ms", "bound_ms", "expected_ms", "expected_over_measured")
    ]


MACHINE_CSV_FIELDS = ("part", "item", "quantity", "value")


def print_machine(payload: dict[str, Any], output: str) -> None:
    """measure --roofline/--step in the format asked: JSON as before; CSV a row per measured quantity; a table
    (or Markdown) per part."""
    if output == "json":
        print_plain_json(payload)
        return
    payload = neutral(payload)
    rows = roofline_rows(payload["roofline"]) if "roofline" in payload else []
    rows += step_rows(payload["step"]) if "step" in payload else []
    if output == "csv":
        print_csv([dict(zip(MACHINE_CSV_FIELDS, row, strict=True)) for row in rows], MACHINE_CSV_FIELDS)
        return
    markdown = output == "markdown"
    if "roofline" in payload:
        profile = payload["roofline"]
        title = f"Roofline of {profile['device_name']} ({profile['dtype']})"
        table = new_table(markdown, title=title, title_justify="left")
        for name in ("run", "median ms", "compute", "bandwidth"):
            table.add_column(name, justify="left" if name == "run" else "right")
        table.add_row("copy (read + write)", "", "", human(profile["copy_bytes_per_s"], "bytes_per_s"))
        table.add_row(f"tiny kernel: {human(profile['tiny_kernel_us'], 'count')} us each", "", "", "")
        for run in profile["matmuls"]:
            table.add_row(
                f"matmul {run['kind']} {run['m']}x{run['k']}x{run['n']} x{run['count']} {run['dtype']}",
                human(run["median_ms"], "kernel_ms"),
                human(run["flops_per_s"], "flops_per_s"),
                human(run["bytes_per_s"], "bytes_per_s"),
            )
        for run in profile["attentions"]:
            table.add_row(
                f"attention H={run['heads']} T={run['seq']:,} Q={run['head_dim']} {run['dtype']}",
                human(run["median_ms"], "kernel_ms"),
                human(run["flops_per_s"], "flops_per_s"),
                "",
            )
        print_table(table, f"torch {profile['torch_version']}; every run's exact figures: --format json or csv.")
    if "step" in payload:
        step = payload["step"]
        title = f"{step['model']}: a real step on {step['device_name']}"
        table = new_table(markdown, title=title, title_justify="left")
        for name in ("phase", "measured ms", "bound ms", "expected ms", "expected / measured"):
            table.add_column(name, justify="left" if name == "phase" else "right")
        for phase in ("prefill", "decode"):
            times = step[phase]
            table.add_row(
                phase,
                *(human(times[key], "kernel_ms") for key in ("measured_ms", "bound_ms", "expected_ms")),
                human(times["expected_over_measured"], "ratio"),
            )
        print_table(table, *step["notes"], f"Timing: {step['timing']}. Profile: {step['profile']}.")
    if "saved" in payload:
        sys.stdout.write(f"\nSaved the profile to {payload['saved']}\n")


def measure_csv(report: MeasureReport) -> None:
    """A row per measurement, each carrying the device, GPU and torch version so a saved file stands alone."""
    report = neutral(report)
    context = {"device": report.device, "gpu": report.gpu, "torch_version": report.torch_version}
    print_csv([{**context, **row.model_dump(mode="json")} for row in report.measurements])


@contextlib.contextmanager
def progress(total: int) -> Iterator[Callable[[str], None]]:
    """A progress bar on stderr (never stdout, which may carry JSON or CSV), shown only on a terminal."""
    from rich.console import Console
    from rich.progress import Progress

    err = Console(file=sys.stderr)
    with Progress(console=err, transient=True, disable=not err.is_terminal) as bar:
        task = bar.add_task("measuring", total=total)
        started = 0

        def begin(label: str) -> None:
            """Name the step starting now; the steps before it are done."""
            nonlocal started
            bar.update(task, completed=started, description=label)
            started += 1

        yield begin
        bar.update(task, completed=total)
