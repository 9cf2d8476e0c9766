"""A stack of thousands of distinct blocks (5,000 sliding windows, issue 37) is priced in time linear in its blocks:
each block's operation table is built once per command, however many passes the costs make over it, and a model
read twice in one command is one object, so the caches keyed on it never compare it field by field. Counted, not
timed (a count holds on any machine)."""

from __future__ import annotations

from pathlib import Path

import yaml

import tfcost
from tfcost.core import layers
from tfcost.readers.presets import resolve_source

PRESETS = Path(__file__).parent.parent / "presets" / "models"


def windows_preset(folder: Path, count: int) -> Path:
    """gpt2-small with `count` layers, each with its own sliding window (100, 101, ...)."""
    data = yaml.safe_load((PRESETS / "gpt2-small.yaml").read_text())
    data |= {"name": f"windows-{count}", "n_layers": count}
    data["layers"] = [{"pattern": [{"window": 100 + index} for index in range(count)]}]
    path = folder / f"windows-{count}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_each_distinct_block_is_built_once_per_command(tmp_path, monkeypatch):
    """4,500 distinct blocks, more than the 4,096 a single bounded cache of (shape, block) held: that cache was
    swept end to end by every pass, so each of estimate's 15 passes rebuilt every table (67,500 builds)."""
    built = []
    real = layers.build_layer_ops
    monkeypatch.setattr(layers, "build_layer_ops", lambda shape, block: built.append(block) or real(shape, block))
    path = windows_preset(tmp_path, 4500)
    tfcost.estimate(path)
    assert len(built) == len(set(built)) == 4500
    built.clear()
    tfcost.serve(path, prompt=256, generate=256)
    assert len(built) == len(set(built)) <= 4500  # a new command's shape is the same object: nothing rebuilt


def test_a_model_read_twice_is_one_object(tmp_path):
    path = str(windows_preset(tmp_path, 50))
    first, second = resolve_source(path).shape, resolve_source(path).shape
    assert first is second
    changed = resolve_source(path, overrides=["vocab_size=50000"]).shape
    assert changed is not first and changed.vocab_size == 50000
