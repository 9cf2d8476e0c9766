"""Rewrite the docs' full example outputs from the commands themselves, at 120 columns as a terminal would print them:
each block is the fenced block after a line "`tfcost ARGS`:" for the commands below. Run after a change to what
`train`, `serve` or `plan` print: `PYTHONPATH=. python scripts/write_doc_examples.py`; tests/test_answer.py
(test_the_docs_examples_are_what_the_commands_print) holds the pages to it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = {
    "docs/training.md": "train llama-3-8b --gpus 64 --gpu h100-sxm --zero 1 --global-batch 64",
    "docs/serving.md": "serve llama-3-8b --gpu h100-sxm --batch 32 --prompt 2048 --generate 512",
    "docs/plan.md": "plan train llama-3.1-70b --gpus 64 --tokens 1T --top 5",
}


def printed(args: str) -> str:
    """What the command prints at 120 columns, no colour, each line's trailing spaces taken off."""
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "tfcost", *args.split()], capture_output=True, text=True, env=env, check=True
    )
    return "\n".join(line.rstrip() for line in done.stdout.strip().splitlines()) + "\n"


def main() -> None:
    for page, args in EXAMPLES.items():
        path = ROOT / page
        text = path.read_text(encoding="utf-8")
        block = re.compile(rf"(`tfcost {re.escape(args)}`:\n\n```\n)(.*?)(```\n)", re.DOTALL)
        if len(block.findall(text)) != 1:
            raise SystemExit(f"{page}: no single example block after `tfcost {args}`:")
        match = next(block.finditer(text))
        text = text[: match.start(2)] + printed(args) + text[match.end(2) :]
        path.write_text(text, "utf-8")
        print(f"{page}: rewrote `tfcost {args}`")


if __name__ == "__main__":
    main()
