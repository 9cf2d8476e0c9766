"""The README's list of supported model_types is the readers' own (tfcost.readers.hf_config.FAMILIES), kept in step."""

from __future__ import annotations

import re
from pathlib import Path

from tfcost.readers.hf_config import FAMILIES, supported_types_markdown

README = Path(__file__).parent.parent / "README.md"
BLOCK = re.compile(r"  <!-- model-types:begin -->\n(.*?)\n  <!-- model-types:end -->", re.DOTALL)


def test_readme_lists_the_model_types_the_readers_support():
    found = BLOCK.findall(README.read_text(encoding="utf-8"))
    assert found == [supported_types_markdown()], "regenerate with tfcost.readers.hf_config.supported_types_markdown()"


def test_the_generated_list_names_every_reader_once():
    names = re.findall(r"`([^`]+)`", supported_types_markdown())
    assert names == sorted(FAMILIES)
    assert {"qwen3_moe", "glm4_moe", "olmo2", "smollm3"} <= set(names)
