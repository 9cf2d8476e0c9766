"""The listings: `tfcost list` (model presets), `gpus` and `profiles`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tfcost.render.common import clean, neutral, print_csv
from tfcost.render.layout import new_table, optional_columns, print_table
from tfcost.schema import GpuSpec, ModelShape
from tfcost.units import human


def models_csv(models: Sequence[ModelShape], totals: Sequence[int], actives: Sequence[int]) -> None:
    """`tfcost list --format csv`: the table's columns, exact."""
    models = neutral(list(models))
    rows = [
        {"name": model.name, "parameters": total, "active": active, "layers": model.n_layers,
         "d_model": model.d_model, "heads": model.n_heads, "kv_heads": model.n_kv_heads, "context": model.max_seq_len}
        for model, total, active in zip(models, totals, actives, strict=True)
    ]  # fmt: skip
    print_csv(rows, ["name", "parameters", "active", "layers", "d_model", "heads", "kv_heads", "context"])


def models_table(
    models: Sequence[ModelShape], totals: Sequence[int], actives: Sequence[int], markdown: bool = False
) -> None:
    models = neutral(list(models))
    table = new_table(markdown, title="model presets", title_justify="left")
    for name, justify in (
        ("name", "left"),
        ("parameters", "right"),
        ("active", "right"),
        ("layers", "right"),
        ("d_model", "right"),
        ("heads (kv)", "right"),
        ("context", "right"),
    ):
        table.add_column(name, justify=justify, no_wrap=True)
    optional_columns(table, "d_model", "layers", "heads (kv)", "active")
    for model, total, active in zip(models, totals, actives, strict=True):
        table.add_row(
            model.name,
            human(total, "count"),
            human(active, "count"),
            str(model.n_layers),
            str(model.d_model),
            f"{model.n_heads} ({model.n_kv_heads})",
            f"{model.max_seq_len:,}",
        )
    print_table(table)


def gpus_table(gpus: Sequence[GpuSpec], markdown: bool = False) -> None:
    gpus = neutral(list(gpus))
    table = new_table(markdown, title="GPU spec table (dense peaks, without sparsity)", title_justify="left")
    for name in ("name", "BF16/FP16 TFLOP/s", "FP8 TFLOP/s", "FP32 TFLOP/s", "memory", "bandwidth"):
        table.add_column(name, justify="left" if name == "name" else "right", no_wrap=True)
    optional_columns(table, "FP32 TFLOP/s", "FP8 TFLOP/s", "bandwidth")

    def tflops(value: float | None) -> str:
        return "-" if value is None else f"{value:g}"

    for gpu in gpus:
        table.add_row(
            gpu.name,
            tflops(gpu.peak_bf16_tflops),
            tflops(gpu.peak_fp8_tflops),
            tflops(gpu.peak_fp32_tflops),
            f"{gpu.memory_gib:g} GiB",
            f"{gpu.memory_bandwidth_tb_per_s:g} TB/s",
        )
    print_table(table, "'-': no verified figure. Sources and caveats: `tfcost gpus --format json`.")


def profiles_table(found: Sequence[Any], folder: str, markdown: bool = False) -> None:
    found = neutral(list(found))  # a shared profile's fields are outside text
    table = new_table(markdown, title=f"Measured profiles ({clean(folder)})", title_justify="left")
    for name in ("name", "device", "dtype", "copy", "decode matmul", "prefill matmul", "tiny kernel", "date"):
        table.add_column(name, no_wrap=True)
    optional_columns(table, "date", "tiny kernel", "dtype", "device")
    for profile in found:
        table.add_row(
            profile.name,
            profile.device_name,
            profile.dtype,
            human(profile.copy_bytes_per_s, "bytes_per_s"),
            human(profile.matmul("decode").bytes_per_s, "bytes_per_s"),
            human(profile.matmul("prefill").flops_per_s, "flops_per_s"),
            human(profile.tiny_kernel_us, "count") + " us",
            profile.date,
        )
    print_table(table, "Use one with `tfcost serve MODEL --profile NAME`; save one with `tfcost measure --roofline "
                "--save-profile NAME`.")  # fmt: skip


PROFILE_CSV_FIELDS = (
    "name", "device_name", "dtype", "copy_bytes_per_s", "decode_matmul_bytes_per_s", "prefill_matmul_flops_per_s",
    "tiny_kernel_us", "date",
)  # fmt: skip


def profiles_csv(found: Sequence[Any]) -> None:
    """The profiles table's columns, exact (the whole profile: `tfcost profiles --format json`)."""
    found = neutral(list(found))
    rows = [
        dict(zip(PROFILE_CSV_FIELDS, (
            profile.name, profile.device_name, profile.dtype, profile.copy_bytes_per_s,
            profile.matmul("decode").bytes_per_s, profile.matmul("prefill").flops_per_s, profile.tiny_kernel_us,
            profile.date,
        ), strict=True))
        for profile in found
    ]  # fmt: skip
    print_csv(rows, PROFILE_CSV_FIELDS)
