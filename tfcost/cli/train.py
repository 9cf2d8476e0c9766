"""`tfcost train`: compute, time and memory of a training run.

No `from __future__ import annotations` here: typer would then eval and compile every option's annotation
string twice on each run, where real annotations cost nothing.
"""

from typing import TYPE_CHECKING, Annotated

import typer

from tfcost.schema import (
    FlashKernel,
    Kernels,
    Loss,
    Offload,
    Optimizer,
    Precision,
    Recompute,
    ReshardAfterForward,
    TrainingSetup,
)

if TYPE_CHECKING:
    pass


from tfcost.cli.app import app
from tfcost.cli.options import (
    AudioSeconds,
    ConfigOption,
    DpOverlapOption,
    DropoutOption,
    EngineOption,
    ExplainOption,
    FormatOption,
    GpuOption,
    Images,
    ImageSize,
    LenientOption,
    MemoryConventionOption,
    ModelArgument,
    ProfileOption,
    ReduceEveryMicroBatchOption,
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
    flash_kernel: Annotated[
        FlashKernel,
        typer.Option(
            "--flash-kernel",
            help="Fused attention kernel: fa2 (FlashAttention-2, SDPA's flash backend) or fa1 (flash-attn 1.x, "
            "llm-foundry's Triton kernel: about half FA2's speed).",
        ),
    ] = default(TrainingSetup, "flash_kernel"),
    fp8_attention: Annotated[
        bool,
        typer.Option("--fp8-attention", help="Under --precision fp8, attention runs in FP8 too (default: BF16)."),
    ] = default(TrainingSetup, "fp8_attention"),
    kernels: Annotated[
        Kernels,
        typer.Option(
            "--kernels",
            help="fused: norms fused or compiled; eager: unfused PyTorch norms keep an fp32 copy (activations +4d); "
            "fused-norm: uncompiled, but norms in a fused kernel (torchtitan's fused_rmsnorm).",
        ),
    ] = default(TrainingSetup, "kernels"),
    dp_overlap: DpOverlapOption = default(TrainingSetup, "dp_overlap"),
    ep_overlap: Annotated[
        bool,
        typer.Option(
            "--ep-overlap",
            help="Overlap the expert all-to-alls with another micro-batch's compute (DualPipe; Megatron-Core's "
            "--overlap-moe-expert-parallel-comm).",
        ),
    ] = default(TrainingSetup, "ep_overlap"),
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
        str,
        typer.Option(
            "--lora-targets",
            help="PEFT module names (q_proj, gate_proj, experts, q_a_proj, ...) or roles q,k,v,o,gate,up,down.",
        ),
    ] = ",".join(default(TrainingSetup, "lora_targets")),
    qlora: Annotated[bool, typer.Option("--qlora", help="Frozen base in NF4 with double quantisation.")] = default(
        TrainingSetup, "qlora"
    ),
    memory_convention: MemoryConventionOption = default(TrainingSetup, "memory_convention"),
    loss: Annotated[
        Loss,
        typer.Option(
            "--loss",
            help="chunked: the loss upcasts the logits a chunk at a time (torchtune, LitGPT), keeping the fp32 "
            "log-probabilities; full: one fp32 cross-entropy over them all (torchtitan): 3x that at its peak; "
            "compiled: the upcast compiled with the loss (torchtune, compile=True) keeps the bf16 logits alone.",
        ),
    ] = default(TrainingSetup, "loss"),
    reshard_after_forward: Annotated[
        ReshardAfterForward,
        typer.Option(
            "--reshard-after-forward",
            help="ZeRO-3 / FSDP: always free a layer's gathered weights after its forward, never (kept until its "
            "backward), or default: never under --pp > 1, else always (torchtitan's fsdp_reshard_after_forward).",
        ),
    ] = default(TrainingSetup, "reshard_after_forward"),
    accumulate_unsharded: Annotated[
        bool,
        typer.Option(
            "--accumulate-unsharded",
            help="ZeRO-3 / FSDP: micro-batches accumulate their gradients unsharded, reduce-scattered at the step's "
            "last (FSDP's no_sync, Lightning's no_backward_sync); always so under --pp > 1.",
        ),
    ] = default(TrainingSetup, "accumulate_unsharded"),
    fsdp2: Annotated[
        bool,
        typer.Option(
            "--fsdp2",
            help="ZeRO-3 as PyTorch's FSDP2 (fully_shard, torchtitan) runs it: prices its copy-out of each all-gather "
            "and its copy-in of each reduce-scatter's fp32 input, passes over HBM.",
        ),
    ] = default(TrainingSetup, "fsdp2"),
    fsdp_float8_all_gather: Annotated[
        bool,
        typer.Option(
            "--fsdp-float8-all-gather",
            help="With --precision fp8 under --zero 3: FP8 linear weights cast on their shard and all-gathered in "
            "float8, 1 byte, and not cast again each micro-batch (torchtitan's enable_fsdp_float8_all_gather).",
        ),
    ] = default(TrainingSetup, "fsdp_float8_all_gather"),
    tp_keeps_gathered_input: Annotated[
        bool,
        typer.Option(
            "--tp-keeps-gathered-input",
            help="With --sequence-parallel: each column-parallel linear keeps its all-gathered input for the "
            "backward, as PyTorch's DTensor (torchtitan) does, so no all-gather is redone (Megatron-LM redoes it).",
        ),
    ] = default(TrainingSetup, "tp_keeps_gathered_input"),
    async_tp: Annotated[
        bool,
        typer.Option(
            "--async-tp",
            help="Tensor parallelism with PyTorch's async TP (torchtitan's enable_async_tensor_parallel, under "
            "torch.compile): part of the sequence-parallel collectives hidden under the GEMMs.",
        ),
    ] = default(TrainingSetup, "async_tp"),
    reduce_every_micro_batch: ReduceEveryMicroBatchOption = default(TrainingSetup, "reduce_every_micro_batch"),
    dropout: DropoutOption = default(TrainingSetup, "dropout"),
    logit_metrics: Annotated[
        int,
        typer.Option(
            "--logit-metrics",
            min=0,
            help="Cross-entropy metrics a trainer computes on each micro-batch's logits besides the loss, forward "
            "only (Composer's train metrics: 2 for llm-foundry's MPT).",
        ),
    ] = default(TrainingSetup, "logit_metrics"),
    offload_activations: Annotated[
        bool,
        typer.Option(
            "--offload-activations",
            help="Every layer's saved activations but the one in use go to host memory (torchtune's "
            "enable_activation_offloading); the loss's logits stay.",
        ),
    ] = default(TrainingSetup, "offload_activations"),
    frozen_gradients: Annotated[
        bool,
        typer.Option(
            "--frozen-gradients",
            help="LoRA under ZeRO-3 / FSDP1 with each adapter in its frozen layer's unit (LitGPT's Block wrapping): "
            "the layers' gradients are kept as if not frozen.",
        ),
    ] = default(TrainingSetup, "frozen_gradients"),
    cuda_context_gib: Annotated[
        float, typer.Option("--cuda-context-gib", min=0, help="CUDA context per GPU, GiB (an assumption).")
    ] = default(TrainingSetup, "cuda_context_gib"),
    allocator_reserve: Annotated[
        float, typer.Option("--allocator-reserve", help="Share of the GPU the allocator holds back (an assumption).")
    ] = default(TrainingSetup, "allocator_reserve"),
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
    from tfcost.render import tables as render
    from tfcost.reports.train import TrainReport

    result = api.train(
        model, config=config, overrides=overrides, tokens=tokens, seq=seq, gpu=gpu, profile=profile, engine=engine,
        explain=explain, strict=strict, lenient=lenient, revision=revision,
        micro_batch=micro_batch, gpus=gpus, mfu=mfu, hfu=hfu, tflops_per_gpu=tflops_per_gpu,
        global_batch=global_batch, cp=cp, ep=ep, etp=etp, virtual_stages=virtual_stages,
        pp_first_layers=pp_first_layers, pp_last_layers=pp_last_layers, zero=zero, tp=tp, pp=pp,
        sequence_parallel=sequence_parallel,
        recompute=recompute, optimizer=optimizer, precision=precision, flash=flash, flash_kernel=flash_kernel,
        dp_overlap=dp_overlap,
        ep_overlap=ep_overlap,
        offload=offload, optimizer_in_backward=optimizer_in_backward, price_per_gpu_hour=price_per_gpu_hour,
        lora_rank=lora, lora_targets=lora_target_list, qlora=qlora, memory_convention=memory_convention,
        cuda_context_gib=cuda_context_gib, allocator_reserve=allocator_reserve, fp8_attention=fp8_attention,
        kernels=kernels, loss=loss, reshard_after_forward=reshard_after_forward, images=images, image_size=image_size,
        audio_seconds=audio_seconds, accumulate_unsharded=accumulate_unsharded, frozen_gradients=frozen_gradients,
        offload_activations=offload_activations, reduce_every_micro_batch=reduce_every_micro_batch, dropout=dropout,
        logit_metrics=logit_metrics,
        fsdp2=fsdp2, fsdp_float8_all_gather=fsdp_float8_all_gather, async_tp=async_tp,
        tp_keeps_gathered_input=tp_keeps_gathered_input,
    )  # fmt: skip
    # Does it fit? If not, the nearest layout that does; `tfcost plan`'s command module (its typer app) is
    # imported only then.
    if isinstance(result, TrainReport) and profile is None and result.needs_suggestion():
        from tfcost.cli.plan import with_suggestion

        result = with_suggestion(result, model, config, overrides, strict, lenient, revision, gpu)
    render.print_report_notes(result)
    if isinstance(result, TrainReport):
        render.print_report(result, output, render.train_table)
        if output in ("table", "markdown") and result.suggestion is not None:  # CSV and JSON: the field
            from tfcost.render.plan import print_suggestion  # only when there is one

            print_suggestion(result.suggestion, "Does not fit")
    else:
        render.print_report(result, output, render.engine_train_table)
    render.print_context_warning(result)  # after the answer: a run that fails says only its one error line
