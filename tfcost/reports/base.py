"""What every report is built from: its sections' base, the notes on its model's source that each carries (with
--explain's lines, tfcost.reports.explain), the quantity field (a label and a unit), and the stepped-cache note
that estimate and serve both print.

Here rather than in estimate.py and explain.py, so that `train` and `serve` build none of estimate's report
classes (~4 ms) and import the working's module only for --explain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from tfcost.core import memory, weights
from tfcost.reports.stored import StoredReport, stored_report
from tfcost.schema import FrameworkUsed, Interval
from tfcost.units import Unit

if TYPE_CHECKING:
    from tfcost.readers.presets import ModelSource
    from tfcost.schema import ModelShape


@dataclass(frozen=True)
class Line:
    """One explained quantity: `quantity = formula = working = result`, and where the formula comes from."""

    quantity: str
    formula: str
    working: str  # the formula with the model's numbers: an arithmetic expression equal to `value`
    value: int | float
    result: str  # the value in its unit, as the tables print it
    source: str


def quantity(label: str, unit: Unit) -> Any:
    """A reported number: its label and unit travel with it."""
    return Field(description=label, json_schema_extra={"unit": unit})


def optional_quantity(label: str, unit: Unit) -> Any:
    """A reported number that only some setups have (None otherwise): left out of the JSON when None."""
    return Field(
        default=None, description=label, json_schema_extra={"unit": unit}, exclude_if=lambda value: value is None
    )


class Section(BaseModel):
    # Validators are built on first use, so a command builds only the reports it prints (estimate: 4 ms less).
    model_config = ConfigDict(frozen=True, defer_build=True)


class PricedUnder(BaseModel):
    """What every run's report says of how it was priced: the framework whose conventions priced it and the error bar
    of each predicted figure. A mixin of the train, serve and plan reports."""

    framework: FrameworkUsed | None = Field(
        default=None,
        description="the framework (trainer or engine, at a version) whose conventions priced the run, each with its "
        "source; name null: none was given, and these are tfcost's defaults",
        exclude_if=lambda framework: framework is None,
    )
    intervals: dict[str, Interval] = Field(
        default_factory=dict,
        description="error bars: for each predicted figure (its JSON path, or a plan layout's field), the range the "
        "validation suite measured around predictions of its category (tfcost.costs.intervals)",
        exclude_if=lambda intervals: not intervals,
    )


class SourceNotes(Section):
    """What a model's config said that tfcost did not use: every report carries it."""

    ignored_fields: list[str] = Field(
        default_factory=list, description="config.json keys ignored (tfcost does not use them; --strict refuses)"
    )
    not_priced: list[str] = Field(
        default_factory=list, description="parts of a multimodal model left out of every figure (its towers)"
    )
    context_warning: str | None = Field(
        default=None,
        description="the tokens asked for pass the model's own context: priced as asked, never refused (stderr)",
        exclude=True,
    )
    quantization_notes: list[str] = Field(
        default_factory=list,
        description="quantization_config module-list entries tfcost could not place (priced as converted)",
        exclude_if=lambda notes: not notes,
    )
    checkpoint_bytes: int | None = Field(
        default=None, description="a Hub checkpoint's stored bytes, from its model.safetensors.index.json"
    )
    checkpoint_bytes_estimate: int | None = Field(
        default=None,
        description="tfcost's bytes of the same weights as stored (16-bit, or its quantization), to set beside it",
    )
    stored: StoredReport | None = Field(
        default=None,
        description="a local model's stored bytes, from its files' headers (tfcost.reports.stored)",
        exclude_if=lambda stored: stored is None,
    )
    explain: list[Line] | None = Field(
        default=None,
        description="--explain: each quantity's formula, the model's numbers and the result",
        exclude_if=lambda lines: lines is None,  # only --explain adds the key to the JSON
    )


ReportT = TypeVar("ReportT", bound=SourceNotes)


def with_source(report: ReportT, source: ModelSource, tokens: int | None = None, tokens_are: str = "T") -> ReportT:
    """The report with its model source's notes, and a warning where the `tokens` asked for (T, or P + G) pass the
    model's own context (its max_seq_len: the position table or the length it was trained at)."""
    notes: dict[str, Any] = {
        "ignored_fields": source.ignored_fields,
        "not_priced": source.not_priced,
        "quantization_notes": source.notes,
    }
    context = source.shape.max_seq_len
    if tokens is not None and tokens > context:
        notes["context_warning"] = (
            f"{tokens_are} = {tokens:,} tokens passes the model's context of {context:,}; the figures are for the "
            "length asked, which the model was not built for"
        )
    if source.checkpoint_bytes is not None:
        notes["checkpoint_bytes"] = source.checkpoint_bytes
        notes["checkpoint_bytes_estimate"] = weights.checkpoint_weight_bytes(source.shape)
    if source.stored is not None:
        notes["stored"] = stored_report(source.stored, source.shape)
    return report.model_copy(update=notes)


def stepped_cache_note(shape: ModelShape, tokens: int) -> str | None:
    """What to say of a cache that steps every m positions (memory.cache_steps: compressed attention), whose bytes
    per token are no fixed figure; None for every other cache."""
    steps = memory.cache_steps(shape)
    if not steps:
        return None
    every = " and ".join(f"{step:,}" for step in steps)
    return (
        f"The KV cache steps every {every} positions (compressed attention: one entry per window, the window not "
        "yet closed buffered, the raw keys of the sliding window only), so it has no fixed bytes per token: the "
        f"cache shown is what is held after {tokens:,} tokens, and the recurrent state is the fixed overlap state."
    )
