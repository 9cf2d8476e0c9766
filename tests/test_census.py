"""The census (docs/family-census.md): tfcost's count of every default config transformers builds, in both forms
it writes a config.json, equals transformers' whole model (docs/family-truth.json, measured by
scripts/family_truth.py on the meta device); the table in the doc is what scripts/family_census.py prints."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="the census needs transformers' config classes: pip install -e '.[test]'")

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from family_census import TRUTH, forms, tfcost_count  # noqa: E402

ROWS = {label: row for label, row in json.loads(TRUTH.read_text()).items() if label.split(":")[0] != "fixture"}
# LongCat-Flash: transformers 5.24 also allocates the gate and up projections of the 256 zero experts it never uses
# (docs/checkpoints.md); tfcost's 560,664,958,976 is the published count.
NOT_TRANSFORMERS = {"default:longcat_flash": 560_664_958_976}


@pytest.mark.parametrize("label", sorted(label for label, row in ROWS.items() if row["ok"]))
def test_every_default_config_prices_as_transformers_builds_it_whole_in_both_forms(label):
    row = ROWS[label]
    whole = row["wrapper_params"] if row["wrapper_params"] is not None else row["params"]
    expected = NOT_TRANSFORMERS.get(label, whole)
    assert {form: tfcost_count(data)[0] for form, data in forms(label).items()} == {"saved": expected, "full": expected}


def test_the_census_page_is_what_the_script_prints(capsys):
    from family_census import main

    main()
    table = capsys.readouterr().out.strip()
    assert table in (ROOT / "docs" / "family-census.md").read_text(encoding="utf-8")
