"""Shipped presets and GPU rows are built without validation (tfcost.readers.trusted): each must be exactly what
validation builds, every shipped file must validate, and anything not well-formed must still be validated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tfcost.errors import TfcostError
from tfcost.readers import presets
from tfcost.readers.files import read_yaml_mapping, safe_load
from tfcost.readers.trusted import NotTrusted, trusted
from tfcost.schema import GpuSpec, ModelShape


def difference(built: Any, checked: Any, where: str = "") -> str | None:
    """Where two values differ in value or in type, however deeply nested (None: nowhere)."""
    if type(built) is not type(checked):
        return f"{where}: {type(built).__name__} where validation gives {type(checked).__name__}"
    if isinstance(built, BaseModel):
        if built.model_fields_set != checked.model_fields_set:
            return f"{where}: fields set {sorted(built.model_fields_set ^ checked.model_fields_set)}"
        found = (difference(getattr(built, k), getattr(checked, k), f"{where}.{k}") for k in type(built).model_fields)
        return next((text for text in found if text), None)
    if isinstance(built, list | tuple):
        if len(built) != len(checked):
            return f"{where}: {len(built)} items where validation gives {len(checked)}"
        found = (difference(a, b, f"{where}[{i}]") for i, (a, b) in enumerate(zip(built, checked, strict=True)))
        return next((text for text in found if text), None)
    if isinstance(built, dict):
        if built.keys() != checked.keys():
            return f"{where}: keys {sorted(built.keys() ^ checked.keys())}"
        return next((text for key in built if (text := difference(built[key], checked[key], f"{where}[{key}]"))), None)
    return None if built == checked else f"{where}: {built!r} where validation gives {checked!r}"


@pytest.mark.parametrize("name", list(presets.model_preset_paths()))
def test_every_shipped_preset_validates_and_builds_as_validation_builds_it(name):
    path = presets.model_preset_paths()[name]
    checked = ModelShape.model_validate({"name": name, **read_yaml_mapping(path)})  # every shipped preset validates
    built = presets.shipped_model(path)
    assert difference(built, checked, name) is None
    assert built == checked and built.model_dump_json() == checked.model_dump_json()
    assert presets.load_model(name) is built  # read once per process
    assert presets.load_model(name.upper()) is built


def test_every_shipped_preset_is_named_as_its_file():
    """`tfcost list --family F` reads only the files whose names start with F: each preset's name is its file's."""
    assert [model.name for model in presets.all_models()] == list(presets.model_preset_paths())


def test_every_shipped_gpu_row_validates_and_builds_as_validation_builds_it():
    rows = safe_load((presets.presets_dir() / "gpus.yaml").read_text(encoding="utf-8"))
    for row, built in zip(rows, presets.all_gpus(), strict=True):
        assert difference(built, GpuSpec.model_validate(row), row["name"]) is None


def test_a_preset_changed_by_set_is_validated():
    """--set is user input: the changed mapping goes through validation, with its one line on a bad value."""
    assert presets.resolve_model("gpt2-small", overrides=["n_kv_heads=4"]).n_kv_heads == 4
    with pytest.raises(TfcostError, match="n_kv_heads"):
        presets.resolve_model("gpt2-small", overrides=["n_kv_heads=5"])
    with pytest.raises(TfcostError, match="n_layers"):
        presets.resolve_model("gpt2-small", overrides=["n_layers=-1"])  # a constraint trusted() would not check


GOOD = {"name": "m", "vocab_size": 10, "d_model": 8, "n_layers": 2, "n_heads": 2, "d_ff": 16, "max_seq_len": 64,
        "mlp": "gated", "norm": "rmsnorm", "position": "rotary", "tied_embeddings": False}  # fmt: skip


@pytest.mark.parametrize(
    "changes",
    [{"unknown_key": 1}, {"d_model": None}, {"d_model": "8"}, {"d_model": True}, {"d_model": 8.0},
     {"mlp": "mystery"}, {"sliding_layers": "0,1"}, {"moe": [1, 2]}, {"rotary_fraction": "1"},
     {"bias": {"qkv": 1}}, {"layers": [{"repeat": 2}]}],
)  # fmt: skip
def test_data_that_is_not_well_formed_is_not_trusted(changes):
    """A key validation would refuse, a missing required field, a value of the wrong type (strictly: no bool for an
    int, no text for a number), a choice not offered, a nested model's bad field: NotTrusted, so the caller
    validates, as it does for every user file."""
    data = {**GOOD, **changes}
    data = {key: value for key, value in data.items() if value is not None}
    with pytest.raises(NotTrusted):
        trusted(ModelShape, data)
    with pytest.raises(ValueError):  # pydantic's ValidationError: validation refuses it too
        ModelShape.model_validate(data)
    trusted(ModelShape, GOOD)  # what differs from well-formed data is only the change


def test_well_formed_data_builds_as_validation_builds_it():
    data = {**GOOD, "rotary_fraction": 1, "sliding_layers": [0], "sliding_window": 16, "bias": {"qkv": True}}
    assert difference(trusted(ModelShape, data), ModelShape.model_validate(data)) is None


def test_a_broken_shipped_preset_is_still_one_line(tmp_path, monkeypatch):
    """A preset file in the package that is not well-formed goes through validation, which names it."""
    models = tmp_path / "models"
    models.mkdir()
    (models / "broken.yaml").write_text("vocab_size: 10\nd_model: 8\nn_layers: 2\nn_heads: 3\nd_ff: 16\n")
    monkeypatch.setattr(presets, "presets_dir", lambda: tmp_path)
    presets.model_preset_paths.cache_clear()
    try:
        with pytest.raises(TfcostError) as raised:
            presets.load_model("broken")
        assert str(models / "broken.yaml") in str(raised.value) and "\n" not in str(raised.value)
    finally:
        presets.model_preset_paths.cache_clear()


def test_every_shipped_file_has_its_literal_and_the_literal_reads_as_the_file():
    """tfcost/readers/packaged_data.py holds each shipped file (the GPU table, every preset) as a Python literal, with
    the size and CRC-32 of the bytes it was made from: generated from today's files (else run
    scripts/write_packaged_data.py), each giving what the strict YAML loader reads, value for value and type for
    type, as new objects on every call."""
    import zlib

    from tfcost.readers import packaged_data
    from tfcost.readers.packaged import module_text, shipped_files

    root = presets.presets_dir()
    files = shipped_files(root)
    assert len(files) == len(presets.model_preset_paths()) + 1
    assert set(packaged_data.FILES) == {path.relative_to(root).as_posix() for path in files}
    for path in files:
        data = path.read_bytes()
        size, crc, build = packaged_data.FILES[path.relative_to(root).as_posix()]
        assert (size, crc) == (len(data), zlib.crc32(data)), f"{path} changed: run scripts/write_packaged_data.py"
        assert difference(build(), safe_load(data.decode("utf-8")), path.name) is None
        assert build() is not build()  # fresh: nothing a caller changes reaches the next caller
    module = Path(packaged_data.__file__).read_text(encoding="utf-8")
    assert module == module_text(root), "run scripts/write_packaged_data.py"


def test_a_shipped_file_changed_since_its_literal_is_read_with_yaml(tmp_path):
    """A preset edited in a checkout (same size, one digit changed) no longer matches its literal's CRC: it is read
    from the file. The unchanged copy is read from the literal."""
    from tfcost.readers.packaged import packaged

    shipped = presets.model_preset_paths()["llama-3-8b"]
    text = shipped.read_text(encoding="utf-8")
    assert "n_layers: 32\n" in text
    (tmp_path / "models").mkdir()
    same = tmp_path / "models" / "llama-3-8b.yaml"
    same.write_bytes(shipped.read_bytes())
    assert packaged(same, "models/llama-3-8b.yaml", same.stat().st_size) == read_yaml_mapping(shipped)
    edited = tmp_path / "edited" / "llama-3-8b.yaml"
    edited.parent.mkdir()
    edited.write_text(text.replace("n_layers: 32\n", "n_layers: 31\n"), encoding="utf-8")
    size = edited.stat().st_size
    assert size == same.stat().st_size
    assert packaged(edited, "models/llama-3-8b.yaml", size) is None
    assert packaged(same, "models/llama-3-8b.yaml", size + 1) is None  # a size that differs: not even read
    assert packaged(same, "models/no-such-preset.yaml", size) is None
    assert presets.shipped_shape(edited, edited.stat().st_mtime_ns, size).n_layers == 31
    assert presets.shipped_shape(same, same.stat().st_mtime_ns, size).n_layers == 32


def test_a_gpu_table_changed_since_its_literal_is_read_with_yaml(tmp_path):
    table = presets.presets_dir() / "gpus.yaml"
    text = table.read_text(encoding="utf-8")
    assert "memory_gib: 80\n" in text
    edited = tmp_path / "gpus.yaml"
    edited.write_text(text.replace("memory_gib: 80\n", "memory_gib: 81\n", 1), encoding="utf-8")
    stat = edited.stat()
    assert stat.st_size == table.stat().st_size
    rows = presets.shipped_gpus(edited, stat.st_mtime_ns, stat.st_size)
    assert [row.memory_gib for row in rows] != [row.memory_gib for row in presets.all_gpus()]
    assert 81 in [row.memory_gib for row in rows]
