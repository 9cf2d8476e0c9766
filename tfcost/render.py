"""The one place results become text: rich tables for people, JSON for scripts. The only module importing rich.

Nothing here computes: every number comes from a result object of the core, and each is printed through
tfcost.units in its labelled unit (SI for counts and FLOPs, IEC for bytes).
"""

from __future__ import annotations

import contextlib
import csv
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from tfcost import __version__
from tfcost.errors import TfcostError
from tfcost.report import SECTIONS, SERVE_SECTIONS, TRAIN_SECTIONS, Estimate, ServeReport, TrainReport
from tfcost.schema import GpuSpec, ModelShape
from tfcost.units import Unit, human

if TYPE_CHECKING:  # imported where used: only `measure` needs its report classes built
    from tfcost.engine_report import CheckReport, EngineEstimate
    from tfcost.measure_report import Measurement, MeasureReport

CONVENTIONS = (
    "FLOPs are 2*m*k*n per matmul (not MACs). Counts and FLOPs in SI units (G = 10^9), bytes in IEC units "
    "(MiB = 2^20 B); --format json gives exact integers."
)


def console(width: int | None = None) -> Any:
    from rich.console import Console

    # No markup or emoji codes: model names and sources come from users' files and print exactly as written.
    return Console(file=sys.stdout, highlight=False, soft_wrap=False, markup=False, emoji=False, width=width)


def print_table(table: Any, *notes: str) -> None:
    """Print a table at its natural width, wider than the terminal if need be (a crushed table wraps or crops its
    numbers, which is worse than a long line), then each note."""
    # A table that does not expand is laid out at min(natural width, console width): an unbounded console gives
    # the natural width in one layout pass, where measuring first would lay it out twice.
    console(width=1 << 16).print(table)
    out = console()
    for note in notes:
        out.print(note)


def add_section(table: Any, heading: str, rows: Sequence[Sequence[str]]) -> None:
    """A bold heading over `rows`, added as ONE table row whose cells hold a line per quantity.

    rich's cost is per cell, so a row per quantity made a 13-model comparison spend 80 ms in rendering; stacked
    lines look the same and take a quarter of that. Columns must not wrap (no_wrap=True) so the lines stay aligned.
    """
    from rich.text import Text

    first = Text(heading, style="bold")
    first.append("".join(f"\n{row[0]}" for row in rows))
    others = ["".join(f"\n{row[column]}" for row in rows) for column in range(1, len(table.columns))]
    table.add_row(first, *others)


def quantity_rows(
    result: BaseModel, prefix: str = "", breakdowns: bool = True
) -> Iterator[tuple[str, str, Unit, int | None]]:
    """(key, label, unit, value) for each reported number of a section; a breakdown is a heading (value None)
    followed by its items, indented, or left out when `breakdowns` is false."""
    for name, field in type(result).model_fields.items():
        extra = field.json_schema_extra
        if not isinstance(extra, dict):
            continue
        unit: Unit = extra["unit"]  # type: ignore[assignment]
        value = getattr(result, name)
        if value is None:  # an optional quantity not asked for (a cost without a price)
            continue
        if isinstance(value, dict):
            if not breakdowns:
                continue
            yield f"{prefix}{name}", f"{field.description}:", unit, None
            for item, amount in value.items():
                yield f"{prefix}{name}.{item}", f"  {item}", unit, amount
        else:
            yield f"{prefix}{name}", field.description or name, unit, value


def workload_caption(result: Estimate | EngineEstimate | CheckReport) -> str:
    w = result.workload
    mask = "causal-masked scores" if w.causal else "full T x T scores"
    return f"T = {w.seq_len:,} tokens, batch {w.batch:,}, {w.dtype}, {mask}"


def estimate_table(result: Estimate | EngineEstimate) -> None:
    from tfcost.engine_report import ENGINE_NOTE, ENGINE_SECTIONS, EngineEstimate

    notes = [f"source: {result.source}"] if result.source else []
    if isinstance(result, EngineEstimate):
        sections_table(result, ENGINE_SECTIONS, f"{result.model}: {workload_caption(result)}", [*notes, ENGINE_NOTE])
    else:
        sections_table(result, SECTIONS, f"{result.model}: {workload_caption(result)}", [*notes, CONVENTIONS])


def check_table(result: CheckReport) -> None:
    """Per quantity: tfcost's value, transformers', and the difference; the verdict under it."""
    from rich.table import Table

    table = Table(title=f"{result.model}: tfcost vs transformers", title_justify="left")
    for name, justify in (("quantity", "left"), ("tfcost (analytic)", "right"), ("transformers", "right")):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    table.add_column("difference", justify="right", no_wrap=True)
    for row in result.rows:
        difference = "0" if row.difference == 0 else f"{row.difference:+,}"
        table.add_row(row.quantity, exact(row.analytic), exact(row.transformers), difference)
    verdict = "agree on every quantity" if result.agree else "DIFFER (transformers minus tfcost shown)"
    notes = [f"source: {result.source}"] if result.source else []
    print_table(table, workload_caption(result), *notes, f"the two engines {verdict}", CONVENTIONS)


