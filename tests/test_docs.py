"""README.md and docs/: a short README whose examples are what the code prints, and links that lead somewhere.

The long examples live in docs/ and are checked where they are used (test_cli.py, test_cli_train_serve.py,
test_explain.py, test_presets.py, test_readme_architecture.py, test_readme_model_types.py, test_sweep.py).
"""

from __future__ import annotations

import contextlib
import doctest
import io
import re
from pathlib import Path

import pytest
from conftest import run_in_process

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))


def test_the_readme_is_short_and_keeps_the_test_command():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    # .ci/run reads the command between these markers.
    block = re.search(r"<!-- test-command -->\n```sh\n(.+)\n```\n<!-- /test-command -->", text)
    assert block is not None and "pytest" in block.group(1) and "pip install -e '.[test]'" in block.group(1)


def links(page: Path) -> list[tuple[str, str]]:
    """(target, anchor) of each relative Markdown link of a page, outside code blocks."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    found = re.findall(r"\]\(([^)\s]+)\)", text)
    return [tuple(target.partition("#")[::2]) for target in found if not re.match(r"[a-z]+:", target)]


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as dashes."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda page: page.name)
def test_every_link_leads_to_a_file_and_heading_that_exist(page):
    for target, anchor in links(page):
        destination = (page.parent / target).resolve() if target else page
        assert destination.exists(), f"{page.name}: {target} does not exist"
        if anchor:
            assert anchor in anchors(destination), f"{page.name}: no heading #{anchor} in {target or page.name}"


def test_the_readme_links_every_doc():
    text = README.read_text(encoding="utf-8")
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    for page in DOCS:
        if page.name != "README.md":
            assert f"]({page.name})" in index, f"docs/README.md does not list {page.name}"
    for name in ("commands", "models", "conventions", "formulas", "training", "serving", "api", "architecture"):
        assert f"](docs/{name}.md)" in text, f"the README does not link docs/{name}.md"


def test_the_readme_rows_are_the_commands_output():
    """The README's excerpts (`tfcost compare ...`, a training and a serving plan) are rows each command prints at
    120 columns."""
    text = README.read_text(encoding="utf-8")
    commands = list(re.finditer(r"`tfcost ([^`]+)`, some of its\s+rows", text))
    assert [command.group(1).split()[:2] for command in commands] == [
        ["compare", "llama-3-8b"], ["plan", "train"], ["plan", "serve"]
    ]  # fmt: skip
    for command in commands:
        excerpt = text[command.end() :].split("```\n", 2)[1].splitlines()
        printed = {line.rstrip() for line in run_in_process(*command.group(1).split()).stdout.splitlines()}
        assert len(excerpt) >= 4 and all(line in printed for line in excerpt), command.group(1)


def test_the_readme_python_api_runs_and_prints_what_it_says():
    text = README.read_text(encoding="utf-8")
    code = text.split("## Python API", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert len(code.splitlines()) == 5
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})  # the README's own example
    said = re.findall(r"^print\(.*\)  # (.+)$", code, flags=re.MULTILINE)
    assert out.getvalue().splitlines() == said == ["4294967296", "True"]
    # Llama 3 8B's KV cache at T = 8,192, B = 4 in bf16: 2 (K and V) x 32 layers x 8 KV heads x 128 x 8,192 x 4 x 2 B
    assert int(said[0]) == 2 * 32 * 8 * 128 * 8192 * 4 * 2


def test_the_api_page_examples_run():
    """docs/api.md's `>>>` examples, doctest'd: their printed values are what the calls return."""
    failed, tried = doctest.testfile(
        str(ROOT / "docs" / "api.md"), module_relative=False, optionflags=doctest.ELLIPSIS, verbose=False
    )
    assert tried >= 10 and failed == 0
