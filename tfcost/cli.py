"""The command line: parse, call the core, hand the result to rendering. No arithmetic lives here.

No `from __future__ import annotations` here: typer would then eval and compile every option's annotation
string twice on each run (16 ms of start-up with six commands), where real annotations cost nothing.

Choices and defaults are the schema's own (its Literal types and its fields' defaults), so they are written once;
typer shows them in --help.
"""

import copy
import errno
import gc
import io
import os
import sys
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any, Literal, NoReturn, TypeVar, get_args

import typer

from tfcost import __version__
from tfcost.engines import Engine
from tfcost.errors import TfcostError
from tfcost.schema import (
    MeasureDevice,
    MeasureDtype,
    MemoryConvention,
    Offload,
    Optimizer,
    Precision,
    Recompute,
    SdpaBackend,
    ServingSetup,
    TrainingSetup,
    WeightsDtype,
    Workload,
)
from tfcost.units import Dtype

if TYPE_CHECKING:
    from pydantic import BaseModel

    from tfcost.measure_report import Direction
    from tfcost.presets import ModelSource
    from tfcost.report import Estimate
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


OutputFormat = Literal["table", "json", "markdown"]
TableFormat = Literal["table", "markdown"]


def default(schema: "type[BaseModel]", field: str) -> Any:
    """A setup field's default, for the option that sets it."""
    return schema.model_fields[field].default


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
DtypeOption = Annotated[Dtype, typer.Option("--dtype", help="Storage dtype of the KV cache and score matrix.")]
Causal = Annotated[
    bool,
    typer.Option(
        "--causal/--full",
        help="Count only the score entries the mask keeps in FLOPs: T(T+1)/2, fewer under a sliding window.",
    ),
]
FormatOption = Annotated[
    OutputFormat,
    typer.Option("--format", "-f", help="table for people, json for scripts, markdown for documents."),
]
ExplainOption = Annotated[
    bool,
    typer.Option(
        "--explain",
        help="Show each quantity's formula with the model's numbers put in, and its source (JSON: 'explain').",
    ),
]