def compare_table(results: Sequence[Estimate | EngineEstimate], breakdowns: bool = False) -> None:
    """Models as columns. The per-part breakdowns are left out unless asked for: with many models they are
    most of the table and little of the comparison."""
    from rich.table import Table

    table = Table(title=workload_caption(results[0]), title_justify="left")
    table.add_column("quantity", no_wrap=True)
    for result in results:
        table.add_column(result.model, justify="right", no_wrap=True)
    for section, title in SECTIONS.items():
        table.add_section()
        columns = [
            {
                key: (label, unit, value)
                for key, label, unit, value in section_rows(getattr(r, section, None), breakdowns)
            }
            for r in results
        ]
        keys = list(dict.fromkeys(key for column in columns for key in column))
        rows = []
        for key in keys:
            label = next(column[key][0] for column in columns if key in column)
            cells = []
            for column in columns:
                if key not in column:
                    cells.append("-")
                else:
                    _, unit, value = column[key]
                    cells.append("" if value is None else human(value, unit))
            rows.append([label, *cells])
        add_section(table, title, rows)
    notes = [CONVENTIONS] if breakdowns else ["Per-part breakdowns: --breakdown.", CONVENTIONS]
    engines = sorted({result.model for result in results if result.engine == "transformers"})
    if engines:
        notes.append(f"Answered by the transformers engine (meta device, FlopCounterMode): {', '.join(engines)}.")
    print_table(table, *notes)


def section_rows(section: BaseModel | None, breakdowns: bool) -> Iterator[tuple[str, str, Unit, int | None]]:
    """A section's rows, or none where a result lacks the section (the transformers engine has no score matrix)."""
    return quantity_rows(section, breakdowns=breakdowns) if section is not None else iter(())


def models_table(models: Sequence[ModelShape], totals: Sequence[int]) -> None:
    from rich.table import Table

    table = Table(title="model presets", title_justify="left")
    for name, justify in (
        ("name", "left"),
        ("parameters", "right"),
        ("layers", "right"),
        ("d_model", "right"),
        ("heads (kv)", "right"),
        ("context", "right"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for model, total in zip(models, totals, strict=True):
        table.add_row(
            model.name,
            human(total, "count"),
            str(model.n_layers),
            str(model.d_model),
            f"{model.n_heads} ({model.n_kv_heads})",
            f"{model.max_seq_len:,}",
        )
    print_table(table)


def gpus_table(gpus: Sequence[GpuSpec]) -> None:
    from rich.table import Table

    table = Table(title="GPU spec table (dense peaks, without sparsity)", title_justify="left")
    for name in ("name", "BF16/FP16 TFLOP/s", "FP8 TFLOP/s", "FP32 TFLOP/s", "memory", "bandwidth"):
        table.add_column(name, justify="left" if name == "name" else "right")

    def tflops(value: float | None) -> str:
        return "-" if value is None else f"{value:g}"

    for gpu in gpus:
        table.add_row(
            gpu.name,
            tflops(gpu.peak_bf16_tflops),
            tflops(gpu.peak_fp8_tflops),
            tflops(gpu.peak_fp32_tflops),
            f"{gpu.memory_gib:g} GiB",
            f"{gpu.memory_bandwidth_tb_per_s:g} TB/s",
        )
    print_table(table, "'-': no verified figure. Sources and caveats: `tfcost gpus --format json`.")


def exact(value: float | str) -> str:
    """The 'exact' column: integers in full, other numbers to four decimals, words left to the value column."""
    if isinstance(value, bool | str):
        return ""
    if isinstance(value, int) or value.is_integer():
        return f"{int(value):,}"
    return f"{value:,.4f}"


def sections_table(result: BaseModel, sections: dict[str, str], title: str, notes: Sequence[str]) -> None:
    """A quantity/value/exact table with one block per section ("" names the result's own quantities), then the
    notes a reader needs to check it."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("quantity", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("exact", justify="right", no_wrap=True)
    for attribute, heading in sections.items():
        table.add_section()
        rows = [
            [label, "", ""] if value is None else [label, human(value, unit), exact(value)]
            for _, label, unit, value in quantity_rows(getattr(result, attribute) if attribute else result)
        ]
        add_section(table, heading, rows)
    print_table(table, *notes)


def default(setup: BaseModel, field: str) -> Any:
    """A setup field's default, so that the report can say when the user's value is it."""
    return type(setup).model_fields[field].default


def train_table(result: TrainReport) -> None:
    from tfcost.training import CHINCHILLA_TOKENS_PER_PARAM, DEFAULT_SEQ_LEN

    s = result.setup
    chinchilla = f" (Chinchilla-optimal: {CHINCHILLA_TOKENS_PER_PARAM} per parameter, the default)"
    tokens = chinchilla if result.tokens_are_chinchilla_optimal else ""
    seq = f" (the default: {DEFAULT_SEQ_LEN:,}, or the model's context if shorter)" if result.seq_len_is_default else ""
    mfu = " (the default)" if s.mfu == default(s, "mfu") else ""
    title = "\n".join(
        [
            f"{result.model}: training on {s.gpus:,} x {result.gpu}",
            f"D = {human(s.tokens, 'count')} tokens{tokens}",
            f"T = {s.seq_len:,} tokens per sequence{seq}; micro-batch {s.micro_batch}",
            f"{s.gpus:,} GPUs = {result.inputs.data_parallel:,} data-parallel x tp {s.tp} x pp {s.pp}; ZeRO-{s.zero}; "
            f"{s.optimizer}, {s.precision}",
            f"recompute {s.recompute}; {'sequence parallel; ' if s.sequence_parallel else ''}"
            f"{'flash attention' if s.flash else 'no flash attention'}; MFU {s.mfu:g}{mfu}",
        ]
    )
    notes = [
        "Model FLOPs: matmuls only, 2*m*k*n each, full T x T scores (the MFU convention); backward = 2 x forward.",
        "Memory per GPU: ZeRO Fig. 1 for model states, Korthikanti et al. 2022 for activations. "
        "Every formula: README, 'tfcost train'.",
        CONVENTIONS,
    ]
    sections_table(result, TRAIN_SECTIONS, title, notes)


def serve_table(result: ServeReport) -> None:
    s = result.setup
    title = "\n".join(
        [
            f"{result.model}: serving on {s.gpus} x {result.gpu} (tensor parallel)",
            f"B = {s.batch:,} sequences, P = {s.prompt:,} prompt + G = {s.generate:,} generated tokens each",
            f"weights {s.weights_dtype}, KV cache {s.kv_dtype}, matmuls at the {result.compute_dtype} peak",
            f"reserve {s.reserve:.0%}, compute efficiency {s.compute_efficiency:g}, "
            f"memory efficiency {s.memory_efficiency:g}",
        ]
    )
    notes = [
        "Roofline: time = max(FLOPs / reachable peak, bytes / reachable bandwidth), per GPU; the larger term names "
        "the bound. Tensor-parallel communication and activations are not modelled (the reserve covers them).",
        f"Defaults: reserve {default(s, 'reserve'):.0%} (vLLM's gpu_memory_utilization 0.9); compute and memory "
        f"efficiency {default(s, 'compute_efficiency'):g} and {default(s, 'memory_efficiency'):g} (llm-analysis "
        "README: up to 0.7 for inference, 0.9 an aggressive memory target). Every formula: README, 'tfcost serve'.",
        CONVENTIONS,
    ]
    sections_table(result, SERVE_SECTIONS, title, notes)


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


def measure_table(report: MeasureReport) -> None:
    from rich.box import SIMPLE_HEAD
    from rich.table import Table

    from tfcost.measure_report import Measurement

    first = report.measurements[0]
    mask = "causal" if first.causal else "full"
    shape = f"B={first.batch}, H={first.heads} (kv {first.kv_heads}), Q={first.head_dim}, {first.dtype}, {mask}"
    where = report.device_name + (f" [{report.gpu}]" if report.gpu else "")
    table = Table(
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


def print_csv(rows: Sequence[dict[str, Any]]) -> None:
    """One header line, then a line per row; null is an empty cell, booleans are JSON's true and false."""
    writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: json.dumps(value) if isinstance(value, bool) else value for key, value in row.items()})


