"""`tfcost train`: compute, time and memory of a training run.

No `from __future__ import annotations` here: typer would then eval and compile every option's annotation
string twice on each run, where real annotations cost nothing.
"""

from typing import TYPE_CHECKING, Annotated

import typer

from tfcost.schema import (
    MemoryConvention,
    Offload,
    Optimizer,
    Precision,
    Recompute,
    TrainingSetup,
)

if TYPE_CHECKING:
    pass


from tfcost.cli.app import app
from tfcost.cli.options import (
    ConfigOption,
    EngineOption,
    ExplainOption,
    FormatOption,
    GpuOption,
    LenientOption,
    ModelArgument,
    ProfileOption,
    RevisionOption,
    SetOption,
    StrictOption,
    default,
    load_profile_option,
    load_source,
    parse_length_option,
    parse_tokens,
    validated,
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
    virtual_stages: Annotated[
        int, typer.Option("--virtual-stages", min=1, help="Model chunks per pipeline stage (interleaved 1F1B).")
    ] = default(TrainingSetup, "virtual_stages"),
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
    from tfcost.costs import training
    from tfcost.engines.dispatch import engine_model
    from tfcost.readers.presets import load_gpu
    from tfcost.render import tables as render

    def make_setup(
        default_seq: int, default_tokens: int, chosen_batch: int | None = global_batch, stage: int | None = zero
    ) -> TrainingSetup:
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
            global_batch=chosen_batch,
            cp=cp,
            ep=ep,
            virtual_stages=virtual_stages,
            pp_first_layers=pp_first_layers,
            pp_last_layers=pp_last_layers,
            zero=stage if stage is not None else default(TrainingSetup, "zero"),
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
        from tfcost.engines.dispatch import train_report

        answer = train_report(found, spec, make_setup, explained=explain)
        render.print_report(answer, output, render.engine_train_table)
        return
    from tfcost.reports.estimate import with_source
    from tfcost.reports.train import train as run_train
    from tfcost.reports.train import with_default_layout

    source = load_source(model, config, overrides, strict, lenient, revision)
    shape = source.shape
    seq_len, tokens_default = training.default_seq_len(shape), training.chinchilla_optimal_tokens(shape)
    report = with_default_layout(
        lambda chosen_batch, stage: make_setup(seq_len, tokens_default, chosen_batch, stage),
        lambda setup: run_train(shape, spec, setup, explained=explain),
        global_batch,
        zero,
    )
    setup = report.setup
    result = with_source(report, source)
    render.print_checkpoint_check(result)
    render.print_report(result, output, render.train_table)
    render.warn_past_context(shape.name, setup.seq_len, shape.max_seq_len, "T")  # after: a failure is one line
