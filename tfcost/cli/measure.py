"""`tfcost measure` (torch's kernels timed here) and `tfcost profiles` (what it saved).

No `from __future__ import annotations` here: typer would then eval and compile every option's annotation
string twice on each run, where real annotations cost nothing.
"""

from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

import typer

from tfcost.schema import (
    MeasureDevice,
    MeasureDtype,
    SdpaBackend,
    ServingSetup,
)

if TYPE_CHECKING:
    from tfcost.reports.measure import Direction
    from tfcost.schema import AttentionShape


from tfcost.cli.app import app
from tfcost.cli.options import (
    Batch,
    FormatOption,
    ProfileOption,
    load_profile_option,
    validated,
)

MeasureFormat = Literal["table", "json", "csv", "markdown"]
MAX_STEP_TOKENS = 1 << 24  # --prompt and --generate: past any model's context; the model's own is checked too


def refuse_unused(options: dict[str, tuple[object, bool]]) -> None:
    """Every option given where it does nothing is a usage error: (value, whether this mode uses it) by name."""
    from tfcost.errors import UsageError

    unused = [name for name, (value, used) in options.items() if value is not None and not used]
    if unused:
        raise UsageError(
            f"{', '.join(unused)}: not used by this mode of measure (MODEL and --seq/--backend/--heads... time "
            "attention; --roofline the machine; --step MODEL a model step, --profile NAME in place of a roofline; "
            "--save-profile with --roofline/--step)"
        )


def parse_seq_list(text: str) -> list[int]:
    """'1024,2k' -> [1024, 2048] (units.parse_length); anything else is a usage error naming --seq."""
    from tfcost.errors import UsageError
    from tfcost.units import MAX_SIZE, parse_length

    problem = f"--seq: expected positive integers up to {MAX_SIZE:.0e} (or 4k, 1M), separated by commas, got '{text}'"
    try:
        return list(dict.fromkeys(parse_length(item) for item in text.split(",")))
    except ValueError:
        raise UsageError(problem) from None


def attention_shape(
    model: str | None, heads: int | None, kv_heads: int | None, head_dim: int | None
) -> "AttentionShape":
    """The shape to time: the model preset's, with any of --heads/--kv-heads/--head-dim overriding it."""
    from pydantic import ValidationError

    from tfcost.errors import UsageError, describe_validation_error
    from tfcost.readers.presets import load_model
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
    seq: Annotated[
        str | None, typer.Option("--seq", "-T", help="Sequence lengths, comma-separated [default: 1024,2048,4096].")
    ] = None,
    batch: Batch = 1,
    dtype: Annotated[MeasureDtype, typer.Option("--dtype", help="Element type of Q, K, V.")] = "bf16",
    causal: Annotated[
        bool | None,
        typer.Option(
            "--causal/--no-causal",
            help="Causal mask (equal query and key lengths) [default: causal for a decoder MODEL, else not].",
            show_default=False,
        ),
    ] = None,
    backward: Annotated[bool, typer.Option("--backward", help="Time forward+backward too.")] = False,
    backend: Annotated[
        Literal[SdpaBackend, "all"] | None,
        typer.Option("--backend", help="SDPA backend to force; all: each [default: auto]."),
    ] = None,
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
    prompt: Annotated[
        int | None,
        typer.Option("--prompt", "-P", min=1, max=MAX_STEP_TOKENS, help="--step: prompt tokens P [default: 128]."),
    ] = None,
    generate: Annotated[
        int | None,
        typer.Option(
            "--generate", "-G", min=1, max=MAX_STEP_TOKENS, help="--step: decode at context P + G [default: 32]."
        ),
    ] = None,
    save_profile: Annotated[
        str | None, typer.Option("--save-profile", help="Save what --roofline/--step measured as profile NAME.")
    ] = None,
    profile: ProfileOption = None,
    output: Annotated[MeasureFormat, typer.Option("--format", "-f", help="table, json, csv or markdown.")] = "table",
) -> None:
    """Time torch's scaled_dot_product_attention here and set it beside the estimate (needs tfcost[measure]);
    --roofline and --step measure this machine and a whole model step."""
    from tfcost.render.common import print_json
    from tfcost.render.measure import measure_csv, measure_table, progress, warn_noisy

    machine = roofline or step
    refuse_unused({
        "--save-profile": (save_profile, machine), "--profile": (profile, step and not roofline),
        "--prompt": (prompt, step), "--generate": (generate, step), "--seq": (seq, not machine),
        "--causal/--no-causal": (causal, not machine), "--backend": (backend, not machine),
        "--backward": (backward or None, not machine), "--heads": (heads, not machine),
        "--kv-heads": (kv_heads, not machine), "--head-dim": (head_dim, not machine), "--gpu": (gpu, not machine),
        "MODEL": (model, not roofline or step),
    })  # fmt: skip
    if machine:
        measure_machine(model, roofline, step, prompt or 128, generate or 32, batch, dtype, device, repeats,
                        save_profile, profile, output)  # fmt: skip
        return

    shape = attention_shape(model, heads, kv_heads, head_dim)
    if causal is None:  # as the model attends: a decoder's self-attention is causal, an encoder's is not
        from tfcost.readers.presets import load_model

        causal = model is not None and load_model(model).architecture == "decoder"
    seqs = parse_seq_list(seq or "1024,2048,4096")
    backends = list(get_args(SdpaBackend)) if backend == "all" else [backend or "auto"]
    from tfcost.hardware.host import no_gpu_driver

    if device == "cpu" or (device == "auto" and no_gpu_driver()):  # refuse before torch's import (a second or two)
        from tfcost.hardware.host import host_available_bytes
        from tfcost.reports.measure import MeasureSetup, calls_that_do_not_fit

        setup = MeasureSetup(model=model, shape=shape, batch=batch, dtype=dtype, causal=causal)
        directions: list[Direction] = ["forward", "forward+backward"] if backward else ["forward"]
        calls_that_do_not_fit(setup, seqs, directions, backends, host_available_bytes(), "this machine")
    from tfcost.measure import kernels as measure_module  # torch is imported here, and only here

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
        progress=progress,
    )
    if output == "json":
        print_json(report)
    elif output == "csv":
        measure_csv(report)
    else:
        measure_table(report, markdown=output == "markdown")
    warn_noisy(report)


