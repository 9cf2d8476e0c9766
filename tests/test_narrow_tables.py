"""Tables narrowed to the terminal never break a word or a number (issue 38): at 80 and 120 columns every command's
table fits, each of its words and numbers is one the same command prints whole to a pipe (no terminal, natural
width), and a column left out is said in a note. tfcost.render.layout.narrow and split_columns do it."""

from __future__ import annotations

import json
import re

import pytest
from test_first_hour import MORE_TABLE_COMMANDS, TABLE_COMMANDS

from tfcost.render.layout import wrap_words
from tfcost.render.sections import EXACT_DROPPED

WIDE_COMMANDS = [
    ["plan", "train", "llama-3.1-70b", "--gpus", "64"],  # 16 columns: "47 / .5 / 79 / s" at 80 before
    ["plan", "train", "llama-3-8b", "--gpus", "7"],  # uneven stages: wrapped even at 120 before
    ["plan", "serve", "llama-3-8b", "--gpus", "8"],
    ["sweep", "llama-3-8b", "gpt2-small", "mistral-7b", "qwen3-8b", "gemma-3-27b", "deepseek-v3", "-f", "table"],
    ["compare", "llama-3-8b", "mistral-7b", "gpt2-small", "qwen3-8b", "gemma-3-27b", "deepseek-v3", "--breakdown"],
    ["frameworks"],
    ["fit", "llama-3-8b", "--gpu", "rtx-4090"],
]
COMMANDS = [*([args, None] for args in TABLE_COMMANDS + WIDE_COMMANDS), *([args, needs] for args, needs in
            MORE_TABLE_COMMANDS)]  # fmt: skip
BOX = re.compile(r"[\u2500-\u257f]")  # box-drawing characters: the rules between cells


def tokens(text: str, width: int | None = None) -> list[str]:
    """The words and numbers of a command's output, the rules between cells left out; the note saying what was
    left out to fit `width` names a width the natural output does not."""
    text = " ".join(BOX.sub(" ", text).split())
    if width is not None:  # the notes a narrowed table adds
        for said in (
            re.escape(EXACT_DROPPED),
            r"Every row has (?:[^.]|\.(?! |$))*\.",
            r"Left out to fit \d+ columns: .*? column\)\.",
        ):
            text = re.sub(said, " ", text)
    return text.split()


def pieces(word: str) -> list[str]:
    """The pieces a header may wrap into (after a slash): wrap_words at width 1."""
    return wrap_words(word, 1, header=True).split("\n")


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize(("args", "needs"), COMMANDS, ids=lambda value: " ".join(value[:3]) if value else "")
def test_no_word_or_number_is_split(tfcost, tmp_path, args, needs, width):
    if needs:
        pytest.importorskip(needs, reason=f"{args[0]} needs {needs}")
    if "FOLDER" in args:
        from tests.test_stored import TINY, tiny_tensors, write_safetensors

        (tmp_path / "config.json").write_text(json.dumps(TINY))
        write_safetensors(tmp_path / "model.safetensors", tiny_tensors())
        args = [str(tmp_path) if arg == "FOLDER" else arg for arg in args]
    narrow = tfcost(*args, env={"COLUMNS": str(width)})
    whole = tfcost(*args, env={"COLUMNS": ""})  # no terminal: every table at its natural width
    assert narrow.code == whole.code == 0, narrow.stderr
    assert max(len(line) for line in narrow.stdout.splitlines()) <= width
    printed = set(tokens(whole.stdout))
    header_pieces = {piece for word in printed for piece in pieces(word)}
    if args[0] == "measure":  # timings differ run to run: the words are checked, and the numbers' shapes
        printed |= {token for token in tokens(narrow.stdout) if re.fullmatch(r"[\d.,e+-]+(-[\d.,e+-]+)?", token)}
    broken = [
        token
        for token in tokens(narrow.stdout, width)
        if token not in printed and (any(c.isdigit() for c in token) or token not in header_pieces)
    ]
    assert not broken, broken[:10]
    if "Left out to fit" in narrow.stdout:  # a column left out is named, and exists in the whole table
        said = re.search(r"Left out to fit \d+ columns: (.*?) \(a wider", " ".join(narrow.stdout.split()))
        assert said is not None
        for header in said.group(1).split(", "):
            assert all(word in printed or word in header_pieces for word in header.split()), header


def test_plan_at_80_columns_says_what_it_left_out(tfcost):
    """The 16 columns of `plan train` at 80: those that hold one value in every row become a sentence, then v, cp
    and b go (named), and the step time, MFU and memory stay whole."""
    run = tfcost("plan", "train", "llama-3.1-70b", "--gpus", "64", env={"COLUMNS": "80"})
    text = " ".join(run.stdout.split())
    assert "Every row has ep 1, offload none, main term matmuls." in text
    assert "Left out to fit 80 columns: v, cp, b (a wider terminal, or --format csv or json, shows every column)." in (
        text
    )
    header = next(line for line in run.stdout.splitlines() if "┃" in line and "MFU" in line)
    assert "ZeRO" in header and "recompute" in header
    assert re.search(r"│ +\d+\.\d{3} s │", run.stdout)  # the step time whole on its row


@pytest.mark.parametrize(
    ("text", "width", "wrapped"),
    [
        ("memory/GPU", 6, "memory/\nGPU"),
        ("FP8 TFLOP/s", 8, "FP8\nTFLOP/s"),  # a unit's slash keeps its letters
        ("tok/s/user", 6, "tok/s/\nuser"),
        ("heads (kv)", 5, "heads\n(kv)"),
    ],
)
def test_headers_wrap_between_words_and_after_slashes(text, width, wrapped):
    assert wrap_words(text, width, header=True) == wrapped


def test_cells_wrap_between_words_only():
    assert wrap_words("  pipeline bubble", 10) == "  pipeline\nbubble"
    assert wrap_words("deepseek-r1-distill", 5) == "deepseek-r1-distill"  # longer than the width: whole


@pytest.mark.parametrize("listing", ["gpus", "list"])
def test_a_one_column_terminal_keeps_every_row_and_name_whole(tfcost, listing):
    # COLUMNS=1 once split every cell into single characters (issue 37): tables are laid out at no less than
    # layout.MIN_TERMINAL_WIDTH, so each row's name is still printed whole
    names = [row.split(",")[0] for row in tfcost(listing, "-f", "csv").stdout.splitlines()[1:]]
    narrow = tfcost(listing, env={"COLUMNS": "1"})
    assert narrow.code == 0 and names
    assert all(re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", narrow.stdout) for name in names)
