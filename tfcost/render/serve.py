"""`tfcost serve`: the serving latency, throughput and memory, by the analytic model or the transformers engine."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tfcost.render.answer import print_answer, serve_answer
from tfcost.render.common import CONVENTIONS, neutral
from tfcost.render.sections import default, images_suffix, sections_table

if TYPE_CHECKING:
    from tfcost.engines.report import EngineServeReport
    from tfcost.reports.serve import ServeReport


def serve_title(result: ServeReport | EngineServeReport, where: str) -> str:
    """The lines above a serve table: the model and where it runs, the workload, the dtypes and the assumptions."""
    s = result.setup
    return "\n".join(
        [
            f"{result.model}: serving on {where}",
            f"B = {s.batch:,} sequences, P = {s.prompt:,} prompt + G = {s.generate:,} generated tokens each"
            + images_suffix(s),
            f"weights {result.weights_format}, KV cache {s.kv_dtype}, matmuls at the {result.compute_dtype} peak",
            f"reserve {s.reserve:.0%}, compute efficiency {s.compute_efficiency:g}, "
            f"memory efficiency {s.memory_efficiency:g}",
        ]
    )


def serve_table(result: ServeReport, markdown: bool = False) -> None:
    from tfcost.reports.serve import SERVE_SECTIONS

    result = neutral(result)
    print_answer(serve_answer(result), markdown)
    s = result.setup
    where = f"{s.gpus} x {result.gpu} (tensor parallel)"
    if s.pp > 1 or s.ep > 1:
        where += f" in each of {s.pp} pipeline stage{'s' if s.pp > 1 else ''}, experts over {s.ep} GPUs a stage"
    title = serve_title(result, where)
    notes = [
        "Bound: the roofline, max(FLOPs / reachable peak, bytes / reachable bandwidth) per GPU; no engine beats it.",
        "Expected: the kernels at the rates real kernels reach, plus a per-step floor, tensor-parallel all-reduces, "
        "dequantization; memory in whole KV blocks plus the CUDA context and activation workspace.",
        f"Defaults: reserve {default(s, 'reserve'):.0%} (vLLM's gpu_memory_utilization 0.9); compute and memory "
        f"efficiency {default(s, 'compute_efficiency'):g} and {default(s, 'memory_efficiency'):g} (llm-analysis "
        "README: up to 0.7 for inference, 0.9 an aggressive memory target). Every formula: docs/serving.md.",
        CONVENTIONS,
    ]
    if result.memory.kv_cache_note:
        notes.insert(0, result.memory.kv_cache_note)
    sections_table(result, SERVE_SECTIONS, title, notes, markdown)


def engine_serve_table(result: EngineServeReport, markdown: bool = False) -> None:
    """`tfcost serve` by the transformers engine: the title as the analytic table's, its sections and its note."""
    from tfcost.engines.report import ENGINE_SERVE_NOTE, ENGINE_SERVE_SECTIONS

    result = neutral(result)
    print_answer(serve_answer(result), markdown)
    title = serve_title(result, f"1 x {result.gpu}")
    notes = [*([f"source: {result.source}"] if result.source else []), ENGINE_SERVE_NOTE, CONVENTIONS]
    sections_table(result, ENGINE_SERVE_SECTIONS, title, notes, markdown)
