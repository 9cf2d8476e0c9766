"""The listings: `tfcost list` (model presets), `gpus` and `profiles`, each in every format through one helper
(print_listing) that any other listing (`tfcost frameworks`) can use: rows of exact values, which are the CSV's
columns and the JSON's keys, and the table's columns, each reading a row as text. Rows are in natural order by
name, family then size (gemma-3-1b before gemma-3-12b)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from tfcost.render.common import clean, neutral, print_csv, print_json, print_rows_json
from tfcost.render.layout import new_table, optional_columns, print_table
from tfcost.schema import GpuSpec, ModelShape
from tfcost.units import Unit, human

PIECE = re.compile(r"(\d+(?:\.\d+)?)([kmbt](?![a-z]))?|([a-z]+)|([^a-z\d]+)")
SCALE = {"k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}  # a size suffix: smollm-135m before smollm-1.7b
SIZE_WORDS = ("tiny", "mini", "small", "base", "medium", "large", "xl", "xxl")  # gpt2-small before gpt2-xl


def natural_key(name: str) -> tuple[tuple[int, float, str], ...]:
    """A name's sort key, family then size: its text, and its numbers as numbers (3.1 after 3, 12 after 1), a
    number with a size suffix (135m, 1.7b) in parameters, a size word (small, medium, large, xl) in that order;
    so gemma-3-1b sorts before gemma-3-12b, llama-3-8b before llama-3-70b before llama-3.1-8b."""
    key = []
    for number, suffix, word, other in PIECE.findall(name.lower()):
        if number:
            key.append((1, float(number) * SCALE.get(suffix, 1), ""))
        elif word in SIZE_WORDS:
            key.append((0, float(SIZE_WORDS.index(word)), ""))
        else:
            key.append((0, -1.0, word or other))
    return tuple(key)


@dataclass(frozen=True)
class Column:
    """A listing's column in the table: its header, its text from a row's exact values, and its side."""

    header: str
    cell: Callable[[dict[str, Any]], str]
    justify: str = "right"


def print_listing(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[Column],
    output: str,
    title: str,
    notes: Sequence[str] = (),
    optional: Sequence[str] = (),
    document: Sequence[BaseModel] | None = None,
    fields: Sequence[str] | None = None,
) -> None:
    """A listing in the format asked, its rows sorted by natural_key of their 'name': JSON (`document`, the whole
    records where they hold more than the rows, e.g. every figure's source, else the rows), CSV (the rows, exact),
    or a table of `columns` (Markdown for documents), `optional` the columns a narrow terminal may leave out.
    `fields`: the CSV's columns, for a listing that may have no rows."""
    order = sorted(range(len(rows)), key=lambda index: natural_key(str(rows[index].get("name", ""))))
    rows = [neutral(rows[index]) for index in order]  # names and dates come from users' files
    if output == "json":
        if document is not None:
            print_json([document[index] for index in order])
        else:
            print_rows_json(rows)
        return
    if output == "csv":
        print_csv(rows, fields or (list(rows[0]) if rows else None))  # no rows: the header alone, where named
        return
    table = new_table(output == "markdown", title=clean(title), title_justify="left")
    for column in columns:
        table.add_column(column.header, justify=column.justify, no_wrap=True)
    optional_columns(table, *optional)
    for row in rows:
        table.add_row(*(column.cell(row) for column in columns))
    print_table(table, *notes)


def field(name: str, unit: Unit | None = None, suffix: str = "", missing: str = "-") -> Callable[[dict[str, Any]], str]:
    """A column's text: a row's value in its unit (tfcost.units.human), or as it is, `missing` where it has none."""

    def text(row: dict[str, Any]) -> str:
        value = row.get(name)
        if value is None:
            return missing
        return (human(value, unit) if unit else f"{value:g}" if isinstance(value, float) else str(value)) + suffix

    return text


def models_listing(models: Sequence[ModelShape], totals: Sequence[int], actives: Sequence[int], output: str) -> None:
    """`tfcost list`: each preset's name, total and active parameters, layers, width, heads and context."""
    rows = [
        {"name": model.name, "parameters": total, "active": active, "layers": model.n_layers,
         "d_model": model.d_model, "heads": model.n_heads, "kv_heads": model.n_kv_heads, "context": model.max_seq_len}
        for model, total, active in zip(models, totals, actives, strict=True)
    ]  # fmt: skip
    columns = [
        Column("name", field("name"), "left"),
        Column("parameters", field("parameters", "count")),
        Column("active", field("active", "count")),
        Column("layers", field("layers")),
        Column("d_model", field("d_model")),
        Column("heads (kv)", lambda row: f"{row['heads']} ({row['kv_heads']})"),
        Column("context", field("context", "whole")),
    ]
    optional = ("d_model", "layers", "heads (kv)", "active")
    fields = ("name", "parameters", "active", "layers", "d_model", "heads", "kv_heads", "context")
    print_listing(rows, columns, output, "model presets", optional=optional, fields=fields)


def gpus_listing(gpus: Sequence[GpuSpec], output: str) -> None:
    """`tfcost gpus`: the GPU table's dense peaks, memory and bandwidth; its JSON and CSV every field, sources too."""
    rows = [gpu.model_dump(mode="json") for gpu in gpus]
    columns = [
        Column("name", field("name"), "left"),
        Column("BF16/FP16 TFLOP/s", field("peak_bf16_tflops")),
        Column("FP8 TFLOP/s", field("peak_fp8_tflops")),
        Column("FP32 TFLOP/s", field("peak_fp32_tflops")),
        Column("memory", field("memory_gib", suffix=" GiB")),
        Column("bandwidth", field("memory_bandwidth_tb_per_s", suffix=" TB/s")),
    ]
    notes = ["'-': no verified figure. Sources and caveats: `tfcost gpus --format json`."]
    title = "GPU spec table (dense peaks, without sparsity)"
    optional = ("FP32 TFLOP/s", "FP8 TFLOP/s", "bandwidth")
    print_listing(rows, columns, output, title, notes, optional, document=list(gpus))


def profiles_listing(found: Sequence[Any], folder: str, output: str) -> None:
    """`tfcost profiles`: each saved profile's device, rates and date; its JSON the whole profiles."""
    rows = [
        {"name": profile.name, "device_name": profile.device_name, "dtype": profile.dtype,
         "copy_bytes_per_s": profile.copy_bytes_per_s,
         "decode_matmul_bytes_per_s": profile.matmul("decode").bytes_per_s,
         "prefill_matmul_flops_per_s": profile.matmul("prefill").flops_per_s,
         "tiny_kernel_us": profile.tiny_kernel_us, "date": profile.date}
        for profile in found
    ]  # fmt: skip
    columns = [
        Column("name", field("name"), "left"),
        Column("device", field("device_name"), "left"),
        Column("dtype", field("dtype"), "left"),
        Column("copy", field("copy_bytes_per_s", "bytes_per_s"), "left"),
        Column("decode matmul", field("decode_matmul_bytes_per_s", "bytes_per_s"), "left"),
        Column("prefill matmul", field("prefill_matmul_flops_per_s", "flops_per_s"), "left"),
        Column("tiny kernel", field("tiny_kernel_us", "count", " us"), "left"),
        Column("date", field("date"), "left"),
    ]
    notes = ["Use one with `tfcost serve MODEL --profile NAME`; save one with `tfcost measure --roofline "
             "--save-profile NAME`."]  # fmt: skip
    optional = ("date", "tiny kernel", "dtype", "device")
    title = f"Measured profiles ({folder})"
    print_listing(rows, columns, output, title, notes, optional, document=list(found), fields=PROFILE_CSV_FIELDS)


PROFILE_CSV_FIELDS = (
    "name", "device_name", "dtype", "copy_bytes_per_s", "decode_matmul_bytes_per_s", "prefill_matmul_flops_per_s",
    "tiny_kernel_us", "date",
)  # fmt: skip
