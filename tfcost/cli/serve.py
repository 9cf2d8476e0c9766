"""`tfcost serve`: memory, capacity and latency of serving a model.

No `from __future__ import annotations` here: typer would then eval and compile every option's annotation
string twice on each run, where real annotations cost nothing.
"""

from typing import TYPE_CHECKING, Annotated

import typer

from tfcost.schema import (
    ServingSetup,
    WeightsDtype,
)
from tfcost.units import Dtype

if TYPE_CHECKING:
    pass


from tfcost.cli.app import app
from tfcost.cli.options import (
    Batch,
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
    validated,
)


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
    prompt: Annotated[
        int,
        typer.Option(
            "--prompt", "-P", parser=parse_length_option, metavar="TOKENS", help="P: prompt tokens per sequence (4k)."
        ),
    ] = default(ServingSetup, "prompt"),
    generate: Annotated[
        int,
        typer.Option(
            "--generate", "-G", parser=parse_length_option, metavar="TOKENS", help="G: generated tokens per sequence."
        ),
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
    from tfcost.engines.dispatch import engine_model
    from tfcost.readers.presets import load_gpu
    from tfcost.render import tables as render

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
        from tfcost.engines.dispatch import serve_report

        answer = serve_report(found, measured.gpu_spec() if measured else load_gpu(gpu), setup, explained=explain)
        render.print_report(answer, output, render.engine_serve_table)
        return
    from tfcost.reports.estimate import with_source
    from tfcost.reports.serve import serve as run_serve

    source = load_source(model, config, overrides, strict, lenient, revision)
    shape = source.shape
    if measured is None:
        report = run_serve(shape, load_gpu(gpu), setup, explained=explain)
    else:
        report = run_serve(shape, measured.gpu_spec(), setup, measured.rates(), measured.name, explained=explain)
    result = with_source(report, source)
    render.print_checkpoint_check(result)
    render.print_report(result, output, render.serve_table)
    render.warn_past_context(shape.name, setup.context, shape.max_seq_len, "P + G")  # after: a failure is one line