EngineOption = Annotated[
    Engine,
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
        help="A preset name (see `tfcost list`), a YAML preset file, a Hugging Face config.json path, or a Hub id "
        "(Qwen/Qwen3-8B: its config.json, from the HF cache or the Hub).",
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


StrictOption = Annotated[
    bool, typer.Option("--strict", help="Refuse a config.json with any field tfcost ignores (they are listed).")
]
LenientOption = Annotated[
    bool,
    typer.Option("--lenient", help="Ignore (and list) unknown config fields that look structural, such as num_*."),
]
RevisionOption = Annotated[
    str | None,
    typer.Option("--revision", metavar="REV", help="Branch, tag or commit of a Hub id's repository [default: main]."),
]


def load_source(
    model: str | None,
    config: str | None,
    overrides: list[str] | None,
    strict: bool,
    lenient: bool,
    revision: str | None,
) -> "ModelSource":
    """presets.resolve_source with the options every model-taking command has; what the source said that was not
    used goes to stderr as notes."""
    from tfcost import render
    from tfcost.presets import resolve_source

    source = resolve_source(model, config, overrides or (), strict=strict, lenient=lenient, revision=revision)
    render.print_source_notes(source)
    return source


@app.command("list")
def list_presets(
    output: Annotated[
        TableFormat, typer.Option("--format", "-f", help="table for people, markdown for documents.")
    ] = "table",
) -> None:
    """List the built-in model presets with their size."""
    from tfcost.params import total_params
    from tfcost.presets import all_models
    from tfcost.render import models_table

    models = all_models()
    models_table(models, [total_params(model) for model in models], markdown=output == "markdown")


@app.command()
def gpus(output: FormatOption = "table") -> None:
    """List the GPU spec table: dense peaks, memory and bandwidth, with sources."""
    from tfcost import render
    from tfcost.presets import all_gpus

    table = all_gpus()
    if output == "json":
        render.print_json(table)
    else:
        render.gpus_table(table, markdown=output == "markdown")


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
    from tfcost import render
    from tfcost.engines import engine_answer
    from tfcost.presets import load_gpu
    from tfcost.report import estimate as run_estimate
    from tfcost.report import with_source

    workload = validated(Workload, seq_len=seq, batch=batch, dtype=dtype, causal=causal)

    def analytic() -> "Estimate":
        source = load_source(model, config, overrides, strict, lenient, revision)
        chosen_gpu = load_gpu(gpu) if gpu is not None else None
        found = with_source(run_estimate(source.shape, workload, chosen_gpu, explained=explain), source)
        render.print_checkpoint_check(found)
        return found

    result = engine_answer(model, config, overrides or (), workload, engine, analytic, revision)
    render.print_report(result, output, render.estimate_table)


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
    from tfcost import render
    from tfcost.engines import engine_answer
    from tfcost.errors import UsageError
    from tfcost.report import estimate as run_estimate
    from tfcost.report import with_source

    sources = [(model, None) for model in models or ()] + [(None, path) for path in configs or ()]
    if not sources:
        raise UsageError("give the models to compare: preset names, YAML or config.json paths, or --config PATH")
    workload = validated(Workload, seq_len=seq, batch=batch, dtype=dtype, causal=causal)

    def analytic(model: str | None, path: str | None) -> "Estimate":
        source = load_source(model, path, overrides, strict, lenient, revision)
        found = with_source(run_estimate(source.shape, workload), source)
        render.print_checkpoint_check(found)
        return found

    results = [
        engine_answer(model, path, overrides or (), workload, engine, partial(analytic, model, path), revision)
        for model, path in sources
    ]
    if output == "json":
        render.print_json(results)
    else:
        render.compare_table(results, breakdowns=breakdown, markdown=output == "markdown")


@app.command()
def check(
    model: ModelArgument = None,
    config: ConfigOption = None,
    seq: Seq = default(Workload, "seq_len"),
    batch: Batch = default(Workload, "batch"),
    dtype: DtypeOption = default(Workload, "dtype"),
    revision: RevisionOption = None,
    output: FormatOption = "table",
) -> None:
    """tfcost's own reader against transformers' implementation, quantity by quantity; exit 1 when they differ
    (needs tfcost[hf])."""
    from tfcost import render
    from tfcost.engines import check as run_check

    workload = validated(Workload, seq_len=seq, batch=batch, dtype=dtype, causal=False)
    result = run_check(model, config, workload, revision)
    render.print_report(result, output, render.check_table)
    if not result.agree:
        raise typer.Exit(1)


@app.command("import")
def import_config(
    model: ModelArgument = None,
    config: ConfigOption = None,
    overrides: SetOption = None,
    strict: StrictOption = False,
    lenient: LenientOption = False,
    revision: RevisionOption = None,
) -> None:
    """Print the preset YAML equivalent to a Hugging Face config.json (or any model source), to stdout.

    `tfcost import config.json > my-model.yaml` writes a preset that `tfcost estimate my-model.yaml` reads.
    """
    from tfcost import render

    source = load_source(model, config, overrides, strict, lenient, revision)
    render.print_preset_yaml(source.shape, source.ignored_fields, source.not_priced)


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
ProfileOption = Annotated[
    str | None,
    typer.Option("--profile", help="A saved measured profile (`tfcost profiles`) in place of the GPU table."),
]


def load_profile_option(name: str | None) -> Any:
    """The named profile, or None (profiles are read only when asked for)."""
    if name is None:
        return None
    from tfcost import profiles

    return profiles.load(name)


@app.command("profiles")
def list_profiles(output: FormatOption = "table") -> None:
    """Profiles saved by `tfcost measure --roofline --save-profile NAME`."""
    from tfcost import profiles, render

    found = profiles.listing()
    if output == "json":
        render.print_json(found)
    else:
        render.profiles_table(found, str(profiles.profiles_dir()))


@app.command()
def train(
    model: ModelArgument = None,
    config: ConfigOption = None,
    overrides: SetOption = None,
    strict: StrictOption = False,
    lenient: LenientOption = False,
    revision: RevisionOption = None,
    tokens: Annotated[
        int | None,
        typer.Option(
            "--tokens",
            "-D",
            parser=parse_tokens,
            metavar="COUNT",
            help="D: training tokens, e.g. 300e9 or 300B [default: Chinchilla-optimal].",
        ),
    ] = None,
    seq: Annotated[
        int | None,
        typer.Option(
            "--seq",
            "-T",
            min=1,
            help="T: tokens per sequence [default: the training default, or the model's context if shorter].",
        ),
    ] = None,
    micro_batch: Annotated[
        int, typer.Option("--micro-batch", "-b", min=1, help="b: sequences per GPU per pass.")
    ] = default(TrainingSetup, "micro_batch"),
    gpus: Annotated[
        int, typer.Option("--gpus", min=1, help="GPUs in the run = data-parallel x tp x pp x cp.")
    ] = default(TrainingSetup, "gpus"),
    gpu: GpuOption = "h100-sxm",
    mfu: Annotated[
        float | None, typer.Option("--mfu", help="Model FLOPs utilization, in (0, 1] (PaLM App. B).")
    ] = None,
    hfu: Annotated[
        float | None,
        typer.Option("--hfu", help="Hardware FLOPs utilization, counting recomputation, in (0, 1] (instead of --mfu)."),
    ] = None,
    tflops_per_gpu: Annotated[
        float | None,
        typer.Option(
            "--tflops-per-gpu", help="Achieved TFLOP/s per GPU counting recomputation, as Megatron reports it."
        ),
    ] = None,
    global_batch: Annotated[
        int | None, typer.Option("--global-batch", help="Sequences per optimizer step. Default: b x data-parallel.")
    ] = None,
    cp: Annotated[
        int, typer.Option("--cp", min=1, help="Context-parallel size (each sequence over cp GPUs).")
    ] = default(TrainingSetup, "cp"),
    ep: Annotated[
        int, typer.Option("--ep", min=1, help="Expert-parallel size (routed experts over ep GPUs).")
    ] = default(TrainingSetup, "ep"),
    virtual_stages: Annotated[
        int, typer.Option("--virtual-stages", min=1, help="Model chunks per pipeline stage (interleaved 1F1B).")
    ] = default(TrainingSetup, "virtual_stages"),
    pp_first_layers: Annotated[
        int | None, typer.Option("--pp-first-layers", help="Layers of the first pipeline stage (Megatron).")
    ] = None,
    pp_last_layers: Annotated[
        int | None, typer.Option("--pp-last-layers", help="Layers of the last pipeline stage (Megatron).")
    ] = None,
    zero: Annotated[int, typer.Option("--zero", min=0, max=3, help="ZeRO stage 0-3.")] = default(TrainingSetup, "zero"),
    tp: Annotated[int, typer.Option("--tp", min=1, help="Tensor-parallel size.")] = default(TrainingSetup, "tp"),
    pp: Annotated[int, typer.Option("--pp", min=1, help="Pipeline-parallel size.")] = default(TrainingSetup, "pp"),
    sequence_parallel: Annotated[
        bool,
        typer.Option(
            "--sequence-parallel", help="Megatron sequence parallelism (splits the rest of the activations by tp)."
        ),
    ] = default(TrainingSetup, "sequence_parallel"),
    recompute: Annotated[Recompute, typer.Option("--recompute", help="Activation recomputation.")] = default(
        TrainingSetup, "recompute"
    ),
    optimizer: Annotated[Optimizer, typer.Option("--optimizer", help="Optimizer (sgd: with momentum).")] = default(
        TrainingSetup, "optimizer"
    ),
    precision: Annotated[
        Precision,
        typer.Option("--precision", help="bf16-mixed: fp32 master weights; fp8: FP8 matmuls; bf16: no master copy."),
    ] = default(TrainingSetup, "precision"),
    flash: Annotated[
        bool, typer.Option("--flash/--no-flash", help="Fused attention: the T x T scores are never stored.")
    ] = default(TrainingSetup, "flash"),
    dp_overlap: Annotated[
        bool,
        typer.Option(
            "--dp-overlap/--no-dp-overlap",
            help="Overlap data-parallel gradient reduction (and ZeRO gathers) with compute, per-layer buckets.",
        ),
    ] = default(TrainingSetup, "dp_overlap"),
    offload: Annotated[
        Offload, typer.Option("--offload", help="ZeRO-Offload to host memory: optimizer states, or params too.")
    ] = default(TrainingSetup, "offload"),
    optimizer_in_backward: Annotated[
        bool,
        typer.Option("--optimizer-in-backward", help="Step each parameter in the backward pass; free its gradient."),
    ] = default(TrainingSetup, "optimizer_in_backward"),
    price_per_gpu_hour: Annotated[
        float | None, typer.Option("--price-per-gpu-hour", min=0, help="Price of one GPU-hour, for the cost line.")
    ] = None,
    lora: Annotated[
        int | None, typer.Option("--lora", help="Fine-tune LoRA adapters of rank r on a frozen base.")
    ] = None,
    lora_target_list: Annotated[
        str, typer.Option("--lora-targets", help="Comma-separated matrices: q,k,v,o,gate,up,down.")
    ] = ",".join(default(TrainingSetup, "lora_targets")),
    qlora: Annotated[bool, typer.Option("--qlora", help="Frozen base in NF4 with double quantisation.")] = default(
        TrainingSetup, "qlora"
    ),
    memory_convention: Annotated[
        MemoryConvention,
        typer.Option("--memory-convention", help="zero: the ZeRO paper's model states; deepspeed: its estimators."),
    ] = default(TrainingSetup, "memory_convention"),
    cuda_context_gib: Annotated[
        float, typer.Option("--cuda-context-gib", min=0, help="CUDA context per GPU, GiB (an assumption).")
    ] = default(TrainingSetup, "cuda_context_gib"),
    allocator_reserve: Annotated[
        float, typer.Option("--allocator-reserve", help="Share of the GPU the allocator holds back (an assumption).")
    ] = default(TrainingSetup, "allocator_reserve"),
    profile: ProfileOption = None,
    engine: EngineOption = "auto",
    output: FormatOption = "table",
    explain: ExplainOption = False,
) -> None:
    """Training compute, time, cost and memory per GPU: will it fit, and how long will it take?"""
    from tfcost import render, training
    from tfcost.engines import engine_model
    from tfcost.presets import load_gpu

    def make_setup(default_seq: int, default_tokens: int) -> TrainingSetup:
        """The setup asked for, the model's defaults where an option was not given."""
        return validated(
            TrainingSetup,
            tokens=tokens if tokens is not None else default_tokens,
            seq_len=seq if seq is not None else default_seq,
            micro_batch=micro_batch,
            gpus=gpus,
            mfu=mfu,
            hfu=hfu,
            tflops_per_gpu=tflops_per_gpu,
            global_batch=global_batch,
            cp=cp,
            ep=ep,
            virtual_stages=virtual_stages,
            pp_first_layers=pp_first_layers,
            pp_last_layers=pp_last_layers,
            zero=zero,
            tp=tp,
            pp=pp,
            sequence_parallel=sequence_parallel,
            recompute=recompute,
            optimizer=optimizer,
            precision=precision,
            flash=flash,
            dp_overlap=dp_overlap,
            offload=offload,
            optimizer_in_backward=optimizer_in_backward,
            price_per_gpu_hour=price_per_gpu_hour,
            lora_rank=lora,
            lora_targets=tuple(name.strip() for name in lora_target_list.split(",") if name.strip()),
            qlora=qlora,
            memory_convention=memory_convention,
            cuda_context_gib=cuda_context_gib,
            allocator_reserve=allocator_reserve,
        )

    found = engine_model(model, config, overrides or (), engine, revision)
    measured = load_profile_option(profile)
    spec = measured.gpu_spec() if measured else load_gpu(gpu)
    if found is not None:
        from tfcost.engines import train_report

        answer = train_report(found, spec, make_setup, explained=explain)
        render.print_report(answer, output, render.engine_train_table)
        return
    from tfcost.report import with_source
    from tfcost.train_report import train as run_train

    source = load_source(model, config, overrides, strict, lenient, revision)
    shape = source.shape
    setup = make_setup(training.default_seq_len(shape), training.chinchilla_optimal_tokens(shape))
    result = with_source(run_train(shape, spec, setup, explained=explain), source)
    render.print_checkpoint_check(result)
    render.print_report(result, output, render.train_table)


@app.command()
def serve(
    model: ModelArgument = None,
    config: ConfigOption = None,
    overrides: SetOption = None,
    strict: StrictOption = False,
    lenient: LenientOption = False,
    revision: RevisionOption = None,
    gpu: GpuOption = "h100-sxm",
    gpus: Annotated[int, typer.Option("--gpus", min=1, help="GPUs in tensor parallel.")] = default(
        ServingSetup, "gpus"
    ),
    weights_dtype: Annotated[
        WeightsDtype | None,
        typer.Option(
            "--weights-dtype",
            help="Weight storage (int4: one fp16 scale per 128) [default: as a config's quantization_config stores "
            "them, else bf16].",
            show_default=False,
        ),
    ] = None,
    kv_dtype: Annotated[Dtype, typer.Option("--kv-dtype", help="KV cache storage dtype.")] = default(
        ServingSetup, "kv_dtype"
    ),
    batch: Batch = default(ServingSetup, "batch"),
    prompt: Annotated[int, typer.Option("--prompt", "-P", min=1, help="P: prompt tokens per sequence.")] = default(
        ServingSetup, "prompt"
    ),
    generate: Annotated[
        int, typer.Option("--generate", "-G", min=1, help="G: generated tokens per sequence.")
    ] = default(ServingSetup, "generate"),
    reserve: Annotated[
        float,
        typer.Option(
            "--reserve",
            help="Fraction of GPU memory kept free, in [0, 1) (vLLM's gpu_memory_utilization is 1 - reserve).",
        ),
    ] = default(ServingSetup, "reserve"),
    compute_efficiency: Annotated[
        float,
        typer.Option(
            "--compute-efficiency", help="Fraction of peak FLOP/s reached (llm-analysis: up to 0.7 for inference)."
        ),
    ] = default(ServingSetup, "compute_efficiency"),
    memory_efficiency: Annotated[
        float,
        typer.Option(
            "--memory-efficiency", help="Fraction of peak bandwidth reached (llm-analysis: 0.9 is aggressive)."
        ),
    ] = default(ServingSetup, "memory_efficiency"),
    group_size: Annotated[
        int, typer.Option("--group-size", min=1, help="Weights per quantization scale (int4, fp4).")
    ] = default(ServingSetup, "group_size"),
    kv_block: Annotated[
        int, typer.Option("--kv-block", min=1, help="Tokens per KV-cache block (vLLM's default 16).")
    ] = default(ServingSetup, "kv_block"),
    profile: ProfileOption = None,
    engine: EngineOption = "auto",
    output: FormatOption = "table",
    explain: ExplainOption = False,
) -> None:
    """Serving memory, largest batch and context, and prefill and decode times: the roofline bound and the
    expected time of an engine."""
    from tfcost import render
    from tfcost.engines import engine_model
    from tfcost.presets import load_gpu

    found = engine_model(model, config, overrides or (), engine, revision)
    measured = load_profile_option(profile)
    setup = validated(
        ServingSetup,
        gpus=gpus,
        weights_dtype=weights_dtype,
        kv_dtype=kv_dtype,
        batch=batch,
        prompt=prompt,
        generate=generate,
        reserve=reserve,
        memory_efficiency=1.0 if measured else memory_efficiency,
        compute_efficiency=1.0 if measured else compute_efficiency,
        group_size=group_size,
        kv_block=kv_block,
    )
    if found is not None:
        from tfcost.engines import serve_report

        answer = serve_report(found, measured.gpu_spec() if measured else load_gpu(gpu), setup, explained=explain)
        render.print_report(answer, output, render.engine_serve_table)
        return
    from tfcost.report import with_source
    from tfcost.serve_report import serve as run_serve

    source = load_source(model, config, overrides, strict, lenient, revision)
    shape = source.shape
    if measured is None:
        report = run_serve(shape, load_gpu(gpu), setup, explained=explain)
    else:
        report = run_serve(shape, measured.gpu_spec(), setup, measured.rates(), measured.name, explained=explain)
    result = with_source(report, source)
    render.print_checkpoint_check(result)
    render.print_report(result, output, render.serve_table)


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
    from tfcost import render
    from tfcost import sweep as sweeping
    from tfcost.presets import load_gpu, resolve_model

    if plot is not None:
        from tfcost import plot as plotting

        plotting.check_path(plot)
    seq_lens = sweeping.parse_seq(seq, points, spacing)
    batches = sweeping.parse_positive_list(batch, "--batch")
    metrics = sweeping.parse_metrics(metric)
    shapes = [resolve_model(name, None, overrides or ()) for name in models]
    setup = validated(ServingSetup, gpus=gpus, weights_dtype=weights_dtype, kv_dtype=dtype)
    spec = load_gpu(gpu) if gpu is not None else None
    report = sweeping.sweep(shapes, seq_lens, batches, metrics, dtype, causal, spec, setup)
    chosen = output or ("table" if plot else "chart")
    if chosen != "json":  # names from users' files reach the charts too
        report = render.neutral(report)
    if chosen == "chart":
        from tfcost import plot as plotting

        color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        render.sweep_chart(plotting.terminal(report, color=color), report)
    elif chosen == "json":
        render.sweep_json(report)
    elif chosen == "csv":
        render.sweep_csv(report)
    else:
        render.sweep_table(report, markdown=chosen == "markdown")
    if plot is not None:
        from tfcost import plot as plotting

        written = plotting.write(report, plot)
        sys.stderr.write(f"tfcost: wrote {written}\n")


MeasureFormat = Literal["table", "json", "csv"]


def parse_seq_list(text: str) -> list[int]:
    """'1024,2048' -> [1024, 2048]; anything else is a usage error naming --seq."""
    from tfcost.errors import UsageError
    from tfcost.units import MAX_SIZE

    problem = f"--seq: expected positive integers up to {MAX_SIZE:.0e}, separated by commas, got '{text}'"
    items = [item.strip() for item in text.split(",")]
    # ASCII digits only ("²" is a digit to str.isdigit), and few enough that int() is instant and within bounds
    if not all(item.isascii() and item.isdigit() and len(item) <= len(str(MAX_SIZE)) for item in items):
        raise UsageError(problem)
    seqs = list(dict.fromkeys(int(item) for item in items))
    if not all(0 < seq <= MAX_SIZE for seq in seqs):
        raise UsageError(problem)
    return seqs


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
        return AttentionShape.model_validate(chosen)
    except ValidationError as error:
        raise UsageError(describe_validation_error(error)) from None


@app.command()
def measure(
    model: Annotated[
        str | None, typer.Argument(help="A preset or YAML path giving the attention shape; or use --heads.")
    ] = None,
    seq: Annotated[str, typer.Option("--seq", "-T", help="Sequence lengths, comma-separated.")] = "1024,2048,4096",
    batch: Batch = 1,
    dtype: Annotated[MeasureDtype, typer.Option("--dtype", help="Element type of Q, K, V.")] = "bf16",
    causal: Annotated[
        bool, typer.Option("--causal/--no-causal", help="Causal mask (equal query and key lengths).")
    ] = False,
    backward: Annotated[bool, typer.Option("--backward", help="Time forward+backward too.")] = False,
    backend: Annotated[
        Literal[SdpaBackend, "all"], typer.Option("--backend", help="SDPA backend to force; all: each.")
    ] = "auto",
    device: Annotated[
        Literal["auto", MeasureDevice], typer.Option("--device", help="auto: CUDA if torch sees one.")
    ] = "auto",
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
    roofline: Annotated[
        bool,
        typer.Option(
            "--roofline",
            help="Microbenchmarks: matmul FLOP/s, one-row matmul bytes/s by row length, attention FLOP/s, copy "
            "bandwidth, tiny-kernel cost.",
        ),
    ] = False,
    step: Annotated[
        bool, typer.Option("--step", help="Time a real prefill and decode step of MODEL beside serve's estimates.")
    ] = False,
    prompt: Annotated[int, typer.Option("--prompt", "-P", min=1, help="--step: prompt tokens P.")] = 128,
    generate: Annotated[int, typer.Option("--generate", "-G", min=1, help="--step: decode at context P + G.")] = 32,
    save_profile: Annotated[
        str | None, typer.Option("--save-profile", help="Save what --roofline/--step measured as profile NAME.")
    ] = None,
    profile: ProfileOption = None,
    output: Annotated[MeasureFormat, typer.Option("--format", "-f", help="table, json or csv.")] = "table",
) -> None:
    """Time torch's scaled_dot_product_attention here and set it beside the estimate (needs tfcost[measure]);
    --roofline and --step measure this machine and a whole model step."""
    from tfcost import render

    if roofline or step:
        measure_machine(model, roofline, step, prompt, generate, batch, dtype, device, repeats,
                        save_profile, profile, output)  # fmt: skip
        return

    shape = attention_shape(model, heads, kv_heads, head_dim)
    seqs = parse_seq_list(seq)
    backends = list(get_args(SdpaBackend)) if backend == "all" else [backend]
    from tfcost.free_memory import no_gpu_driver

    if device == "cpu" or (device == "auto" and no_gpu_driver()):  # refuse before torch's import (a second or two)
        from tfcost.free_memory import host_available_bytes
        from tfcost.measure_report import MeasureSetup, calls_that_do_not_fit

        setup = MeasureSetup(model=model, shape=shape, batch=batch, dtype=dtype, causal=causal)
        directions: list[Direction] = ["forward", "forward+backward"] if backward else ["forward"]
        calls_that_do_not_fit(setup, seqs, directions, backends, host_available_bytes(), "this machine")
    from tfcost import measure as measure_module  # torch is imported here, and only here

    report = measure_module.run(
        model=model,
        shape=shape,
        seqs=seqs,
        batch=batch,
        dtype=dtype,
        causal=causal,
        backward=backward,
        backends=backends,
        device=device,
        repeats=repeats,
        gpu=gpu,
        progress=render.progress,
    )
    if output == "json":
        render.print_json(report)
    elif output == "csv":
        render.measure_csv(report)
    else:
        render.measure_table(report)


def measure_machine(
    model: str | None, roofline: bool, step: bool, prompt: int, generate: int, batch: int, dtype: str,
    device: str, repeats: int | None, save_profile: str | None, profile: str | None, output: MeasureFormat,
) -> None:  # fmt: skip
    """measure --roofline and/or --step; a step without --profile measures the roofline first."""
    import datetime

    from tfcost import profiles, render
    from tfcost.errors import UsageError
    from tfcost.presets import resolve_model
    from tfcost.schema import ServingSetup

    if save_profile is not None:
        profiles.check_name(save_profile)
    shape = resolve_model(model, None, ()) if step else None
    if shape is None and step:
        raise UsageError("--step needs a MODEL")
    from tfcost import measure as measure_module  # torch is imported here, and only here

    measured = load_profile_option(profile)
    payload: dict[str, Any] = {}
    if roofline or measured is None:
        raw = measure_module.roofline(device, repeats)
        today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        measured = profiles.from_roofline(raw, save_profile or "this-machine", dtype, today)
        payload["roofline"] = measured.model_dump(mode="json")
    if step and shape is not None:
        from tfcost.serve_report import serve as run_serve
        from tfcost.step_report import step_report

        setup = validated(ServingSetup, weights_dtype=dtype, kv_dtype=dtype, batch=batch, prompt=prompt,
                          generate=generate, reserve=0.0, compute_efficiency=1.0, memory_efficiency=1.0)  # fmt: skip
        needed = run_serve(shape, measured.gpu_spec(), setup).memory.total_bytes_per_gpu
        raw_step = measure_module.step(shape, prompt=prompt, generate=generate, batch=batch, dtype=dtype,
                                       device=device, repeats=repeats, needed_bytes=needed)  # fmt: skip
        report = step_report(shape, measured, setup, raw_step)
        payload["step"] = report.model_dump(mode="json")
        if save_profile:
            measured = measured.model_copy(update={"steps": [*measured.steps, payload["step"]]})
    if save_profile:
        payload["saved"] = str(profiles.save(measured.model_copy(update={"name": save_profile})))
    render.print_plain_json(payload)


def fail(message: str, exit_code: int) -> NoReturn:
    from tfcost.render import print_error

    if sys.stderr is not None:  # started with standard error closed: the exit code is all there is
        print_error(message)
    sys.exit(exit_code)


# What a failed write of the output raises: a closed pipe or descriptor, a full disk or quota, an I/O error.
OUTPUT_ERRNOS = {errno.EPIPE, errno.EBADF, errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}


def discard_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's own flush at exit cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):  # no descriptor: a test's StringIO
        pass


def app_for(argv: list[str] | None) -> typer.Typer:
    """The app with only the command asked for, when the first argument names one exactly.

    Typer builds every command's parameters before it runs one (inspecting each signature, a validator per
    option): about 6 ms of CPU per run here for the ten commands not asked for. Anything else (no command, an
    option first, a misspelt name) gets the whole app, and so its usual help and errors."""
    words = sys.argv[1:] if argv is None else argv
    wanted = [info for info in app.registered_commands if words and command_name(info) == words[0]]
    if len(wanted) != 1:
        return app
    narrow = copy.copy(app)
    narrow.registered_commands = wanted
    return narrow


def command_name(info: Any) -> str:
    """A command's name as typed: its given name, or its function's with dashes for underscores (typer's rule)."""
    return info.name or info.callback.__name__.replace("_", "-")


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app, turning every expected failure into one line on stderr.

    Set TFCOST_DEBUG=1 to see the traceback instead.
    """
    # tfcost has no use for pydantic plugins, and looking for them reads the entry points of every installed
    # package (4 ms with this venv's 23, growing with each one). A user's own setting wins.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    for stream in (sys.stdout, sys.stderr):  # a character the terminal cannot encode prints as an escape
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    if sys.stdout is None:  # started with standard output closed (`tfcost list >&-`)
        fail("cannot write the output: standard output is closed", 1)
    if os.environ.get("TFCOST_DEBUG") == "1":
        app_for(argv)(args=argv)
        return
    try:
        code = app_for(argv)(args=argv, standalone_mode=False)
        sys.stdout.flush()  # a full disk or a closed pipe is found here, while we can still say so
    except OSError as error:
        if error.errno not in OUTPUT_ERRNOS:
            fail(f"internal error (OSError: {error}); rerun with TFCOST_DEBUG=1 for the traceback", 1)
        discard_stdout()
        fail(f"cannot write the output: {error.strerror or error}", 1)
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
