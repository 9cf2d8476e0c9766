"""docs/models.md lists the supported model_types as the readers do (tfcost.readers.hf_config.FAMILIES)."""

from __future__ import annotations

import re
from pathlib import Path

from tfcost.readers.hf_config import FAMILIES, supported_types_markdown

MODELS_DOC = Path(__file__).parent.parent / "docs" / "models.md"
BLOCK = re.compile(r"  <!-- model-types:begin -->\n(.*?)\n  <!-- model-types:end -->", re.DOTALL)


def test_the_docs_list_the_model_types_the_readers_support():
    found = BLOCK.findall(MODELS_DOC.read_text(encoding="utf-8"))
    assert found == [supported_types_markdown()], "regenerate with tfcost.readers.hf_config.supported_types_markdown()"


def test_the_generated_list_names_every_reader_once():
    names = re.findall(r"`([^`]+)`", supported_types_markdown())
    assert names == sorted(FAMILIES)
    assert {"qwen3_moe", "glm4_moe", "olmo2", "smollm3"} <= set(names)
