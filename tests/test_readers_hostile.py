"""Checkpoint headers that lie (issue 37): every count and length a GGUF or safetensors header claims is checked
against the bytes the file has, tensors' bytes are tied to the data region, GGUF metadata that disagrees with the
tensors is refused, and special files are refused without being opened for a blocking read. The hostile files are
built here, byte by byte, by the formats' own layouts: GGUF's (llama.cpp's docs/gguf.md: magic "GGUF", u32
version, u64 tensor count, u64 key count, then key-values and tensor infos, strings as a u64 length and bytes) and
safetensors' (an 8-byte little-endian header length, then that many bytes of JSON)."""

from __future__ import annotations

import json
import os
import stat
import struct
from pathlib import Path
from typing import Any

import pytest
from conftest import run_tfcost

from tfcost.errors import TfcostError
from tfcost.readers.safetensors import MAX_RANK, read_gguf, read_safetensors

gguf = pytest.importorskip("gguf")

# GGUF value types (gguf.GGUFValueType, llama.cpp's enum gguf_type): UINT32 4, STRING 8, ARRAY 9, UINT64 10.
UINT32, STRING, ARRAY, UINT64 = 4, 8, 9, 10
F32, Q4_K = 0, 12  # ggml_type: GGML_TYPE_F32 = 0, GGML_TYPE_Q4_K = 12 (256 weights in 144 bytes)


def text(value: str | bytes) -> bytes:
    raw = value.encode() if isinstance(value, str) else value
    return struct.pack("<Q", len(raw)) + raw


def key_value(key: str, kind: int, payload: bytes) -> bytes:
    return text(key) + struct.pack("<I", kind) + payload


def u32(key: str, value: int) -> bytes:
    return key_value(key, UINT32, struct.pack("<I", value))


def tensor_info(name: str, dims: list[int], kind: int, offset: int) -> bytes:
    """A tensor info: name, u32 rank, u64 dimensions innermost first, u32 type, u64 offset in the data region."""
    return text(name) + struct.pack(f"<I{len(dims)}QIQ", len(dims), *dims, kind, offset)


def gguf_file(
    path: Path,
    keys: list[bytes],
    tensors: list[bytes],
    data: int = 0,
    tensor_count: int | None = None,
    key_count: int | None = None,
) -> Path:
    """A GGUF v3 file with these key-values and tensor infos, padded to 32 bytes, then `data` zero bytes."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors) if tensor_count is None else tensor_count,
                                 len(keys) if key_count is None else key_count)  # fmt: skip
    body = head + b"".join(keys) + b"".join(tensors)
    body += bytes(-len(body) % 32)
    path.write_bytes(body + bytes(data))
    return path


def llama_keys(blocks: int = 1, width: int = 256, heads: int = 4) -> list[bytes]:
    return [
        key_value("general.architecture", STRING, text("llama")),
        u32("llama.block_count", blocks),
        u32("llama.context_length", 2048),
        u32("llama.embedding_length", width),
        u32("llama.feed_forward_length", 512),
        u32("llama.attention.head_count", heads),
        u32("llama.attention.head_count_kv", heads),
    ]


def llama_tensors() -> tuple[list[bytes], int]:
    """A one-layer llama of width 256, four heads of 64 and an MLP of 512 (F32, laid end to end from offset 0),
    and the data region's length."""
    shapes = {"token_embd.weight": [256, 64], "blk.0.attn_q.weight": [256, 256], "blk.0.attn_k.weight": [256, 256],
              "blk.0.attn_v.weight": [256, 256], "blk.0.attn_output.weight": [256, 256],
              "blk.0.ffn_up.weight": [256, 512], "blk.0.ffn_gate.weight": [256, 512],
              "blk.0.ffn_down.weight": [512, 256]}  # fmt: skip
    infos, offset = [], 0
    for name, dims in shapes.items():
        infos.append(tensor_info(name, dims, F32, offset))
        offset += dims[0] * dims[1] * 4
    return infos, offset


