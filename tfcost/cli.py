"""The command line: parse, call the core, hand the result to rendering. No arithmetic lives here.

No `from __future__ import annotations` here: typer would then eval and compile every option's annotation
string twice on each run (16 ms of start-up with six commands), where real annotations cost nothing.
"""

import gc
import os
import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, NoReturn, TypeVar

import typer

from tfcost import __version__
from tfcost.errors import TfcostError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from tfcost.schema import AttentionShape

BaseModelT = TypeVar("BaseModelT", bound="BaseModel")

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
    bool,
    typer.Option(
        "--causal/--full",
        help="Count only the score entries the mask keeps in FLOPs: T(T+1)/2, fewer under a sliding window.",
    ),
]
FormatOption = Annotated[OutputFormat, typer.Option("--format", "-f", help="table for people, json for scripts.")]


class EngineChoice(StrEnum):
    auto = "auto"
    analytic = "analytic"
    transformers = "transformers"


EngineOption = Annotated[
    EngineChoice,
    typer.Option(
        "--engine",
        help="analytic: tfcost's own formulas; transformers: the model built by transformers on the meta device "
        "(needs tfcost[hf]); auto: analytic where tfcost reads the model_type, else transformers.",
    ),
]

# The model options, shared by every command that takes a model: pass all three to presets.resolve_model.
ModelArgument = Annotated[
    str | None,
    typer.Argument(
        help="A preset name (see `tfcost list`), a YAML preset file, or a Hugging Face config.json path.",
        show_default=False,
    ),
]
ConfigOption = Annotated[
    str | None,
    typer.Option("--config", metavar="PATH", help="A local Hugging Face config.json to read instead of MODEL."),
]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="KEY=VALUE",
        help="Override a model field, validated like a preset: n_kv_heads=16, bias.qkv=true, "
        "moe.experts_per_token=4 (repeatable).",
    ),
]


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
    model: ModelArgument = None,
    config: ConfigOption = None,
    overrides: SetOption = None,
    seq: Seq = 1024,
    batch: Batch = 1,
    dtype: DtypeOption = DtypeChoice.bf16,
    causal: Causal = False,
    engine: EngineOption = EngineChoice.auto,
    output: FormatOption = OutputFormat.table,
) -> None:
    """Parameters, FLOPs, KV cache and score-matrix size of one model."""
    from tfcost import render
    from tfcost.engines import engine_answer
    from tfcost.schema import Workload

    workload = validated(Workload, seq_len=seq, batch=batch, dtype=dtype.value, causal=causal)
    result = engine_answer(model, config, overrides or (), workload, engine.value)
    if output is OutputFormat.json:
        render.print_json(result)
    else:
        render.estimate_table(result)


@app.command()
def compare(
    models: Annotated[
        list[str] | None, typer.Argument(help="Preset names, YAML preset files or config.json paths.")
    ] = None,
    configs: Annotated[
        list[str] | None,
        typer.Option("--config", metavar="PATH", help="A Hugging Face config.json to add as a column (repeatable)."),
    ] = None,
    overrides: SetOption = None,
    seq: Seq = 1024,
    batch: Batch = 1,
    dtype: DtypeOption = DtypeChoice.bf16,
    causal: Causal = False,
    breakdown: Annotated[
        bool, typer.Option("--breakdown", help="Also show the per-part breakdowns (always in --format json).")
    ] = False,
    engine: EngineOption = EngineChoice.auto,
    output: FormatOption = OutputFormat.table,
) -> None:
    """The same quantities for several models, side by side (--set applies to each)."""
    from tfcost import render
    from tfcost.engines import engine_answer
    from tfcost.errors import UsageError
    from tfcost.schema import Workload

    sources = [(model, None) for model in models or ()] + [(None, path) for path in configs or ()]
    if not sources:
        raise UsageError("give the models to compare: preset names, YAML or config.json paths, or --config PATH")
    workload = validated(Workload, seq_len=seq, batch=batch, dtype=dtype.value, causal=causal)
    results = [engine_answer(model, path, overrides or (), workload, engine.value) for model, path in sources]
    if output is OutputFormat.json:
        render.print_json(results)
    else:
        render.compare_table(results, breakdowns=breakdown)


@app.command()
def check(
    model: ModelArgument = None,
    config: ConfigOption = None,
    seq: Seq = 1024,
    batch: Batch = 1,
    dtype: DtypeOption = DtypeChoice.bf16,
    output: FormatOption = OutputFormat.table,
) -> None:
    """tfcost's own reader against transformers' implementation, quantity by quantity; exit 1 when they differ
    (needs tfcost[hf])."""
    from tfcost import render
    from tfcost.engines import check as run_check
    from tfcost.schema import Workload

    workload = validated(Workload, seq_len=seq, batch=batch, dtype=dtype.value, causal=False)
    result = run_check(model, config, workload)
    if output is OutputFormat.json:
        render.print_json(result)
    else:
        render.check_table(result)
    if not result.agree:
        raise typer.Exit(1)


