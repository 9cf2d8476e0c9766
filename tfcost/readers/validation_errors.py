"""The validation suite's measured errors (presets/validation-errors.json, written by `benchmarks/validate.py
--write`), which tfcost's approximate figures carry as their error bars (tfcost.costs.intervals)."""

from __future__ import annotations

from functools import cache
from typing import Any

from tfcost.errors import TfcostError


@cache
def validation_errors() -> dict[str, Any]:
    """Per category (and framework): runs, held-out runs, geometric-mean error and the 10th/90th percentile of
    predicted / measured, a rate's inverted so that every ratio is of a time, memory or capacity."""
    from tfcost.readers.files import parse_json_mapping, read_text
    from tfcost.readers.presets import presets_dir

    path = presets_dir() / "validation-errors.json"
    data = parse_json_mapping(read_text(path, "the validation errors"), str(path))
    categories = data.get("categories")
    if not isinstance(categories, dict):
        raise TfcostError(f"{path}: no 'categories' mapping")
    return categories
