"""`tfcost measure --step`: a real prefill and decode step set beside `serve`'s bound and expected times for the
same machine (its measured profile)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from tfcost.costs.profiles import Profile
from tfcost.hardware import rates as hardware
from tfcost.reports.serve import serve
from tfcost.schema import ModelShape, ServingSetup


class StepPhase(BaseModel):
    model_config = ConfigDict(frozen=True)

    measured_ms: float
    bound_ms: float
    expected_ms: float
    expected_over_measured: float


class StepReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str
    device_name: str
    torch_version: str
    profile: str
    setup: ServingSetup
    timing: str
    prefill: StepPhase
    decode: StepPhase
    notes: list[str]


def phase(measured_ms: float, bound_ms: float, expected_ms: float) -> StepPhase:
    return StepPhase(
        measured_ms=measured_ms,
        bound_ms=bound_ms,
        expected_ms=expected_ms,
        expected_over_measured=hardware.roofline_ratio(expected_ms, measured_ms),
    )


def step_report(shape: ModelShape, profile: Profile, setup: ServingSetup, raw: dict[str, object]) -> StepReport:
    """`serve` on the profile's machine (bound at its measured peaks, expected at its measured rates) beside the
    measured prefill of B x P tokens and decode step at context P + G."""
    result = serve(shape, profile.gpu_spec(), setup, profile.rates(), profile.name)
    return StepReport(
        model=shape.name,
        device_name=str(raw["device_name"]),
        torch_version=str(raw["torch_version"]),
        profile=profile.name,
        setup=setup,
        timing=str(raw["timing"]),
        prefill=phase(float(raw["prefill_ms"]), result.latency.prefill_ms, result.expected.prefill_ms),  # type: ignore[arg-type]
        decode=phase(float(raw["decode_ms"]), result.latency.decode_ms_per_token, result.expected.decode_ms_per_token),  # type: ignore[arg-type]
        notes=list(raw["notes"]),  # type: ignore[call-overload]
    )


def check_context(shape: ModelShape, prompt: int, generate: int) -> None:
    """--step runs a real model: a context P + G past the model's (max_seq_len) is refused, not measured."""
    from tfcost.errors import UsageError

    if prompt + generate > shape.max_seq_len:
        raise UsageError(
            f"--prompt {prompt:,} + --generate {generate:,} is past {shape.name}'s context of "
            f"{shape.max_seq_len:,} tokens"
        )


def step_memory_bytes(shape: ModelShape, profile: Profile, setup: ServingSetup, element_bytes: int) -> int:
    """What measure --step holds at its peak: serve's weights + KV cache + state at context P + G, plus the
    activation workspace of its widest forward (the B x (P + G - 1) tokens of history that fill the cache) and the
    B rows of fp32 logits it keeps (tfcost.costs.expected.workspace_bytes; the activations, counted there at 16
    bits, scaled to the element type measured)."""
    from tfcost.costs import expected

    held = serve(shape, profile.gpu_spec(), setup).memory.total_bytes_per_gpu
    tokens = setup.batch * (setup.prompt + setup.generate - 1)
    scale = max(element_bytes, expected.ACTIVATION_BYTES) / expected.ACTIVATION_BYTES
    activations = expected.workspace_bytes(shape, tokens, 0)  # batch 0: the activations alone
    logits = expected.workspace_bytes(shape, 0, setup.batch)  # no tokens: the fp32 logits alone
    return held + int(activations * scale) + logits
