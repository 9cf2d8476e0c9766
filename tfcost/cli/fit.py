"""`tfcost fit`: a model under llama.cpp (and ollama and LM Studio, which run it) on one's own GPUs and host.

No `from __future__ import annotations` here: typer would then eval and compile every option's annotation
string twice on each run, where real annotations cost nothing.
"""

from typing import Annotated

import typer

from tfcost.cli.app import app
from tfcost.cli.options import (
    ConfigOption,
    FormatOption,
    LenientOption,
    ModelArgument,
    RevisionOption,
    SetOption,
    StrictOption,
    default,
    parse_length_option,
)
from tfcost.schema import LocalKvType, LocalSetup


@app.command()
def fit(
    model: ModelArgument = None,
    config: ConfigOption = None,
    overrides: SetOption = None,
    strict: StrictOption = False,
    lenient: LenientOption = False,
    revision: RevisionOption = None,
    gpu: Annotated[str, typer.Option("--gpu", help="GPU name from `tfcost gpus` (an Apple chip: its GPU).")] = (
        "rtx-4090"
    ),
    gpus: Annotated[int, typer.Option("--gpus", min=1, help="GPUs, layers split across them.")] = default(
        LocalSetup, "gpus"
    ),
    ram: Annotated[
        str | None,
        typer.Option(
            "--ram",
            metavar="SIZE",
            help="Host memory: 64G, 64GiB (a unified-memory machine: its memory) [default: enough].",
            show_default=False,
        ),
    ] = None,
    quant: Annotated[
        str, typer.Option("--quant", "-q", help="GGUF file type: Q4_K_M, Q5_K_M, Q6_K, Q8_0, IQ4_XS, Q4_0, F16, ...")
    ] = default(LocalSetup, "quant"),
    kv_dtype: Annotated[
        LocalKvType, typer.Option("--kv-dtype", help="KV cache type (llama.cpp's -ctk/-ctv).")
    ] = default(LocalSetup, "kv_dtype"),
    ctx: Annotated[
        int | None,
        typer.Option(
            "--ctx",
            "-c",
            parser=parse_length_option,
            metavar="TOKENS",
            help="Context (-c) [default: the model's, lowered to fit as llama.cpp's --fit does].",
            show_default=False,
        ),
    ] = None,
    gpu_layers: Annotated[
        int | None,
        typer.Option(
            "--gpu-layers", "-ngl", min=0, help="Layers on the GPUs [default: as many as fit].", show_default=False
        ),
    ] = None,
    ram_bandwidth: Annotated[
        float,
        typer.Option("--ram-bandwidth", help="Host memory bandwidth, GB/s (two channels of DDR5-5600: 89.6)."),
    ] = default(LocalSetup, "ram_bandwidth_gb_per_s"),
    flash_attn: Annotated[
        bool, typer.Option("--flash-attn/--no-flash-attn", help="Flash attention (llama.cpp's -fa).")
    ] = default(LocalSetup, "flash_attn"),
    prompt: Annotated[
        int,
        typer.Option("--prompt", "-P", parser=parse_length_option, metavar="TOKENS", help="Prompt tokens timed (pp)."),
    ] = default(LocalSetup, "prompt"),
    depth: Annotated[
        int, typer.Option("--depth", min=0, help="Tokens already in the cache when timing (llama-bench's -d).")
    ] = default(LocalSetup, "depth"),
    output: FormatOption = "table",
) -> None:
    """Layers on the GPUs (-ngl), the largest context that fits and tokens/s under llama.cpp (ollama, LM Studio)."""
    from tfcost import api
    from tfcost.render.local import fit_table
    from tfcost.render.sections import print_report

    result = api.fit(
        model, config=config, overrides=overrides, strict=strict, lenient=lenient, revision=revision, gpu=gpu,
        ram=ram, gpus=gpus, quant=quant, kv_dtype=kv_dtype, ctx=ctx, gpu_layers=gpu_layers,
        ram_bandwidth_gb_per_s=ram_bandwidth, flash_attn=flash_attn, prompt=prompt, depth=depth,
    )  # fmt: skip
    print_report(result, output, fit_table)