def one_line(run: Any) -> str:
    assert run.code == 1, (run.stdout, run.stderr)
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr
    return run.stderr


def test_the_hand_built_llama_reads_as_the_gguf_package_reads_it(tmp_path):
    """The builder's layout is GGUF's: the gguf package's own reader lists the same tensors and bytes."""
    infos, data = llama_tensors()
    path = gguf_file(tmp_path / "tiny.gguf", llama_keys(), infos, data)
    theirs = {tensor.name: int(tensor.n_bytes) for tensor in gguf.GGUFReader(str(path)).tensors}
    ours = read_gguf(path)
    assert {tensor.name: tensor.nbytes for tensor in ours.tensors} == theirs
    assert ours.tensors[1].shape == (256, 256) and sum(theirs.values()) == data


@pytest.mark.parametrize(
    ("tensor_count", "key_count", "expected"),
    [
        (2**40, 0, "claims 1,099,511,627,776 tensors, more than the"),
        (0, 2**60, "claims 1,152,921,504,606,846,976 metadata keys"),
    ],
)
def test_a_count_the_file_cannot_hold_is_refused_before_any_work(tmp_path, tfcost, tensor_count, key_count, expected):
    path = gguf_file(tmp_path / "counts.gguf", [], [], tensor_count=tensor_count, key_count=key_count)
    assert expected in one_line(tfcost("inspect", str(path)))


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ([key_value("a", ARRAY, struct.pack("<IQ", UINT64, 2**50))], "claims 1,125,899,906,842,624 array items"),
        ([key_value("a", ARRAY, struct.pack("<IQ", STRING, 2**40))], "claims 1,099,511,627,776 strings"),
        ([key_value("a", STRING, struct.pack("<Q", 2**62))], "a string of 4,611,686,018,427,387,904 bytes"),
        ([key_value("a", STRING, struct.pack("<Q", 1000) + b"x")], "the file ends inside its header"),
        ([key_value("a", ARRAY, struct.pack("<IQ", STRING, 3) + text("ab") + struct.pack("<Q", 2**40))],
         "the file ends inside its header"),
        ([key_value("a", ARRAY, struct.pack("<IQ", ARRAY, 1) + struct.pack("<IQ", ARRAY, 1))],
         "an array of arrays in the GGUF header"),
        ([key_value("a", 77, b"")], "unknown GGUF value type 77"),
        ([u32("a", 1), u32("a", 2)], "metadata key 'a' is written twice"),
    ],
)  # fmt: skip
def test_metadata_lengths_are_checked_against_the_file(tmp_path, tfcost, keys, expected):
    path = gguf_file(tmp_path / "metadata.gguf", keys, [])
    assert expected in one_line(tfcost("inspect", str(path)))


def test_a_long_string_array_is_counted_not_kept(tmp_path):
    """A vocabulary of 200,000 entries (Llama 3's is 128,256): its length is kept, its strings passed over."""
    vocabulary = struct.pack("<IQ", STRING, 200_000) + b"".join(text(f"t{i}") for i in range(200_000))
    numbers = struct.pack("<IQ", UINT32, 5) + struct.pack("<5I", 1, 2, 3, 4, 5)
    keys = [key_value("tokenizer.ggml.tokens", ARRAY, vocabulary), key_value("n", ARRAY, numbers)]
    metadata = read_gguf(gguf_file(tmp_path / "vocabulary.gguf", keys, [])).gguf_metadata
    assert metadata == {"tokenizer.ggml.tokens": 200_000, "n": [1, 2, 3, 4, 5]}


