"""Write tfcost/readers/packaged_data.py: the shipped presets and GPU table as Python literals.

    python scripts/write_packaged_data.py

Run it after changing anything under presets/ (models/*.yaml or gpus.yaml); tests/test_trusted.py fails until it is
run. tfcost/readers/packaged.py says why the literals exist and when they are used.
"""

from __future__ import annotations

from pathlib import Path

from tfcost.readers.packaged import module_text

ROOT = Path(__file__).resolve().parent.parent

if __name__ == "__main__":
    target = ROOT / "tfcost" / "readers" / "packaged_data.py"
    target.write_text(module_text(ROOT / "presets"), encoding="utf-8")
    print(f"wrote {target.relative_to(ROOT)}")
