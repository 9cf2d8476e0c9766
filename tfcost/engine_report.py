"""What the transformers engine reports, and `tfcost check`: the two engines side by side.

The engine's totals keep the analytic report's keys (params.total, flops.forward_per_sequence, kv_cache.bytes_per_token,
...) so that a script reads either the same way; `engine` says which answered. Pure: numbers in, report objects out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from tfcost import flops
from tfcost.report import Estimate, Section, quantity
from tfcost.schema import Workload
from tfcost.units import Unit

if TYPE_CHECKING:
    from tfcost.engine_hf import EngineTotals


class EngineParams(Section):
    total: int = quantity("total parameters (transformers: sum of model.parameters())", "count")


class EngineFlops(Section):
    forward_per_sequence: int = quantity("forward, one sequence (FlopCounterMode)", "flops")
    training_per_sequence: int = quantity("training, one sequence (3x forward)", "flops")


class EngineKvCache(Section):
    bytes_per_token: int = quantity("KV cache per token (what grows with T)", "bytes")
    state_bytes: int = quantity("recurrent state, batch (what does not grow with T)", "bytes")
    bytes: int = quantity("KV cache, batch x T tokens (what grows with T)", "bytes")


class EngineEstimate(Section):
    """`tfcost estimate` answered by the transformers engine: the totals it measures, under the analytic keys."""

    model: str
    source: str | None
    engine: str = "transformers"
    workload: Workload
    params: EngineParams
    flops: EngineFlops
    kv_cache: EngineKvCache


ENGINE_SECTIONS: dict[str, str] = {"params": "Parameters", "flops": "FLOPs", "kv_cache": "Cache"}
ENGINE_NOTE = (
    "engine: transformers (the model built from its config on the meta device, no weights: parameters summed, "
    "forward FLOPs counted by FlopCounterMode, the cache it returns measured at T and T + 1). Per-part breakdowns, "
    "the score matrix, train and serve need tfcost's own reader."
)


def engine_estimate(name: str, source: str | None, totals: EngineTotals, workload: Workload) -> EngineEstimate:
    """The engine's totals for one model under one workload (T and dtype as measured, B sequences)."""
    return EngineEstimate(
        model=name,
        source=source,
        workload=workload,
        params=EngineParams(total=totals.params_total),
        flops=EngineFlops(
            forward_per_sequence=totals.forward_flops,
            training_per_sequence=flops.training_flops_from_forward(totals.forward_flops),
        ),
        kv_cache=EngineKvCache(
            bytes_per_token=totals.kv_bytes_per_token,
            state_bytes=workload.batch * totals.state_bytes,
            bytes=workload.batch * totals.kv_bytes_per_token * workload.seq_len,
        ),
    )


class CheckRow(Section):
    quantity: str
    label: str
    unit: Unit
    analytic: int
    transformers: int
    difference: int  # transformers - analytic


class CheckReport(Section):
    """`tfcost check`: tfcost's own reader against transformers' implementation, quantity by quantity."""

    model: str
    source: str | None
    workload: Workload
    rows: list[CheckRow]
    agree: bool


# The quantities both engines report, by their shared key, in the same terms (KV apart from the fixed state).
CHECKED = (
    "params.total",
    "flops.forward_per_sequence",
    "kv_cache.bytes_per_token",
    "kv_cache.bytes",
    "kv_cache.state_bytes",
)


# A cache that steps every m positions (compressed attention) has no per-token part to set beside the engine's
# (its growth from T to T + 1): the two are compared on what is held after T tokens, cache and state together.
HELD = "kv_cache.held_bytes"
HELD_LABEL = "KV cache and state held after T tokens (the cache steps every few tokens: no per-token split)"


def check_report(analytic: Estimate, engine: EngineEstimate) -> CheckReport:
    """Each shared quantity from both engines, with transformers' value minus tfcost's; for a stepped cache, the
    bytes held after T tokens in place of the per-token split."""
    stepped = analytic.kv_cache.bytes_per_token is None
    rows = []
    for key in CHECKED:
        if stepped and key.startswith("kv_cache."):
            continue
        section, name = key.split(".")
        ours, theirs = getattr(analytic, section), getattr(engine, section)
        field = type(theirs).model_fields[name]
        extra = field.json_schema_extra
        assert isinstance(extra, dict)  # every quantity() field carries its unit
        unit = cast(Unit, extra["unit"])
        mine, real = getattr(ours, name), getattr(theirs, name)
        rows.append(
            CheckRow(quantity=key, label=field.description or key, unit=unit, analytic=mine, transformers=real,
                     difference=real - mine)
        )  # fmt: skip
    if stepped:
        mine = analytic.kv_cache.bytes + analytic.kv_cache.state_bytes
        real = engine.kv_cache.bytes + engine.kv_cache.state_bytes
        rows.append(
            CheckRow(quantity=HELD, label=HELD_LABEL, unit="bytes", analytic=mine, transformers=real,
                     difference=real - mine)
        )  # fmt: skip
    return CheckReport(
        model=analytic.model,
        source=analytic.source,
        workload=analytic.workload,
        rows=rows,
        agree=all(row.difference == 0 for row in rows),
    )
