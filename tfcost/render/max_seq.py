"""`tfcost train --max-seq`'s answer: the longest sequence a training setup fits at. Nothing here computes."""

from __future__ import annotations

import sys

from tfcost.render.common import neutral
from tfcost.reports.max_seq import MaxSeqReport
from tfcost.units import human


def max_seq_table(report: MaxSeqReport, markdown: bool = False) -> None:
    report = neutral(report)
    s = report.setup
    setup = f"micro-batch {s.micro_batch}, recompute {s.recompute}, loss {s.loss}" + (
        f", LoRA r={s.lora_rank}{' (QLoRA)' if s.qlora else ''}" if s.lora_rank else ""
    )
    if report.max_seq is None:
        line = f"{report.model} on {s.gpus} x {report.gpu} ({setup}): no sequence fits, not even one token"
    else:
        line = (
            f"{report.model} on {s.gpus} x {report.gpu} ({setup}): the longest sequence that fits is "
            f"{report.max_seq:,} tokens (searched to {report.searched_to:,}), "
            f"{human(report.memory_per_gpu_bytes, 'bytes')} per GPU"
        )
    sys.stdout.write(("**" + line + "**" if markdown else line) + "\n")
