"""`tfcost train --max-seq`: the longest sequence a training setup fits at (issue 36), searched over T with the
training report's own memory and fit (tfcost.reports.train), nothing of its own."""

from __future__ import annotations

from pydantic import Field

from tfcost.reports.base import Section, quantity
from tfcost.schema import TrainingSetup


class MaxSeqReport(Section):
    model: str
    gpu: str
    max_seq: int | None = quantity("the longest T that fits (null: none does)", "count")
    searched_to: int = quantity("the longest T searched (the model's context unless --max-seq-limit)", "count")
    memory_per_gpu_bytes: int = quantity("memory per GPU at that T", "bytes")
    setup: TrainingSetup = Field(description="the setup at that T")