@pytest.mark.parametrize(
    ("infos", "data", "expected"),
    [
        # 2^62 x 2^62 x 2^62 x 2^62 F32 elements: 2^250 bytes claimed by a file of a few hundred.
        ([tensor_info("t", [2**62] * 4, F32, 0)], 64, "claims bytes 0 to 1.81e+75 of a data region of 64"),
        ([tensor_info("t", [8], F32, 32)], 32, "claims bytes 32 to 64 of a data region of 32"),
        ([tensor_info("t", [8], F32, 0), tensor_info("u", [8], F32, 0)], 32, "tensors 't' and 'u' claim the same"),
        ([tensor_info("t", [8], F32, 4)], 64, "starts at 4, not a multiple of 32"),
        ([tensor_info("t", [1, 1, 1, 1, 1], F32, 0)], 32, "has 5 dimensions (GGUF allows 1 to 4)"),
        ([tensor_info("t", [100], Q4_K, 0)], 4096, "is not whole Q4_K blocks"),
        ([tensor_info("t", [8], 9999, 0)], 32, "has unknown type 9999"),
    ],
)
def test_tensor_bytes_are_tied_to_the_data_region(tmp_path, tfcost, infos, data, expected):
    path = gguf_file(tmp_path / "tensors.gguf", [], infos, data)
    assert expected in one_line(tfcost("inspect", str(path)))


def test_a_gguf_cut_off_where_its_data_begins_is_refused(tmp_path, tfcost):
    infos, data = llama_tensors()
    path = gguf_file(tmp_path / "cut.gguf", llama_keys(), infos, data)
    with path.open("r+b") as handle:
        handle.truncate(path.stat().st_size - data)
    assert "claims bytes 0 to 65,536 of a data region of 0" in one_line(tfcost("serve", str(path)))


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (llama_keys(blocks=80), "block_count is 80, but the blk.N tensors' layers say 1"),
        (llama_keys(width=8192), "embedding_length is 8,192, but token_embd's width say 256"),
        ([*llama_keys(), u32("llama.attention.key_length", 32)], "head_count x key_length is 128, but attn_q's rows"),
    ],
)
def test_metadata_that_disagrees_with_the_tensors_is_refused(tmp_path, tfcost, keys, expected):
    infos, data = llama_tensors()
    path = gguf_file(tmp_path / "liar.gguf", keys, infos, data)
    assert tfcost("inspect", str(path), "-f", "json").code == 0  # the bytes are still reported
    assert expected in one_line(tfcost("serve", str(path)))


def test_the_honest_hand_built_llama_is_priced(tmp_path, tfcost):
    infos, data = llama_tensors()
    path = gguf_file(tmp_path / "honest.gguf", llama_keys(), infos, data)
    result = json.loads(tfcost("serve", str(path), "-f", "json").stdout)
    assert result["memory"]["weights_bytes"] == data


# safetensors --------------------------------------------------------------------------------------------------


def safetensors_file(path: Path, header: dict[str, Any], data: int) -> Path:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(data))
    return path


