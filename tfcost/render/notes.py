"""The lines on stderr beside a report (`tfcost: note:`, `tfcost: warning:`, `tfcost: error:`), and a model as
a preset file. No rich here, so that an error can never fail to print.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel

from tfcost.errors import redact_credentials
from tfcost.render.common import clean
from tfcost.reports.base import SourceNotes
from tfcost.schema import ModelShape
from tfcost.units import human

if TYPE_CHECKING:
    from tfcost.readers.presets import ModelSource


def source_notes(ignored: Sequence[str], not_priced: Sequence[str]) -> list[str]:
    """The notes on a model's source: config keys ignored, multimodal towers not priced."""
    notes = []
    if ignored:
        notes.append(f"ignored config fields (tfcost does not use them; --strict refuses): {', '.join(ignored)}")
    if not_priced:
        notes.append(f"not priced: {', '.join(not_priced)}; every figure is the language model's")
    return [clean(note) for note in notes]


def print_source_notes(source: ModelSource) -> None:
    """One `tfcost: note:` line on stderr per note, never on stdout (which may carry JSON or YAML)."""
    for note in [*source_notes(source.ignored_fields, source.not_priced), *map(clean, source.notes)]:
        sys.stderr.write(f"tfcost: note: {clean(source.shape.name)}: {note}\n")


def print_report_notes(report: BaseModel) -> None:
    """What a report's source said that was not used (config keys ignored, towers not priced), and a Hub
    checkpoint's stored bytes: `tfcost: note:` lines on stderr, never on stdout (which may carry JSON or YAML)."""
    if not isinstance(report, SourceNotes):  # the transformers engine's reports carry no source notes
        return
    for note in [*source_notes(report.ignored_fields, report.not_priced), *map(clean, report.quantization_notes)]:
        sys.stderr.write(f"tfcost: note: {clean(getattr(report, 'model', ''))}: {note}\n")
    print_checkpoint_check(report)


def print_note(note: str) -> None:
    """One `tfcost: note:` line on stderr."""
    sys.stderr.write(f"tfcost: note: {clean(note)}\n")


def print_context_warning(report: BaseModel) -> None:
    """A `tfcost: warning:` line on stderr when the tokens asked for pass the model's own context (the report's
    context_warning). Never a refusal: the figures are for the length asked, which is how one prices a context
    extension; the warning says the model was not built for it."""
    warning = getattr(report, "context_warning", None)
    if warning:
        sys.stderr.write(f"tfcost: warning: {clean(getattr(report, 'model', ''))}: {clean(warning)}\n")


def print_checkpoint_check(report: SourceNotes) -> None:
    """A Hub checkpoint's stored bytes beside tfcost's figure for the same weights, on stderr."""
    if report.checkpoint_bytes is None or report.checkpoint_bytes_estimate is None:
        return
    stored, estimate = report.checkpoint_bytes, report.checkpoint_bytes_estimate
    sys.stderr.write(
        f"tfcost: note: the checkpoint's safetensors index holds {stored:,} bytes of tensors "
        f"({human(stored, 'bytes')}); tfcost counts {estimate:,} ({human(estimate, 'bytes')}) "
        "for its weights as stored\n"
    )


def print_error(message: str) -> None:
    """One line on stderr, whatever the message quotes (a key or a name may hold a newline): characters that would
    not print as themselves are written as escapes. No rich here, so that an error can never fail to print."""
    sys.stderr.write(f"tfcost: error: {clean(redact_credentials(message))}\n")


def print_preset_yaml(shape: ModelShape, ignored: Sequence[str] = (), not_priced: Sequence[str] = ()) -> None:
    """A model as a preset file: every field that differs from its default, in schema order, after a comment per
    note on its source."""
    import yaml

    class PresetDumper(yaml.SafeDumper):
        """Mappings as blocks, lists of layer indices on one line, as the shipped presets are written."""

    PresetDumper.add_representer(
        list, lambda dumper, items: dumper.represent_sequence("tag:yaml.org,2002:seq", items, flow_style=True)
    )
    document = shape.model_dump(mode="json", exclude_defaults=True)
    sys.stdout.write("".join(f"# {note}\n" for note in source_notes(ignored, not_priced)))
    sys.stdout.write(yaml.dump(document, Dumper=PresetDumper, sort_keys=False, default_flow_style=False, width=120))