def measure_machine(
    model: str | None, roofline: bool, step: bool, prompt: int, generate: int, batch: int, dtype: str,
    device: str, repeats: int | None, save_profile: str | None, profile: str | None, output: MeasureFormat,
) -> None:  # fmt: skip
    """measure --roofline and/or --step; a step without --profile measures the roofline first."""
    import datetime

    from tfcost.costs import profiles
    from tfcost.errors import TfcostError, UsageError
    from tfcost.readers.presets import resolve_model
    from tfcost.render.measure import print_machine
    from tfcost.reports.step import check_context, step_memory_bytes

    if save_profile is not None:
        profiles.check_name(save_profile)
    if step and model is None:
        raise UsageError("--step needs a MODEL")
    shape = resolve_model(model, None, ()) if step and model is not None else None
    if shape is not None:
        check_context(shape, prompt, generate)
    measured = load_profile_option(profile)
    if save_profile is not None:  # before any measuring: a measurement that cannot be kept is not started
        profiles.check_save_path(save_profile)
    from tfcost.measure import kernels as measure_module  # torch is imported here, and only here

    payload: dict[str, Any] = {}
    if roofline or measured is None:
        raw = measure_module.roofline(device, repeats)
        today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        measured = profiles.from_roofline(raw, save_profile or "this-machine", dtype, today)
        payload["roofline"] = measured.model_dump(mode="json")
    if step and shape is not None:
        from tfcost.reports.step import step_report

        setup = validated(ServingSetup, weights_dtype=dtype, kv_dtype=dtype, batch=batch, prompt=prompt,
                          generate=generate, reserve=0.0, compute_efficiency=1.0, memory_efficiency=1.0)  # fmt: skip
        needed = step_memory_bytes(shape, measured, setup, profiles.ELEMENT_BYTES[dtype])
        raw_step = measure_module.step(shape, prompt=prompt, generate=generate, batch=batch, dtype=dtype,
                                       device=device, repeats=repeats, needed_bytes=needed)  # fmt: skip
        report = step_report(shape, measured, setup, raw_step)
        payload["step"] = report.model_dump(mode="json")
        if save_profile:
            measured = measured.model_copy(update={"steps": [*measured.steps, payload["step"]]})
    if save_profile:
        try:
            payload["saved"] = str(profiles.save(measured.model_copy(update={"name": save_profile})))
        except TfcostError:
            print_machine(payload, output)  # what was measured is printed, not lost, before the one-line error
            raise
    print_machine(payload, output)


@app.command("profiles")
def list_profiles(output: FormatOption = "table") -> None:
    """Profiles saved by `tfcost measure --roofline --save-profile NAME`."""
    from tfcost.costs import profiles
    from tfcost.render.common import print_json
    from tfcost.render.listing import profiles_csv, profiles_table

    found = profiles.listing()
    if output == "json":
        print_json(found)
    elif output == "csv":
        profiles_csv(found)
    else:
        profiles_table(found, str(profiles.profiles_dir()), markdown=output == "markdown")
