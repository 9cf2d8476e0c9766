"""What every renderer shares: outside text made safe (clean, neutral), the units' conventions line, and the
JSON and CSV writers. Nothing here computes: every number comes from a result object of the core, and each is
printed through tfcost.units in its labelled unit (SI for counts and FLOPs, IEC for bytes).
"""

from __future__ import annotations

import csv
import dataclasses
import math
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pydantic import BaseModel

from tfcost import __version__
from tfcost.errors import TfcostError
from tfcost.render import safe_text
from tfcost.units import Unit

CONVENTIONS = (
    "FLOPs are 2*m*k*n per matmul (not MACs). Counts and FLOPs in SI units (G = 10^9), bytes in IEC units "
    "(MiB = 2^20 B); --format json gives exact integers."
)


def clean(text: str) -> str:
    """Text from outside made safe to print to a terminal (tfcost.render.safe_text.terminal, the one place)."""
    return safe_text.terminal(text)


NOT_FINITE = "a result is not a finite number; is an option extreme?"


def neutral(value: Any) -> Any:
    """A result whose every string, however deeply nested, has been through clean(), refused if it holds a number
    that is not finite (an MFU of 5e-324 makes a time infinite), as JSON refuses it. Every renderer of text applies
    it to what it is given, before any layout, so no format can forget a field. What needs no change is returned
    as it is (the same object), so a clean result, the common case, is walked but never copied."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TfcostError(NOT_FINITE)
        return value
    if isinstance(value, int | bool) or value is None:
        return value
    if isinstance(value, BaseModel):
        changed = changed_fields(value, type(value).model_fields)
        return value.model_copy(update=changed) if changed else value
    if isinstance(value, dict):
        items = [(neutral(key), neutral(item)) for key, item in value.items()]
        same = all(new[0] is old[0] and new[1] is old[1] for new, old in zip(items, value.items(), strict=True))
        return value if same else dict(items)
    if isinstance(value, list | tuple):
        cleaned = [neutral(item) for item in value]
        return value if all(new is old for new, old in zip(cleaned, value, strict=True)) else type(value)(cleaned)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # a sweep's report and its crossovers
        changed = changed_fields(value, [field.name for field in dataclasses.fields(value)])
        return dataclasses.replace(value, **changed) if changed else value
    return value


def changed_fields(value: Any, names: Iterable[str]) -> dict[str, Any]:
    """The fields of a model or dataclass that neutral() changes, with their new values."""
    changed = {}
    for name in names:
        item = getattr(value, name)
        new = neutral(item)
        if new is not item:
            changed[name] = new
    return changed


def csv_cell(value: Any) -> Any:
    """A CSV cell: text through safe_text.csv_cell (no formula a spreadsheet would run); booleans are JSON's true
    and false; numbers as they are (a negative number is a number, not a formula)."""
    import json  # the JSON and CSV paths only: a table need not import it

    if isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, list | tuple):  # a GPU's device-name patterns: one cell, the items apart
        value = "; ".join(str(item) for item in value)
    return safe_text.csv_cell(value) if isinstance(value, str) else value


def print_csv(rows: Sequence[dict[str, Any]], fields: Sequence[str] | None = None) -> None:
    """One header line, then a line per row; null is an empty cell, booleans are JSON's true and false."""
    if not rows and fields is None:
        return
    names = list(fields or rows[0])
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow([csv_cell(name) for name in names])  # a column may be named after a model from a file
    writer.writerows([csv_cell(row.get(name)) for name in names] for row in rows)


def print_json(payload: BaseModel | Sequence[BaseModel]) -> None:
    """Exact integers, with the tool's version so a saved file says what produced it."""
    import json  # the JSON and CSV paths only: a table need not import it

    if isinstance(payload, BaseModel):
        document: Any = {"tfcost_version": __version__, **payload.model_dump(mode="json")}
    else:
        document = {"tfcost_version": __version__, "results": [item.model_dump(mode="json") for item in payload]}
    try:
        text = json.dumps(document, indent=2, allow_nan=False)
    except ValueError:  # an extreme option (an efficiency of 1e-320) overflowed a float result to infinity
        raise TfcostError(NOT_FINITE) from None
    sys.stdout.write(text + "\n")


def print_plain_json(payload: dict[str, Any]) -> None:
    """measure --roofline/--step: their results as JSON, with the version (a table would repeat the same rows)."""
    import json  # the JSON and CSV paths only: a table need not import it

    print(json.dumps({"tfcost_version": __version__, **payload}, indent=2))


def report_rows(result: BaseModel, prefix: str = "") -> Iterator[tuple[str, str, Unit, Any]]:
    """(key, label, unit, value) of every quantity of a report, however deeply its sections nest: the rows of its
    CSV, keyed as in its JSON (flops.forward_per_sequence; a breakdown's items as flops.forward.attention)."""
    for name, field in type(result).model_fields.items():
        value = getattr(result, name)
        extra = field.json_schema_extra
        if isinstance(extra, dict) and "unit" in extra:
            unit: Unit = extra["unit"]  # type: ignore[assignment]
            if value is None:
                continue
            if isinstance(value, dict):
                for item, amount in value.items():
                    yield f"{prefix}{name}.{item}", f"{field.description}: {item}", unit, amount
            else:
                yield f"{prefix}{name}", field.description or name, unit, value
        elif isinstance(value, BaseModel):
            yield from report_rows(value, f"{prefix}{name}.")


REPORT_CSV_FIELDS = ("model", "quantity", "label", "unit", "value")


def report_csv(result: BaseModel) -> None:
    """A report as CSV: a row per quantity, exact values, each row naming the model so a saved file stands alone.
    A check report: a row per compared quantity, both engines' values and the difference."""
    result = neutral(result)
    model = getattr(result, "model", "")
    rows_of_check = getattr(result, "rows", None)
    if rows_of_check is not None:
        print_csv([{"model": model, **row.model_dump(mode="json")} for row in rows_of_check])
        return
    print_csv(
        [
            dict(zip(REPORT_CSV_FIELDS, (model, key, label, unit, value), strict=True))
            for key, label, unit, value in report_rows(result)
        ],
        REPORT_CSV_FIELDS,
    )
