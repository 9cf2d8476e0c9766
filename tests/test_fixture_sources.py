"""tests/data/hf_configs/SOURCES.md says how every fixture file was made: each file is in its list of files by how
they were made exactly once, and every file it lists exists."""

from __future__ import annotations

import re
from pathlib import Path

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
KINDS = ("VERBATIM", "RESAVED", "TRANSCRIBED", "RECONSTRUCTED", "REBUILT", "DEFAULT")


def listed() -> dict[str, list[str]]:
    """The section's lists: kind -> the files it names (a list may wrap over several lines)."""
    text = (CONFIGS / "SOURCES.md").read_text(encoding="utf-8")
    section = text.split("## Every fixture file, by how it was made", 1)[1].split("\n## ", 1)[0]
    items = re.split(r"\n- ", section.split("\n\n", 2)[2].strip().removeprefix("- "))
    kinds: dict[str, list[str]] = {}
    for item in items:
        kind, _, names = item.partition(" (")
        count, _, names = names.partition("): ")
        kinds[kind] = re.findall(r"`([^`]+)`", names)
        assert int(count) == len(kinds[kind]), kind
    return kinds


def test_every_fixture_file_is_listed_once_by_how_it_was_made():
    kinds = listed()
    assert set(kinds) == set(KINDS)
    names = [name for files in kinds.values() for name in files]
    on_disk = sorted(str(path.relative_to(CONFIGS)) for path in CONFIGS.rglob("*.json"))
    assert sorted(names) == on_disk


def test_only_four_files_are_verbatim_copies():
    assert listed()["VERBATIM"] == ["deepseek-v3.json", "gpt-oss-20b.json", "gpt2-large.json", "mixtral-8x7b.json"]