@app.command("import")
def import_config(
    model: ModelArgument = None,
    config: ConfigOption = None,
    overrides: SetOption = None,
) -> None:
    """Print the preset YAML equivalent to a Hugging Face config.json (or any model source), to stdout.

    `tfcost import config.json > my-model.yaml` writes a preset that `tfcost estimate my-model.yaml` reads.
    """
    from tfcost import render
    from tfcost.presets import resolve_model

    render.print_preset_yaml(resolve_model(model, config, overrides or ()))


class RecomputeChoice(StrEnum):
    none = "none"
    selective = "selective"
    full = "full"


class OptimizerChoice(StrEnum):
    adamw = "adamw"
    adamw_8bit = "adamw-8bit"
    sgd = "sgd"


class PrecisionChoice(StrEnum):
    bf16_mixed = "bf16-mixed"
    fp32 = "fp32"


class WeightsDtypeChoice(StrEnum):
    bf16 = "bf16"
    fp16 = "fp16"
    fp8 = "fp8"
    int8 = "int8"
    int4 = "int4"


def parse_tokens(text: str) -> int:
    from tfcost.units import parse_count

    return parse_count(text)


def validated(schema: type[BaseModelT], **fields: object) -> BaseModelT:
    """A setup schema built from the options; its complaints become one usage-error line naming the options."""
    from pydantic import ValidationError

    from tfcost.errors import UsageError, describe_validation_error

    try:
        return schema.model_validate(fields)
    except ValidationError as error:
        raise UsageError(describe_validation_error(error, option_name)) from None


OPTION_NAMES = {"seq_len": "seq"}  # setup fields whose option is not the field's name with dashes


def option_name(field: str) -> str:
    """The command-line option that sets a setup field: seq_len -> --seq, micro_batch -> --micro-batch."""
    return "--" + OPTION_NAMES.get(field, field.replace("_", "-"))


GpuOption = Annotated[str, typer.Option("--gpu", help="GPU name from `tfcost gpus`.")]


@app.command()
def train(
    model: ModelArgument = None,
    config: ConfigOption = None,
    overrides: SetOption = None,
    tokens: Annotated[
        int | None,
        typer.Option(
            "--tokens",
            "-D",
            parser=parse_tokens,
            metavar="COUNT",
            help="D: training tokens, e.g. 300e9 or 300B. Default: Chinchilla-optimal, 20 per parameter.",
        ),
    ] = None,
    seq: Annotated[
        int | None,
        typer.Option(
            "--seq", "-T", min=1, help="T: tokens per sequence. Default: 4096, or the model's context if shorter."
        ),
    ] = None,
    micro_batch: Annotated[int, typer.Option("--micro-batch", "-b", min=1, help="b: sequences per GPU per pass.")] = 1,
    gpus: Annotated[int, typer.Option("--gpus", min=1, help="GPUs in the run = data-parallel x tp x pp.")] = 1,
    gpu: GpuOption = "h100-sxm",
    mfu: Annotated[float, typer.Option("--mfu", help="Model FLOPs utilization, in (0, 1] (PaLM App. B).")] = 0.4,
    zero: Annotated[int, typer.Option("--zero", min=0, max=3, help="ZeRO stage 0-3.")] = 0,
    tp: Annotated[int, typer.Option("--tp", min=1, help="Tensor-parallel size.")] = 1,
    pp: Annotated[int, typer.Option("--pp", min=1, help="Pipeline-parallel size.")] = 1,
    sequence_parallel: Annotated[
        bool,
        typer.Option(
            "--sequence-parallel", help="Megatron sequence parallelism (splits the rest of the activations by tp)."
        ),
    ] = False,
    recompute: Annotated[
        RecomputeChoice, typer.Option("--recompute", help="Activation recomputation.")
    ] = RecomputeChoice.none,
    optimizer: Annotated[
        OptimizerChoice, typer.Option("--optimizer", help="Optimizer (sgd: with momentum).")
    ] = OptimizerChoice.adamw,
    precision: Annotated[
        PrecisionChoice, typer.Option("--precision", help="bf16-mixed: bf16 compute, fp32 master weights.")
    ] = PrecisionChoice.bf16_mixed,
    flash: Annotated[
        bool, typer.Option("--flash/--no-flash", help="Fused attention: the T x T scores are never stored.")
    ] = True,
    price_per_gpu_hour: Annotated[
        float | None, typer.Option("--price-per-gpu-hour", min=0, help="Price of one GPU-hour, for the cost line.")
    ] = None,
    engine: EngineOption = EngineChoice.auto,
    output: FormatOption = OutputFormat.table,
) -> None:
    """Training compute, time, cost and memory per GPU: will it fit, and how long will it take?"""
    from tfcost import render, training
    from tfcost.engines import analytic_only
    from tfcost.presets import load_gpu, resolve_model
    from tfcost.report import train as run_train
    from tfcost.schema import TrainingSetup

    analytic_only(model, config, engine.value, "train")
    shape = resolve_model(model, config, overrides or ())
    setup = validated(
        TrainingSetup,
        tokens=tokens if tokens is not None else training.chinchilla_optimal_tokens(shape),
        seq_len=seq if seq is not None else training.default_seq_len(shape),
        micro_batch=micro_batch,
        gpus=gpus,
        mfu=mfu,
        zero=zero,
        tp=tp,
        pp=pp,
        sequence_parallel=sequence_parallel,
        recompute=recompute.value,
        optimizer=optimizer.value,
        precision=precision.value,
        flash=flash,
        price_per_gpu_hour=price_per_gpu_hour,
    )
    result = run_train(shape, load_gpu(gpu), setup)
    if output is OutputFormat.json:
        render.print_json(result)
    else:
        render.train_table(result)


