"""The command line: parse, call the core, hand the result to rendering. No arithmetic lives here."""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from tfcost import __version__
from tfcost.errors import TfcostError

if TYPE_CHECKING:
    from tfcost.schema import AttentionShape

app = typer.Typer(
    name="tfcost",
    help="What a transformer costs: parameters, FLOPs, KV cache and attention memory, from model presets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


class OutputFormat(StrEnum):
    table = "table"
    json = "json"


class DtypeChoice(StrEnum):
    fp32 = "fp32"
    fp16 = "fp16"
    bf16 = "bf16"
    fp8 = "fp8"
    int8 = "int8"


def show_version(value: bool) -> None:
    if value:
        print(f"tfcost {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", callback=show_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """What a transformer costs: parameters, FLOPs, KV cache and attention memory, from model presets."""


Seq = Annotated[int, typer.Option("--seq", "-T", min=1, help="T: tokens per sequence.")]
Batch = Annotated[int, typer.Option("--batch", "-B", min=1, help="B: sequences in the batch.")]
DtypeOption = Annotated[DtypeChoice, typer.Option("--dtype", help="Storage dtype of the KV cache and score matrix.")]
Causal = Annotated[
    bool, typer.Option("--causal/--full", help="Count only the T(T+1)/2 unmasked score entries in FLOPs.")
]
FormatOption = Annotated[OutputFormat, typer.Option("--format", "-f", help="table for people, json for scripts.")]


@app.command("list")
def list_presets() -> None:
    """List the built-in model presets with their size."""
    from tfcost.params import total_params
    from tfcost.presets import all_models
    from tfcost.render import models_table

    models = all_models()
    models_table(models, [total_params(model) for model in models])


@app.command()
def gpus(output: FormatOption = OutputFormat.table) -> None:
    """List the GPU spec table: dense peaks, memory and bandwidth, with sources."""
    from tfcost import render
    from tfcost.presets import all_gpus

    table = all_gpus()
    if output is OutputFormat.json:
        render.print_json(table)
    else:
        render.gpus_table(table)


@app.command()
def estimate(
    model: Annotated[str, typer.Argument(help="A preset name (see `tfcost list`) or a path to a YAML file.")],
    seq: Seq = 1024,
    batch: Batch = 1,
    dtype: DtypeOption = DtypeChoice.bf16,
    causal: Causal = False,
    output: FormatOption = OutputFormat.table,
) -> None:
    """Parameters, FLOPs, KV cache and score-matrix size of one model."""
    from tfcost import render
    from tfcost.presets import load_model
    from tfcost.report import estimate as run_estimate
    from tfcost.schema import Workload

    workload = Workload(seq_len=seq, batch=batch, dtype=dtype.value, causal=causal)
    result = run_estimate(load_model(model), workload)
    if output is OutputFormat.json:
        render.print_json(result)
    else:
        render.estimate_table(result)


@app.command()
def compare(
    models: Annotated[list[str], typer.Argument(help="Two or more preset names or YAML paths.")],
    seq: Seq = 1024,
    batch: Batch = 1,
    dtype: DtypeOption = DtypeChoice.bf16,
    causal: Causal = False,
    output: FormatOption = OutputFormat.table,
) -> None:
    """The same quantities for several models, side by side."""
    from tfcost import render
    from tfcost.presets import load_model
    from tfcost.report import estimate as run_estimate
    from tfcost.schema import Workload

    workload = Workload(seq_len=seq, batch=batch, dtype=dtype.value, causal=causal)
    results = [run_estimate(load_model(model), workload) for model in models]
    if output is OutputFormat.json:
        render.print_json(results)
    else:
        render.compare_table(results)


class MeasureFormat(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


class MeasureDtypeChoice(StrEnum):
    bf16 = "bf16"
    fp16 = "fp16"
    fp32 = "fp32"


class BackendChoice(StrEnum):
    auto = "auto"
    flash = "flash"
    efficient = "efficient"
    cudnn = "cudnn"
    math = "math"
    all = "all"


class DeviceChoice(StrEnum):
    auto = "auto"
    cuda = "cuda"
    cpu = "cpu"


def parse_seq_list(text: str) -> list[int]:
    """'1024,2048' -> [1024, 2048]; anything else is a usage error naming --seq."""
    from tfcost.errors import UsageError

    items = [item.strip() for item in text.split(",")]
    if not all(item.isdigit() and int(item) > 0 for item in items):
        raise UsageError(f"--seq: expected positive integers separated by commas, got '{text}'")
    return list(dict.fromkeys(int(item) for item in items))


def attention_shape(model: str | None, heads: int | None, kv_heads: int | None, head_dim: int | None) -> AttentionShape:
    """The shape to time: the model preset's, with any of --heads/--kv-heads/--head-dim overriding it."""
    from pydantic import ValidationError

    from tfcost.errors import UsageError, describe_validation_error
    from tfcost.presets import load_model
    from tfcost.schema import AttentionShape

    if model is None and (heads is None or head_dim is None):
        raise UsageError("give a MODEL preset, or the shape with --heads and --head-dim (and --kv-heads for GQA)")
    base = load_model(model) if model else None
    heads = heads or (base.n_heads if base else None)
    chosen = {
        "heads": heads,
        "kv_heads": kv_heads or (base.n_kv_heads if base and heads == base.n_heads else heads),
        "head_dim": head_dim or (base.head_dim if base else None),
    }
    try:
        return AttentionShape(**chosen)
    except ValidationError as error:
        raise UsageError(describe_validation_error(error)) from None


@app.command()
def measure(
    model: Annotated[
        str | None, typer.Argument(help="A preset or YAML path giving the attention shape; or use --heads.")
    ] = None,
    seq: Annotated[str, typer.Option("--seq", "-T", help="Sequence lengths, comma-separated.")] = "1024,2048,4096",
    batch: Batch = 1,
    dtype: Annotated[MeasureDtypeChoice, typer.Option("--dtype", help="Element type of Q, K, V.")] = (
        MeasureDtypeChoice.bf16
    ),
    causal: Annotated[
        bool, typer.Option("--causal/--no-causal", help="Causal mask (equal query and key lengths).")
    ] = False,
    backward: Annotated[bool, typer.Option("--backward", help="Time forward+backward too.")] = False,
    backend: Annotated[BackendChoice, typer.Option("--backend", help="SDPA backend to force; all: each.")] = (
        BackendChoice.auto
    ),
    device: Annotated[DeviceChoice, typer.Option("--device", help="auto: CUDA if torch sees one.")] = (
        DeviceChoice.auto
    ),
    repeats: Annotated[
        int | None, typer.Option("--repeats", min=1, help="Timed repetitions [default: 30 on CUDA, 10 on CPU].")
    ] = None,
    gpu: Annotated[
        str | None, typer.Option("--gpu", help="GPU spec to compare with (see `tfcost gpus`) [default: detected].")
    ] = None,
    heads: Annotated[int | None, typer.Option("--heads", min=1, help="Query heads (overrides the model).")] = None,
    kv_heads: Annotated[
        int | None,
        typer.Option("--kv-heads", min=1, help="Key-value heads [default: --heads if given, else the model's]."),
    ] = None,
    head_dim: Annotated[int | None, typer.Option("--head-dim", min=1, help="Head dimension.")] = None,
    output: Annotated[MeasureFormat, typer.Option("--format", "-f", help="table, json or csv.")] = (
        MeasureFormat.table
    ),
) -> None:
    """Time torch's scaled_dot_product_attention here and set it beside the estimate (needs tfcost[measure])."""
    from tfcost import render

    shape = attention_shape(model, heads, kv_heads, head_dim)
    seqs = parse_seq_list(seq)
    from tfcost import measure as measure_module  # torch is imported here, and only here

    report = measure_module.run(
        model=model,
        shape=shape,
        seqs=seqs,
        batch=batch,
        dtype=dtype.value,
        causal=causal,
        backward=backward,
        backends=measure_module.BACKEND_CHOICES if backend is BackendChoice.all else [backend.value],
        device=device.value,
        repeats=repeats,
        gpu=gpu,
        progress=render.progress,
    )
    if output is MeasureFormat.json:
        render.print_json(report)
    elif output is MeasureFormat.csv:
        render.measure_csv(report)
    else:
        render.measure_table(report)


def fail(message: str, exit_code: int) -> NoReturn:
    from tfcost.render import print_error

    print_error(message)
    sys.exit(exit_code)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app, turning every expected failure into one line on stderr.

    Set TFCOST_DEBUG=1 to see the traceback instead.
    """
    if os.environ.get("TFCOST_DEBUG") == "1":
        app(args=argv)
        return
    try:
        code = app(args=argv, standalone_mode=False)
    except typer.Abort:
        fail("aborted", 1)
    except TfcostError as error:
        fail(str(error), error.exit_code)
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except RecursionError:
        fail("input nested too deeply", 1)
    except Exception as error:  # noqa: BLE001 - the promise is: never a traceback
        if type(error).__name__ == "NoArgsIsHelpError":  # bare `tfcost` or `tfcost estimate`: show the help
            sys.stderr.write(error.format_message() + "\n")  # type: ignore[attr-defined]
            sys.exit(2)
        if hasattr(error, "format_message"):  # click's UsageError (exit 2) and ClickException (exit 1)
            fail(error.format_message().replace("Value error, ", ""), getattr(error, "exit_code", 1))
        fail(f"internal error ({type(error).__name__}: {error}); rerun with TFCOST_DEBUG=1 for the traceback", 1)
    sys.exit(code if isinstance(code, int) else 0)
