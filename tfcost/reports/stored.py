"""The stored-bytes report: what a model's files hold (tfcost.core.stored over tfcost.readers.safetensors), as
`tfcost inspect` prints it and as `estimate` and `serve` add it when their model is a folder or a GGUF file."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from tfcost.core import weights
from tfcost.schema import ModelShape

if TYPE_CHECKING:
    from tfcost.readers.presets import ModelSource
    from tfcost.readers.safetensors import StoredFiles
from tfcost.units import Unit

UNACCOUNTED_SHOWN = 20  # names of tensors outside the op tables listed; the rest are counted


def quantity(label: str, unit: Unit) -> Any:
    return Field(description=label, json_schema_extra={"unit": unit})


class StoredReport(BaseModel):
    """Bytes as the files store them, beside tfcost's figures for the same model."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    files: list[str] = Field(description="the files read (headers only)")
    tensors: int = quantity("tensors stored", "count")
    total_bytes: int = quantity("stored, every tensor", "bytes")
    served_bytes: int = quantity("held when served (all but an MTP module)", "bytes")
    estimate_bytes: int | None = quantity("tfcost's weights as stored, from the config", "bytes")
    unaccounted_bytes: int = quantity("outside the op tables (MTP, towers, unplaced)", "bytes")
    by_dtype: dict[str, int] = quantity("by dtype", "bytes")
    by_part: dict[str, int] = quantity("by part", "bytes")
    weights_by_part: dict[str, int] = quantity("stored weights by part (unpacked)", "count")
    params_by_part: dict[str, int] = quantity("op table's parameters by part", "count")
    unaccounted: list[str] = Field(description=f"tensors outside the op tables (the first {UNACCOUNTED_SHOWN})")


def stored_report(files: StoredFiles, shape: ModelShape | None) -> StoredReport:
    """The report of a model's stored tensors; with its shape, tfcost's figures beside them."""
    # Imported here: every report can carry this one (estimate, serve), but only a local model's files build it,
    # and the sums' module with the file readers under it cost a command ~2.5 ms to import.
    from tfcost.core import stored

    summed = stored.stored_bytes(files.tensors, shape)
    return StoredReport(
        files=files.files,
        tensors=len(files.tensors),
        total_bytes=summed.total,
        served_bytes=summed.served_bytes,
        estimate_bytes=weights.checkpoint_weight_bytes(shape) if shape is not None else None,
        unaccounted_bytes=summed.unaccounted_bytes,
        by_dtype=summed.by_dtype,
        by_part=summed.by_part,
        weights_by_part=summed.elements_by_part,
        params_by_part=summed.params_by_part,
        unaccounted=summed.unaccounted[:UNACCOUNTED_SHOWN],
    )


class InspectReport(BaseModel):
    """`tfcost inspect`: a checkpoint's stored bytes, and the model its files hold where they say."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    checkpoint: str
    model: str | None
    source: str | None
    parameters: int | None = Field(description="tfcost's total parameters of the model, where the files name it")
    stored: StoredReport


def inspect_report(checkpoint: str, files: StoredFiles, source: ModelSource | None) -> InspectReport:
    from tfcost.core.params import total_params

    shape = source.shape if source is not None else None
    return InspectReport(
        checkpoint=checkpoint,
        model=shape.name if shape is not None else None,
        source=shape.source if shape is not None else None,
        parameters=total_params(shape) if shape is not None else None,
        stored=stored_report(files, shape),
    )