def measure_csv(report: MeasureReport) -> None:
    """A row per measurement, each carrying the device, GPU and torch version so a saved file stands alone."""
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


def print_json(payload: BaseModel | Sequence[BaseModel]) -> None:
    """Exact integers, with the tool's version so a saved file says what produced it."""
    if isinstance(payload, BaseModel):
        document: Any = {"tfcost_version": __version__, **payload.model_dump(mode="json")}
    else:
        document = {"tfcost_version": __version__, "results": [item.model_dump(mode="json") for item in payload]}
    try:
        text = json.dumps(document, indent=2, allow_nan=False)
    except ValueError:  # an extreme option (an efficiency of 1e-320) overflowed a float result to infinity
        raise TfcostError("a result is not a finite number, which JSON cannot hold; is an option extreme?") from None
    sys.stdout.write(text + "\n")


def print_preset_yaml(shape: ModelShape) -> None:
    """A model as a preset file: every field that differs from its default, in schema order."""
    import yaml

    class PresetDumper(yaml.SafeDumper):
        """Mappings as blocks, lists of layer indices on one line, as the shipped presets are written."""

    PresetDumper.add_representer(
        list, lambda dumper, items: dumper.represent_sequence("tag:yaml.org,2002:seq", items, flow_style=True)
    )
    document = shape.model_dump(mode="json", exclude_defaults=True)
    sys.stdout.write(yaml.dump(document, Dumper=PresetDumper, sort_keys=False, default_flow_style=False, width=120))


def print_error(message: str) -> None:
    """One line on stderr, whatever the message quotes (a key or a name may hold a newline): characters that would
    not print as themselves are written as escapes. No rich here, so that an error can never fail to print."""
    line = "".join(char if char.isprintable() else repr(char)[1:-1] for char in message)
    sys.stderr.write(f"tfcost: error: {line}\n")
