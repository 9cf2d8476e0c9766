"""`tfcost serve`: memory, capacity and latency of serving a model.

No `from __future__ import annotations` here: typer would then eval and compile every option's annotation
string twice on each run, where real annotations cost nothing.
"""

from typing import TYPE_CHECKING, Annotated, Literal

import typer

from tfcost.schema import ServingSetup, WeightsDtype
from tfcost.units import Dtype

if TYPE_CHECKING:
    pass


from tfcost.cli.app import app
from tfcost.cli.options import (
    AudioSeconds,
    Batch,
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
    pp: Annotated[
        int, typer.Option("--pp", min=1, help="Pipeline stages, each on its own --gpus (vLLM's uneven split).")
    ] = default(ServingSetup, "pp"),
    ep: Annotated[
        int,
        typer.Option(
            "--ep",
            min=1,
            help="Expert-parallel GPUs of a stage, a multiple of --gpus (MoE only; ep / gpus attention data-parallel "
            "ranks).",
        ),
    ] = default(ServingSetup, "ep"),
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
    images: Images = 0,
    image_size: ImageSize = None,
    audio_seconds: AudioSeconds = 0,
    reserve: Annotated[
        float | None,
        typer.Option(
            "--reserve",
            help="Fraction of GPU memory kept free, in [0, 1) (vLLM's gpu_memory_utilization, TensorRT-LLM's "
            "free_gpu_memory_fraction, SGLang's mem_fraction_static is 1 - reserve) [default: the framework's, "
            f"else {default(ServingSetup, 'reserve')}].",
            show_default=False,
        ),
    ] = None,
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
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency",
            min=1,
            help="Under load: N requests in flight, each sent when one finishes (benchmark_serving's "
            "--max-concurrency): per-request TTFT, TPOT, ITL and end-to-end percentiles from a simulated scheduler.",
        ),
    ] = None,
    rate: Annotated[
        float | None,
        typer.Option("--rate", help="Under load: requests per second arriving as a Poisson process (--request-rate)."),
    ] = None,
    requests: Annotated[
        int | None,
        typer.Option(
            "--requests", min=1, help="Requests the load sends (--num-prompts) [default: 8 per slot, 100-1,000; 1,000]."
        ),
    ] = None,
    length_spread: Annotated[
        float,
        typer.Option(
            "--length-spread",
            help="Under load: each P and G drawn uniformly from [L(1 - r), L(1 + r)] (--random-range-ratio r).",
        ),
    ] = default(ServingSetup, "length_spread"),
    prefix_hit: Annotated[
        float,
        typer.Option("--prefix-hit", help="Under load: share of each prompt already in the prefix cache, in [0, 1)."),
    ] = default(ServingSetup, "prefix_hit"),
    speculative: Annotated[
        Literal["mtp", "eagle"] | None,
        typer.Option(
            "--speculative",
            help="Under load: speculative decoding by the model's MTP module (DeepSeek-V3: K = 1, a = 0.875) or an "
            "EAGLE-3 draft head (K = 3, a = 0.8).",
        ),
    ] = None,
    draft_tokens: Annotated[
        int | None, typer.Option("--draft-tokens", min=1, help="K: tokens drafted a step [default: the method's].")
    ] = None,
    acceptance: Annotated[
        float | None,
        typer.Option("--acceptance", help="a: chance each drafted token is accepted [default: the method's]."),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the load's draws.")] = default(
        ServingSetup, "seed"
    ),
    price_per_gpu_hour: Annotated[
        float | None,
        typer.Option("--price-per-gpu-hour", help="Under load: $ a GPU-hour, for $ per million tokens."),
    ] = None,
    disaggregated: Annotated[
        str | None,
        typer.Option(
            "--disaggregated",
            metavar="P:D",
            help="Under --rate: P replicas of --gpus that only prefill and D that only decode, the KV cache sent "
            "between them.",
        ),
    ] = None,
    grid_gco2_per_kwh: Annotated[
        float | None,
        typer.Option("--grid-gco2-per-kwh", help="Under load: grams of CO2 a kWh of the grid, for CO2 per token."),
    ] = None,
    framework: FrameworkOption = None,
    framework_set: FrameworkSetOption = None,
    profile: ProfileOption = None,
    engine: EngineOption = "auto",
    output: FormatOption = "table",
    explain: ExplainOption = False,
) -> None:
    """Serving memory, largest batch and context, and prefill and decode times: the roofline bound and the
    expected time of an engine."""
    from tfcost import api
    from tfcost.render.frameworks import print_framework_line
    from tfcost.render.intervals import print_interval_line
    from tfcost.render.notes import print_context_warning, print_report_notes
    from tfcost.render.sections import print_report
    from tfcost.render.serve import engine_serve_table, serve_table
    from tfcost.reports.serve import ServeReport

    result = api.serve(
        model, config=config, overrides=overrides, gpu=gpu, profile=profile, engine=engine, explain=explain,
        strict=strict, lenient=lenient, revision=revision,
        gpus=gpus, pp=pp, ep=ep, weights_dtype=weights_dtype, kv_dtype=kv_dtype, batch=batch, prompt=prompt,
        generate=generate,
        reserve=reserve, compute_efficiency=compute_efficiency, memory_efficiency=memory_efficiency,
        group_size=group_size, framework=framework, framework_set=framework_set,
        images=images, image_size=image_size, audio_seconds=audio_seconds,
        concurrency=concurrency, rate=rate, requests=requests, length_spread=length_spread, prefix_hit=prefix_hit,
        speculative=speculative, draft_tokens=draft_tokens, acceptance=acceptance, seed=seed,
        price_per_gpu_hour=price_per_gpu_hour, grid_gco2_per_kwh=grid_gco2_per_kwh, disaggregated=disaggregated,
    )  # fmt: skip
    # Does it fit? If not, the nearest layout that does; `tfcost plan`'s command module (its typer app) is
    # imported only then.
    if isinstance(result, ServeReport) and profile is None and result.needs_suggestion():
        from tfcost.cli.plan import with_suggestion

        result = with_suggestion(result, model, config, overrides, strict, lenient, revision, gpu)
    print_report_notes(result)
    if isinstance(result, ServeReport):
        print_report(result, output, serve_table)  # the table opens with the suggestion; CSV and JSON: the field
        print_interval_line(result, output)
        print_framework_line(result, output)
    else:
        print_report(result, output, engine_serve_table)
        print_framework_line(result, output)
    print_context_warning(result)  # after the answer: a run that fails says only its one error line