@app.command()
def serve(
    model: ModelArgument = None,
    config: ConfigOption = None,
    overrides: SetOption = None,
    gpu: GpuOption = "h100-sxm",
    gpus: Annotated[int, typer.Option("--gpus", min=1, help="GPUs in tensor parallel.")] = 1,
    weights_dtype: Annotated[
        WeightsDtypeChoice, typer.Option("--weights-dtype", help="Weight storage (int4: one fp16 scale per 128).")
    ] = WeightsDtypeChoice.bf16,
    kv_dtype: Annotated[DtypeChoice, typer.Option("--kv-dtype", help="KV cache storage dtype.")] = DtypeChoice.bf16,
    batch: Batch = 1,
    prompt: Annotated[int, typer.Option("--prompt", "-P", min=1, help="P: prompt tokens per sequence.")] = 2048,
    generate: Annotated[int, typer.Option("--generate", "-G", min=1, help="G: generated tokens per sequence.")] = 512,
    reserve: Annotated[
        float,
        typer.Option(
            "--reserve",
            help="Fraction of GPU memory kept free, in [0, 1): 0.1 leaves what vLLM's gpu_memory_utilization=0.9 does.",
        ),
    ] = 0.1,
    compute_efficiency: Annotated[
        float,
        typer.Option(
            "--compute-efficiency", help="Fraction of peak FLOP/s reached (llm-analysis: up to 0.7 for inference)."
        ),
    ] = 0.7,
    memory_efficiency: Annotated[
        float,
        typer.Option(
            "--memory-efficiency", help="Fraction of peak bandwidth reached (llm-analysis: 0.9 is aggressive)."
        ),
    ] = 0.9,
    engine: EngineOption = EngineChoice.auto,
    output: FormatOption = OutputFormat.table,
) -> None:
    """Serving memory, largest batch and context, and roofline prefill and decode times."""
    from tfcost import render
    from tfcost.engines import analytic_only
    from tfcost.presets import load_gpu, resolve_model
    from tfcost.report import serve as run_serve
    from tfcost.schema import ServingSetup

    analytic_only(model, config, engine.value, "serve")
    shape = resolve_model(model, config, overrides or ())
    setup = validated(
        ServingSetup,
        gpus=gpus,
        weights_dtype=weights_dtype.value,
        kv_dtype=kv_dtype.value,
        batch=batch,
        prompt=prompt,
        generate=generate,
        reserve=reserve,
        compute_efficiency=compute_efficiency,
        memory_efficiency=memory_efficiency,
    )
    result = run_serve(shape, load_gpu(gpu), setup)
    if output is OutputFormat.json:
        render.print_json(result)
    else:
        render.serve_table(result)


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


def attention_shape(
    model: str | None, heads: int | None, kv_heads: int | None, head_dim: int | None
) -> "AttentionShape":
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
    # tfcost has no use for pydantic plugins, and looking for them reads the entry points of every installed
    # package (4 ms with this venv's 23, growing with each one). A user's own setting wins.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
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


def run() -> None:
    """The `tfcost` console script and `python -m tfcost`: main(), then exit without the final garbage collection.

    At exit the interpreter sweeps every object the imports built (typer, pydantic, rich): ~60 ms of a ~300 ms run
    here, for nothing, as the process is ending anyway. Freezing them exempts them from that sweep.
    """
    try:
        main()
    finally:
        gc.freeze()
