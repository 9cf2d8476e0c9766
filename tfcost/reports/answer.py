"""The answer `train`, `serve` and `plan` open with, before their breakdown: does the run fit and by how much, how
long or how fast, and the main term. Read off a report's own figures (nothing new is computed here but the margin,
a difference, and the main term's share, a quotient), so that the renderer, which does no arithmetic, only words
them. The JSON and CSV carry the report whole and leave these out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Memory:
    """Memory per GPU against what the GPU offers: `needed` all a GPU holds (with what a run needs beyond its
    tensors, where the report counts it), `available` the GPU's memory (serve: its usable share)."""

    fits: bool
    needed_bytes: int
    available_bytes: int
    margin_bytes: int  # available - needed: spare when fits, over (its absolute value) when not
    usable: bool  # available is the usable share (serve's reserve taken off), not the whole card


@dataclass(frozen=True)
class MainTerm:
    """The largest part of a predicted step, its seconds, and its share of the step."""

    name: str
    seconds: float
    step_seconds: float
    share: float


def train_memory(report: Any) -> Memory:
    """`train`'s memory per GPU (its analytic or transformers report): the tensors, the CUDA context and the
    allocator's reserve (costs/fit.py's fits), against the GPU's memory."""
    memory = report.memory_per_gpu
    needed = memory.total_bytes + memory.cuda_context_bytes + memory.allocator_reserve_bytes
    available = report.inputs.gpu_memory_bytes
    return Memory(memory.fits, needed, available, available - needed, usable=False)


def serve_memory(report: Any) -> Memory:
    """`serve`'s memory per GPU against its usable share: the expected figure (whole KV blocks, the CUDA context,
    the activation workspace) where the report has one, else the bound's (the transformers engine)."""
    expected = getattr(report, "expected", None)
    held = expected if expected is not None else report.memory
    needed, available = held.total_bytes_per_gpu, report.inputs.usable_bytes_per_gpu
    return Memory(held.fits, needed, available, available - needed, usable=True)


def main_term(seconds: dict[str, float]) -> MainTerm | None:
    """The largest part of a predicted step (`train`'s step.seconds, by part, with its total), or None without one."""
    parts = {name: value for name, value in seconds.items() if name != "total"}
    total = seconds.get("total", 0.0)
    if not parts or total <= 0:
        return None
    name = max(parts, key=lambda part: parts[part])
    return MainTerm(name, parts[name], total, parts[name] / total)
