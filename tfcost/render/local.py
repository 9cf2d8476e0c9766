"""`tfcost fit`'s table: the layers on the GPUs, the context, each device's memory and the tokens/s. Nothing here
computes: every number comes from tfcost.reports.local's report, printed through tfcost.units."""

from __future__ import annotations

from tfcost.render.common import neutral
from tfcost.render.layout import new_table, print_table
from tfcost.reports.local import LocalReport
from tfcost.units import human


def fit_table(report: LocalReport, markdown: bool = False) -> None:
    report = neutral(report)
    s = report.setup
    split = " + ".join(str(count) for count in report.layers_per_gpu) if len(report.layers_per_gpu) > 1 else ""
    most = f"{report.max_context:,}" if report.max_context is not None else "none"
    title = "\n".join(
        [
            f"{report.model} {report.file_type} ({human(report.file_bytes, 'bytes')}, {report.bits_per_weight:.2f} "
            f"bits/weight) on {s.gpus} x {report.gpu}, llama.cpp",
            f"-ngl {report.gpu_layers} of {report.layers}{f' (split {split})' if split else ''}"
            f"{f', the experts of {report.expert_layers_on_host} on the host' if report.expert_layers_on_host else ''}"
            f"; -c {report.context:,}"
            f" (largest that fits at this -ngl: {most}); KV cache {s.kv_dtype}; "
            f"{'flash attention' if s.flash_attn else 'no flash attention'}",
            f"{'fits' if report.fits else 'DOES NOT FIT'}",
        ]
    )
    table = new_table(markdown, title=title, title_justify="left")
    for header in ("device", "layers", "weights", "KV cache", "compute", "total", "budget"):
        table.add_column(header, justify="left" if header == "device" else "right")
    for device in report.memory:
        budget = human(device.budget_bytes, "bytes") if device.budget_bytes is not None else "-"
        table.add_row(
            device.device, str(device.layers), human(device.weights_bytes, "bytes"),
            human(device.kv_cache_bytes, "bytes"), human(device.compute_bytes, "bytes"),
            human(device.total_bytes, "bytes") + ("" if device.fits else " (over)"), budget,
        )  # fmt: skip
    speed = report.tokens_per_s
    lines = [
        f"tokens/s: prompt {speed.prompt:,.0f} (pp{s.prompt}), generation {speed.generation:,.1f} "
        f"(at depth {s.depth:,}); bandwidth x {s.memory_efficiency}, compute x {s.compute_efficiency}",
        *range_lines(report),
        *report.notes,
    ]
    print_table(table, *lines)


def range_lines(report: LocalReport) -> list[str]:
    """The validation suite's range around each tokens/s, where its category has one."""
    out = []
    for key, name in (("tokens_per_s.prompt", "prompt"), ("tokens_per_s.generation", "generation")):
        bar = report.intervals.get(key)
        if bar is not None and bar.low is not None and bar.high is not None:
            out.append(
                f"  {name}: {bar.low:,.1f} to {bar.high:,.1f} in 80% of {bar.runs} published runs' ratios "
                f"(validation's local_inference, {bar.held_out_runs} held out)"
            )
    return out