@pytest.mark.parametrize(
    ("entry", "data", "expected"),
    [
        ({"dtype": "FOO9", "shape": [2**40, 2**40, 2**40], "data_offsets": [0, 8]}, 8,
         "unknown dtype 'FOO9' with 1.33e+36 elements in 8 bytes (under a bit each)"),
        ({"dtype": "F32", "shape": [1] * (MAX_RANK + 1), "data_offsets": [0, 4]}, 4, "shape is not a list of at most"),
        ({"dtype": "F32", "shape": [2**63], "data_offsets": [0, 4]}, 4, "shape is not a list of at most"),
        ({"dtype": "F32", "shape": [1], "data_offsets": [0, 10**400]}, 4, "data_offsets is not [begin, end]"),
        ({"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, 4, "its bytes end past the end of the file"),
    ],
)  # fmt: skip
def test_a_safetensors_entry_that_claims_too_much_is_one_line(tmp_path, tfcost, entry, data, expected):
    path = safetensors_file(tmp_path / "claims.safetensors", {"t": entry}, data)
    assert expected in one_line(tfcost("inspect", str(path)))


def test_tensors_that_share_bytes_are_refused(tmp_path):
    """Two tensors over the same 4 bytes would count them twice; the format lays tensors end to end."""
    entry = {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}
    path = safetensors_file(tmp_path / "shared.safetensors", {"a": entry, "b": entry}, 4)
    with pytest.raises(TfcostError, match="tensors 'a' and 'b' claim the same bytes"):
        read_safetensors(path)


# Special files ------------------------------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.parametrize("name", ["x.gguf", "x.safetensors", "folder/model.safetensors", "folder/config.json"])
@pytest.mark.parametrize("command", ["inspect", "serve"])
def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path, name, command):
    """A FIFO blocks open() for reading until a writer comes: tfcost refuses it without opening it so. The run is
    a child process, so that a regression fails (after the child's generous limit) rather than hangs the suite."""
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "config.json").write_text(
        json.dumps(
            {
                "model_type": "llama",
                "vocab_size": 64,
                "hidden_size": 32,
                "num_hidden_layers": 1,
                "num_attention_heads": 4,
                "intermediate_size": 64,
                "max_position_embeddings": 128,
            }
        )
    )
    entry = {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}
    safetensors_file(folder / "model.safetensors", {"t": entry}, 4)  # fmt: skip
    target = tmp_path / name
    target.unlink(missing_ok=True)
    os.mkfifo(target)
    assert stat.S_ISFIFO(target.stat().st_mode)
    argument = folder if name.startswith("folder/") else target
    run = run_tfcost(command, str(argument))
    if name.endswith("config.json") and command == "inspect":  # the bytes are reported, the model is not priced
        assert run.code == 0 and "the model is not priced" in run.stderr and "not a regular file" in run.stderr
    else:
        assert "not a regular file" in one_line(run)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_device_is_refused(tmp_path, tfcost):
    link = tmp_path / "zero.gguf"
    link.symlink_to("/dev/zero")
    assert "not a regular file" in one_line(tfcost("inspect", str(link)))


def test_the_readers_take_linear_time_in_the_header(tmp_path):
    """Not a timing (benchmarks/hostile_headers.py times a 100 MB header): the work a header asks for is bounded
    by its length. A string array of 1 million empty strings (8 MB) and a safetensors header of 20,000 tensors read
    to the right counts; the rate is in docs/security.md."""
    strings = struct.pack("<IQ", STRING, 1_000_000) + struct.pack("<Q", 0) * 1_000_000
    path = gguf_file(tmp_path / "strings.gguf", [key_value("s", ARRAY, strings)], [])
    assert read_gguf(path).gguf_metadata == {"s": 1_000_000}
    header = {f"t{i}": {"dtype": "U8", "shape": [1], "data_offsets": [i, i + 1]} for i in range(20_000)}
    assert len(read_safetensors(safetensors_file(tmp_path / "many.safetensors", header, 20_000))) == 20_000


def test_a_gguf_header_with_any_bytes_changed_is_read_or_refused_in_one_line(tmp_path):
    """The honest llama's header with one to six bytes overwritten, 400 ways (seeded, so every run tries the same):
    each file is read, or refused with a TfcostError; nothing else is raised (an IndexError, an OverflowError, a
    struct.error from inside would be an internal error on the command line)."""
    import random

    from tfcost.readers.safetensors import gguf_mapping

    infos, data = llama_tensors()
    header = gguf_file(tmp_path / "honest.gguf", llama_keys(), infos).read_bytes()
    rng = random.Random(37)
    outcomes = {"read": 0, "refused": 0}
    for _ in range(400):
        changed = bytearray(header)
        for _ in range(rng.randint(1, 6)):
            changed[rng.randrange(len(header))] = rng.choice([0, 255, rng.randrange(256)])
        path = tmp_path / "changed.gguf"
        path.write_bytes(bytes(changed) + bytes(data))
        try:
            gguf_mapping(read_gguf(path))
            outcomes["read"] += 1
        except TfcostError as error:
            assert "\n" not in str(error)
            outcomes["refused"] += 1
    assert outcomes["read"] > 0 and outcomes["refused"] > 0
