"""`tfcost train`: the training time and memory per GPU, by the analytic model or the transformers engine."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tfcost.render.answer import print_answer, train_answer
from tfcost.render.common import CONVENTIONS, neutral
from tfcost.render.sections import images_suffix, sections_table
from tfcost.units import human

if TYPE_CHECKING:
    from tfcost.engines.report import EngineTrainReport
    from tfcost.reports.train import TrainReport


def train_title(result: TrainReport | EngineTrainReport) -> list[str]:
    """The first lines above a train table: the model and GPUs, D and T (saying which are the defaults)."""
    s = result.setup
    tokens, seq = result.notes.get("tokens", ""), result.notes.get("seq_len", "")
    return [
        f"{result.model}: training on {s.gpus:,} x {result.gpu}",
        f"D = {human(s.tokens, 'count')} tokens{tokens}",
        f"T = {s.seq_len:,} tokens per sequence{seq}{images_suffix(s)}; micro-batch {s.micro_batch}",
    ]


def train_table(result: TrainReport, markdown: bool = False) -> None:
    from tfcost.reports.train import TRAIN_SECTIONS

    result = neutral(result)
    print_answer(train_answer(result), markdown)
    s = result.setup
    title = "\n".join(
        [
            *train_title(result),
            f"{s.gpus:,} GPUs = {result.inputs.data_parallel:,} data-parallel x tp {s.tp} x pp {s.pp}"
            f"{f' x cp {s.cp}' if s.cp > 1 else ''}; ZeRO-{s.zero}{result.notes.get('zero', '')}; {s.optimizer}, "
            f"{s.precision}",
            f"global batch {result.inputs.global_batch:,} sequences{result.notes.get('global_batch', '')}",
            f"recompute {s.recompute}; {'sequence parallel; ' if s.sequence_parallel else ''}"
            f"{'flash attention' if s.flash else 'no flash attention'}"
            f"{' (FlashAttention-1 class)' if s.flash and s.flash_kernel == 'fa1' else ''}; "
            f"{result.time.throughput_from}",
        ]
    )
    notes = [
        "Model FLOPs: matmuls only, 2*m*k*n each, full T x T scores (the MFU convention); backward = 2 x forward.",
        "Memory per GPU: ZeRO Fig. 1 for model states, Korthikanti et al. 2022 for activations. "
        "Every formula: docs/training.md.",
        *([f"Images: {result.notes['images']}."] if "images" in result.notes else []),
        CONVENTIONS,
    ]
    sections_table(result, TRAIN_SECTIONS, title, notes, markdown)


def engine_train_table(result: EngineTrainReport, markdown: bool = False) -> None:
    """`tfcost train` by the transformers engine: the title as the analytic table's, its sections and its note."""
    from tfcost.engines.report import ENGINE_TRAIN_NOTE, ENGINE_TRAIN_SECTIONS

    result = neutral(result)
    print_answer(train_answer(result), markdown)
    s = result.setup
    title = "\n".join(
        [
            *train_title(result),
            f"{s.gpus:,} GPUs, data parallel; ZeRO-{s.zero}; {s.optimizer}, {s.precision}",
            f"{'flash attention' if s.flash else 'no flash attention'}; {result.time.throughput_from}",
        ]
    )
    notes = [*([f"source: {result.source}"] if result.source else []), ENGINE_TRAIN_NOTE, CONVENTIONS]
    sections_table(result, ENGINE_TRAIN_SECTIONS, title, notes, markdown)
