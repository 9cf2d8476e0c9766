"""`tfcost train`: compute, time and memory of a training run.

No `from __future__ import annotations` here: typer would then eval and compile every option's annotation
string twice on each run, where real annotations cost nothing.
"""

from typing import TYPE_CHECKING, Annotated

import typer

from tfcost.schema import Offload, Optimizer, Precision, Recompute, TrainingSetup

if TYPE_CHECKING:
    pass


from tfcost.cli.app import app
from tfcost.cli.options import (
    AudioSeconds,
    ConfigOption,
    EngineOption,
    ExplainOption,
    FormatOption,
    FrameworkOption,
    FrameworkSetOption,
    GpuOption,
    Images,
    ImageSize,
    LenientOption,
    ModelArgument,
    ProfileOption,
    RevisionOption,
    SetOption,
    StrictOption,
    default,
    parse_length_option,
    parse_tokens,
)


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
            parser=parse_length_option,
            metavar="TOKENS",
            help="T: tokens per sequence, 4096 or 4k [default: the training default, or the model's context if "
            "shorter].",
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
        int | None,
        typer.Option(
            "--global-batch",
            help="Sequences per optimizer step [default: about 4M tokens a step (Llama 2), whole micro-batches].",
        ),
    ] = None,
    cp: Annotated[
        int, typer.Option("--cp", min=1, help="Context-parallel size (each sequence over cp GPUs).")
    ] = default(TrainingSetup, "cp"),
    ep: Annotated[
        int, typer.Option("--ep", min=1, help="Expert-parallel size (routed experts over ep GPUs).")
    ] = default(TrainingSetup, "ep"),
    etp: Annotated[
        int | None,
        typer.Option(
            "--etp",
            min=1,
            help="Expert-tensor-parallel size: each routed expert over etp GPUs, folded over tp x cp x dp "
            "(Megatron-Core's --expert-tensor-parallel-size) [default: tp].",
        ),
    ] = None,
    virtual_stages: Annotated[
        int, typer.Option("--virtual-stages", min=1, help="Model chunks per pipeline stage (interleaved 1F1B).")
    ] = default(TrainingSetup, "virtual_stages"),
    pp_layout: Annotated[
        str | None,
        typer.Option(
            "--pp-layout",
            help="Every pipeline chunk's layers as Megatron-Core's --pipeline-model-parallel-layout says them "
            "(E embedding, t layer, m MTP, L loss, '|' between chunks, (...)*n repeats).",
        ),
    ] = None,
    pp_first_layers: Annotated[
        int | None, typer.Option("--pp-first-layers", help="Layers of the first pipeline stage (Megatron).")
    ] = None,
    pp_last_layers: Annotated[
        int | None, typer.Option("--pp-last-layers", help="Layers of the last pipeline stage (Megatron).")
    ] = None,
    zero: Annotated[
        int | None,
        typer.Option(
            "--zero", min=0, max=3, help="ZeRO stage 0-3 [default: the lowest whose memory fits].", show_default=False
        ),
    ] = None,
    tp: Annotated[int, typer.Option("--tp", min=1, help="Tensor-parallel size.")] = default(TrainingSetup, "tp"),
    pp: Annotated[int, typer.Option("--pp", min=1, help="Pipeline-parallel size.")] = default(TrainingSetup, "pp"),
    sequence_parallel: Annotated[
        bool | None,
        typer.Option(
            "--sequence-parallel/--no-sequence-parallel",
            help="Megatron sequence parallelism (splits the rest of the activations by tp) [default: the "
            "framework's, else off].",
            show_default=False,
        ),
    ] = None,
    recompute: Annotated[
        Recompute | None,
        typer.Option(
            "--recompute",
            help="Activation recomputation [default: the framework's, else none].",
            show_default=False,
        ),
    ] = None,
    optimizer: Annotated[Optimizer, typer.Option("--optimizer", help="Optimizer (sgd: with momentum).")] = default(
        TrainingSetup, "optimizer"
    ),
    precision: Annotated[
        Precision,
        typer.Option("--precision", help="bf16-mixed: fp32 master weights; fp8: FP8 matmuls; bf16: no master copy."),
    ] = default(TrainingSetup, "precision"),
    offload: Annotated[
        Offload, typer.Option("--offload", help="ZeRO-Offload to host memory: optimizer states, or params too.")
    ] = default(TrainingSetup, "offload"),
    price_per_gpu_hour: Annotated[
        float | None, typer.Option("--price-per-gpu-hour", min=0, help="Price of one GPU-hour, for the cost line.")
    ] = None,
    grid_gco2_per_kwh: Annotated[
        float | None,
        typer.Option("--grid-gco2-per-kwh", help="Grams of CO2 a kWh of the grid: the run's energy in CO2."),
    ] = None,
    lora: Annotated[
        int | None, typer.Option("--lora", help="Fine-tune LoRA adapters of rank r on a frozen base.")
    ] = None,
    lora_target_list: Annotated[
        str,
        typer.Option(
            "--lora-targets",
            help="PEFT module names (q_proj, gate_proj, experts, q_a_proj, ...) or roles q,k,v,o,gate,up,down.",
        ),
    ] = ",".join(default(TrainingSetup, "lora_targets")),
    qlora: Annotated[bool, typer.Option("--qlora", help="Frozen base in NF4 with double quantisation.")] = default(
        TrainingSetup, "qlora"
    ),
    framework: FrameworkOption = None,
    framework_set: FrameworkSetOption = None,
    max_seq: Annotated[
        bool,
        typer.Option(
            "--max-seq",
            help="Instead of one run: the longest --seq this setup fits at (searched up to the model's context).",
        ),
    ] = False,
    max_seq_limit: Annotated[
        int | None,
        typer.Option(
            "--max-seq-limit",
            parser=parse_length_option,
            metavar="TOKENS",
            help="With --max-seq: search up to this many tokens [default: the model's context].",
            show_default=False,
        ),
    ] = None,
    images: Images = 0,
    image_size: ImageSize = None,
    audio_seconds: AudioSeconds = 0,
    profile: ProfileOption = None,
    engine: EngineOption = "auto",
    output: FormatOption = "table",
    explain: ExplainOption = False,
) -> None:
    """Training compute, time, cost and memory per GPU: will it fit, and how long will it take?"""
    from tfcost import api
    from tfcost.render.frameworks import print_framework_line
    from tfcost.render.intervals import print_interval_line
    from tfcost.render.notes import print_context_warning, print_report_notes
    from tfcost.render.sections import print_report
    from tfcost.render.train import engine_train_table, train_table
    from tfcost.reports.train import TrainReport

    if max_seq:
        from tfcost.render.max_seq import max_seq_table

        longest = api.max_train_seq(
            model, limit=max_seq_limit, config=config, overrides=overrides, tokens=tokens, gpu=gpu, profile=profile,
            engine=engine, strict=strict, lenient=lenient, revision=revision, framework=framework,
            framework_set=framework_set,
            micro_batch=micro_batch, gpus=gpus, mfu=mfu, hfu=hfu, tflops_per_gpu=tflops_per_gpu,
            global_batch=global_batch, cp=cp, ep=ep, virtual_stages=virtual_stages, pp_first_layers=pp_first_layers,
            pp_last_layers=pp_last_layers, zero=zero, tp=tp, pp=pp, sequence_parallel=sequence_parallel,
            recompute=recompute, optimizer=optimizer, precision=precision, offload=offload,
            price_per_gpu_hour=price_per_gpu_hour, lora_rank=lora, lora_targets=lora_target_list, qlora=qlora,
            images=images, image_size=image_size, audio_seconds=audio_seconds,
        )  # fmt: skip
        print_report(longest, output, max_seq_table)
        return
    result = api.train(
        model, config=config, overrides=overrides, tokens=tokens, seq=seq, gpu=gpu, profile=profile, engine=engine,
        explain=explain, strict=strict, lenient=lenient, revision=revision, framework=framework,
        framework_set=framework_set,
        micro_batch=micro_batch, gpus=gpus, mfu=mfu, hfu=hfu, tflops_per_gpu=tflops_per_gpu,
        global_batch=global_batch, cp=cp, ep=ep, etp=etp, virtual_stages=virtual_stages,
        pp_layout=pp_layout, pp_first_layers=pp_first_layers,
        pp_last_layers=pp_last_layers, zero=zero, tp=tp, pp=pp, sequence_parallel=sequence_parallel,
        recompute=recompute, optimizer=optimizer, precision=precision, offload=offload,
        price_per_gpu_hour=price_per_gpu_hour, grid_gco2_per_kwh=grid_gco2_per_kwh,
        lora_rank=lora, lora_targets=lora_target_list, qlora=qlora,
        images=images, image_size=image_size, audio_seconds=audio_seconds,
    )  # fmt: skip
    # Does it fit? If not, the nearest layout that does; `tfcost plan`'s command module (its typer app) is
    # imported only then.
    if isinstance(result, TrainReport) and profile is None and result.needs_suggestion():
        from tfcost.cli.plan import with_suggestion

        result = with_suggestion(result, model, config, overrides, strict, lenient, revision, gpu)
    print_report_notes(result)
    if isinstance(result, TrainReport):
        print_report(result, output, train_table)  # the table opens with the suggestion; CSV and JSON: the field
        print_interval_line(result, output)
        print_framework_line(result, output)
    else:
        print_report(result, output, engine_train_table)
        print_framework_line(result, output)
    print_context_warning(result)  # after the answer: a run that fails says only its one error line
