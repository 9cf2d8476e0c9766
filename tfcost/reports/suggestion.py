"""The line `train` and `serve` print under a layout that does not fit: the nearest one that does (found by
tfcost.costs.plan), and the `tfcost plan` command that lists the rest."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Suggestion(BaseModel):
    """The nearest layout that fits, as the options that change, and the command that searches them all."""

    # Its validator is built on first use: a layout that fits never builds a Suggestion.
    model_config = ConfigDict(frozen=True, defer_build=True)

    options: list[str] = Field(description="the options to change, as typed (empty: no layout of these GPUs fits)")
    step_seconds: float | None = Field(None, description="train: its predicted step time")
    tokens_per_s_per_gpu: float | None = Field(None, description="serve: its expected tokens/s per GPU")
    memory_per_gpu_bytes: int | None = Field(None, description="what it holds per GPU")
    reason: str | None = Field(None, description="when none fits: the reason that refused the most layouts")
    command: str = Field(description="the `tfcost plan` command listing every layout that fits")
