"""The census: tfcost's parameter count of every default config in docs/family-truth.json, in both forms
transformers writes a config, against transformers' own build of it (docs/family-truth.md, section 1).

    PYTHONPATH=. /work/main/.venv/bin/python scripts/family_census.py > docs/family-census-table.md

transformers' figure is the whole model where the config is a multimodal wrapper (`wrapper params`: towers and
projectors included), else its causal LM. tfcost reads each form ("saved": `to_diff_dict()`, what save_pretrained
writes; "full": `to_dict()`) as a config.json (tfcost.readers.hf_config.read_config) and counts every parameter
(tfcost.core.params.total_params). The patched defaults get the same one-field patch as in scripts/family_truth.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from family_truth import PATCHES
from truth_harness import default_config, saved_forms

from tfcost.core.params import total_params
from tfcost.errors import TfcostError
from tfcost.readers.hf_config import read_config
from tfcost.readers.presets import model_from_mapping

TRUTH = Path(__file__).resolve().parent.parent / "docs" / "family-truth.json"


def forms(label: str) -> dict[str, dict[str, Any]]:
    """The two written forms of a default (or patched) config, as dicts a config.json would hold."""
    kind, model_type = label.split(":", 1)
    written = saved_forms(model_type)
    if kind == "patched":
        patch = PATCHES[model_type](default_config(model_type))
        written = {form: {**data, **patch} for form, data in written.items()}
    return {form: {**data, "model_type": model_type} for form, data in written.items()}


def tfcost_count(data: dict[str, Any]) -> tuple[int | None, str]:
    """tfcost's whole-model count of one config dict, and what it left out (not priced) or why it refused."""
    try:
        reading = read_config(data)
        shape = model_from_mapping(reading.mapping, "census", "census")
    except TfcostError as error:
        return None, str(error).splitlines()[0][:110]
    return total_params(shape), ", ".join(reading.not_priced)


def cell(count: int | None, truth: int) -> str:
    if count is None:
        return "refused"
    if count == truth:
        return "="
    return f"{count:,} ({(count - truth) / truth:+.1%})"


def main() -> None:
    rows = json.loads(TRUTH.read_text())
    print("| model type | transformers (whole model) | tfcost, saved form | tfcost, full form | not priced / refused |")
    print("|---|--:|--:|--:|---|")
    for label in sorted(rows):
        row = rows[label]
        if label.startswith("fixture:") or not row.get("ok"):
            continue
        truth = row["wrapper_params"] if row.get("wrapper_params") is not None else row["params"]
        counts = {form: tfcost_count(data) for form, data in forms(label).items()}
        name = label.split(":", 1)[1] + (" (patched)" if label.startswith("patched:") else "")
        why = "; ".join(sorted({note for _, note in counts.values() if note}))
        saved, full = (cell(counts[form][0], truth) for form in ("saved", "full"))
        print(f"| `{name}` | {truth:,} | {saved} | {full} | {why} |")


if __name__ == "__main__":
    main()
