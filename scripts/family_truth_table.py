"""Render docs/family-truth.json (written by family_truth.py) as Markdown tables on stdout.

/work/venv/bin/python scripts/family_truth_table.py docs/family-truth.json default
/work/venv/bin/python scripts/family_truth_table.py docs/family-truth.json fixture
"""

from __future__ import annotations

import json
import sys

T = 100


def clean(text: str) -> str:
    """One table cell: no line breaks, no pipes."""
    return " ".join(text.split()).replace("|", "/").replace("`", "")


def cell(value: int | None) -> str:
    if value is None or value < 0:
        return "—"
    return f"{value:,}"


def main() -> None:
    rows = json.loads(open(sys.argv[1]).read())
    kind = sys.argv[2]
    print(
        "| label | builds | text type / class | params | wrapper params | fwd FLOPs @T=100 | FLOPs/(2·T·params) "
        "| KV B/token | state B/seq | cache parts (per token, fixed) | s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for label in sorted(rows):
        if not label.startswith(kind):
            continue
        row = rows[label]
        name = label.split(":", 1)[1] + (" (patched)" if label.startswith("patched") else "")
        if not row["ok"]:
            print(f"| {name} | no: {clean(row['error'])[:150]} | | | | | | | | | {row['seconds']:.1f} |")
            continue
        ratio = f"{row['forward_flops'] / (2 * T * row['params']):.3f}" if row["forward_flops"] > 0 else "—"
        parts = ", ".join(f"{k} {v[0]:,}/{v[1]:,}" for k, v in row["cache_split"].items() if v != [0, 0])
        builds = "yes" if not row["notes"] else "partly: " + clean("; ".join(row["notes"]))[:200]
        print(
            f"| {name} | {builds} | {row['text_model_type']} / {row['architecture']} | {cell(row['params'])} "
            f"| {cell(row['wrapper_params'])} | {cell(row['forward_flops'])} | {ratio} "
            f"| {cell(row['kv_bytes_per_token'])} | {cell(row['state_bytes'])} | {parts} | {row['seconds']:.1f} |"
        )


if __name__ == "__main__":
    main()
