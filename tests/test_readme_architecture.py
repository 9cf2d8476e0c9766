"""docs/architecture.md shows the operation table of one Llama-3-8B layer as the code builds it.

`python tests/test_readme_architecture.py` prints the table to paste; the test fails when the two differ."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent
TOKENS = 1024


def llama_layer_table() -> str:
    """A Markdown table: each row of one Llama-3-8B layer and what each fold takes from it at T = 1,024."""
    from tfcost.core.blocks import blocks
    from tfcost.core.layers import layer_ops
    from tfcost.core.ops import op_costs
    from tfcost.readers.presets import load_model

    shape = load_model("llama-3-8b")
    ((block, count),) = blocks(shape)
    lines = [
        f"One of the {count} `{block.name}` layers of `llama-3-8b` (d 4096, H 32, K 8, Q 128, F 14336), "
        f"T = {TOKENS:,}:",
        "",
        "| row | kind | in | out | per | params | forward FLOPs (full) | (causal) | cached values |",
        "|---|---|--:|--:|---|--:|--:|--:|--:|",
    ]
    totals = dict.fromkeys(("params", "flops", "flops_causal", "cache_elements"), 0)
    for op in layer_ops(shape, block):
        costs = op_costs(op, TOKENS)
        for key in totals:
            totals[key] += costs[key]
        cells = [f"`{op.name}`", op.kind, f"{op.fan_in:,}", f"{op.fan_out:,}", op.per]
        cells += [f"{costs[key]:,}" for key in totals]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("| **layer** | | | | | " + " | ".join(f"**{value:,}**" for value in totals.values()) + " |")
    return "\n".join(lines)


def test_the_docs_show_the_operation_table_the_code_builds() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert llama_layer_table() in doc


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    print(llama_layer_table())


def test_the_readme_counts_and_names_every_fitted_constant():
    # issue 34: the fitted constants live in one registry, and the README states their true count
    from tfcost.costs.fitted import FITTED

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    words = {1: "One", 2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six", 7: "Seven", 8: "Eight"}
    assert f"{words[len(FITTED)]} constants are fitted" in readme
    assert all(name in readme for name in FITTED)
