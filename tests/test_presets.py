"""Loading presets: shipped names, user files, and every way a file can be wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfcost.errors import TfcostError
from tfcost.readers.files import MAX_PRESET_BYTES
from tfcost.readers.presets import load_model, model_preset_paths

EXPECTED = {
    "gpt2-small", "gpt2-medium", "gpt2-large", "gpt2-xl", "llama-2-7b", "llama-2-13b", "llama-2-70b",
    "llama-3-8b", "llama-3.1-70b", "llama-3.2-1b", "mistral-7b", "qwen2.5-0.5b", "qwen2.5-7b",
}  # fmt: skip

GOOD = """
vocab_size: 1000
d_model: 64
n_layers: 2
n_heads: 4
d_ff: 256
mlp: plain
norm: layernorm
tied_embeddings: true
position: learned
max_seq_len: 128
"""


def test_the_issue_presets_are_shipped():
    assert EXPECTED <= set(model_preset_paths())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_preset_name_matches_its_file(name):
    assert load_model(name).name == name


def test_user_file_takes_its_stem_as_name(tmp_path: Path):
    path = tmp_path / "tiny.yaml"
    path.write_text(GOOD)
    model = load_model(str(path))
    assert (model.name, model.head_dim, model.n_kv_heads) == ("tiny", 16, 4)


def error_of(tmp_path: Path, text: str | bytes) -> str:
    path = tmp_path / "bad.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(TfcostError) as caught:
        load_model(str(path))
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "is empty"),
        ("- 1\n- 2\n", "is a list"),
        ("42", "is a int"),
        ("a: [1, 2", "malformed YAML at line"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        ("!!python/object/apply:os.system ['echo hi']", "malformed YAML"),
        (GOOD + "n_head: 4\n", "unknown key 'n_head'"),
        (GOOD.replace("d_ff: 256\n", ""), "missing key 'd_ff'"),
        (GOOD.replace("d_model: 64", "d_model: 66"), "n_heads (4) must divide d_model (66)"),
        (GOOD.replace("n_layers: 2", "n_layers: 0"), "n_layers: Input should be greater than 0"),
        (GOOD.replace("n_layers: 2", "n_layers: 2.5"), "n_layers"),
        (GOOD.replace("n_layers: 2", "n_layers: true"), "n_layers"),
        (GOOD.replace("n_layers: 2", "n_layers: '2'"), "n_layers"),
        (GOOD + "n_kv_heads: 3\n", "n_kv_heads (3) must divide n_heads (4)"),
        (GOOD.replace("mlp: plain", "mlp: swish"), "mlp"),
        (GOOD.replace("n_layers: 2", "n_layers: 1000000000000000001"), "n_layers: Input should be less than or equal"),
        (GOOD.replace("n_layers: 2", "n_layers: 1" + "0" * 400), "n_layers: Input should be less than or equal"),
    ],
)
def test_bad_files_give_one_line_naming_the_problem(tmp_path, text, expected):
    assert expected in error_of(tmp_path, text)


@pytest.mark.parametrize(
    ("edit", "only_problem"),
    [
        (("n_heads: 4", "n_heads: '4'"), "n_heads: Input should be a valid integer"),
        (("n_heads: 4", "n_heads: 0"), "n_heads: Input should be greater than 0"),
        (("n_heads: 4", "n_heads: true"), "n_heads: Input should be a valid integer"),
        (("d_model: 64", "d_model: 1.5"), "d_model: Input should be a valid integer"),
        (("n_heads: 4\n", ""), "missing key 'n_heads'"),
    ],
)
def test_a_wrong_head_count_is_the_one_problem_named(tmp_path, edit, only_problem):
    # n_kv_heads and head_dim default from n_heads and d_model; when those were wrong, the two optional fields
    # were reported as missing too ("missing key 'head_dim'").
    assert error_of(tmp_path, GOOD.replace(*edit)).endswith(f": {only_problem}")


def test_the_largest_sizes_are_accepted(tmp_path: Path):
    path = tmp_path / "deep.yaml"
    path.write_text(GOOD.replace("n_layers: 2", "n_layers: 1000000000000000000"))
    assert load_model(str(path)).n_layers == 10**18


def test_missing_path_and_directory(tmp_path: Path):
    with pytest.raises(TfcostError, match="no such file"):
        load_model(str(tmp_path / "nope.yaml"))
    with pytest.raises(TfcostError, match="is a directory"):
        load_model(str(tmp_path) + "/")


def test_oversized_file_is_refused_before_parsing(tmp_path: Path):
    path = tmp_path / "huge.yaml"
    path.write_bytes(b"#" * (MAX_PRESET_BYTES + 1))
    with pytest.raises(TfcostError, match="too large"):
        load_model(str(path))


def test_unknown_preset_lists_close_names():
    with pytest.raises(TfcostError, match="did you mean gpt2-small"):
        load_model("gpt2-smal")


def test_the_docs_list_every_preset_with_its_count():
    from tfcost.core.params import total_params
    from tfcost.readers.presets import all_models

    doc = (Path(__file__).parent.parent / "docs" / "models.md").read_text(encoding="utf-8")
    for model in all_models():
        assert f"| `{model.name}` | {total_params(model):,}" in doc, f"{model.name} missing or stale in docs/models.md"
