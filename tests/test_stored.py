"""Stored bytes from a checkpoint's files (issue 24): a sharded safetensors folder written here byte by byte (the
format: 8-byte little-endian header length, JSON header, data) with mixed dtypes and tensors the op tables do not
hold, and a GGUF file written with the gguf package's GGUFWriter (Q4_K and F16 tensors). Both report the exact
bytes, and neither has its tensor data read: the safetensors reads are counted, and the GGUF file is cut off where
its data begins. The Hub's files are read by range requests from a loopback server standing in for the Hub."""

from __future__ import annotations

import io
import json
import math
import os
import struct
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import run_tfcost

from tfcost.core.params import parameter_breakdown, total_params
from tfcost.core.stored import stored_bytes, tensor_part
from tfcost.errors import TfcostError
from tfcost.readers.presets import load_model
from tfcost.readers.safetensors import MAX_HEADER_BYTES, read_folder, read_safetensors

# A tiny Llama: vocabulary 64, width 32, 2 layers, 4 query heads and 2 key-value heads of 8, MLP 64, untied head.
TINY = {
    "model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 64, "hidden_size": 32,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 64,
    "max_position_embeddings": 128, "tie_word_embeddings": False,
}  # fmt: skip
BYTES = {"BF16": 2, "F32": 4, "F8_E4M3": 1, "U8": 1}  # bytes per element, from the safetensors format's dtypes


def tiny_tensors() -> dict[str, tuple[str, tuple[int, ...]]]:
    """The tiny Llama as an fp8 checkpoint stores it: projections in F8_E4M3 with an F32 scale each, the rest bf16
    or f32, plus an MTP layer (index 2 of 2 layers) and an adapter no op table has."""
    tensors: dict[str, tuple[str, tuple[int, ...]]] = {"model.embed_tokens.weight": ("BF16", (64, 32))}
    for i in range(2):
        layer = f"model.layers.{i}"
        for name, shape in {"q_proj": (32, 32), "k_proj": (16, 32), "v_proj": (16, 32), "o_proj": (32, 32)}.items():
            tensors[f"{layer}.self_attn.{name}.weight"] = ("F8_E4M3", shape)
            tensors[f"{layer}.self_attn.{name}.weight_scale_inv"] = ("F32", (1, 1))
        for name, shape in {"gate_proj": (64, 32), "up_proj": (64, 32), "down_proj": (32, 64)}.items():
            tensors[f"{layer}.mlp.{name}.weight"] = ("BF16", shape)
        tensors[f"{layer}.input_layernorm.weight"] = ("F32", (32,))
        tensors[f"{layer}.post_attention_layernorm.weight"] = ("F32", (32,))
    tensors["model.norm.weight"] = ("BF16", (32,))
    tensors["lm_head.weight"] = ("BF16", (64, 32))
    tensors["model.layers.2.eh_proj.weight"] = ("BF16", (32, 64))  # a multi-token-prediction layer
    tensors["model.adapter.weight"] = ("U8", (5, 3))  # no op table holds it
    return tensors


def write_safetensors(path: Path, tensors: dict[str, tuple[str, tuple[int, ...]]]) -> int:
    """A safetensors file by the format alone; its data region is random bytes (never read). Returns the header's
    length."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = math.prod(shape) * BYTES[dtype]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + os.urandom(offset))
    return len(raw)


@pytest.fixture
def tiny_folder(tmp_path: Path) -> Path:
    """The tiny model in two shards with their index, as save_pretrained writes a sharded checkpoint."""
    folder = tmp_path / "tiny-llama-fp8"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(TINY))
    tensors = list(tiny_tensors().items())
    shards = {
        "model-00001-of-00002.safetensors": dict(tensors[:20]),
        "model-00002-of-00002.safetensors": dict(tensors[20:]),
    }
    weight_map = {}
    for name, part in shards.items():
        write_safetensors(folder / name, part)
        weight_map.update(dict.fromkeys(part, name))
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return folder


def expected_bytes() -> dict[str, int]:
    by_dtype: dict[str, int] = {}
    for dtype, shape in tiny_tensors().values():
        by_dtype[dtype] = by_dtype.get(dtype, 0) + math.prod(shape) * BYTES[dtype]
    return by_dtype


def test_a_sharded_folder_reports_the_exact_bytes_by_dtype_and_part(tiny_folder):
    files = read_folder(tiny_folder)
    assert files.files == ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    shape = load_model(str(tiny_folder))
    summed = stored_bytes(files.tensors, shape)
    by_dtype = expected_bytes()  # BF16 2 x (2,048 + 6,144 + 32 + 2,048 + 2,048), F32 ..., F8 1 x 2 x 3,072, U8 15
    assert summed.by_dtype == dict(sorted(by_dtype.items(), key=lambda item: -item[1]))
    assert summed.total == sum(by_dtype.values())
    # By part: the fp8 attention with its 8 scales; the MTP layer and the adapter are outside the op tables.
    assert summed.by_part["attention"] == 2 * (32 * 32 * 2 + 16 * 32 * 2) + 2 * 4 * 4
    assert summed.by_part["mtp"] == 32 * 64 * 2 and summed.by_part["other"] == 15
    assert summed.unaccounted == ["model.layers.2.eh_proj.weight", "model.adapter.weight"]
    assert summed.served_bytes == summed.total - 32 * 64 * 2
    # The weights stored are the parameters the op tables count, part by part (scales are no parameters).
    assert {part: summed.elements_by_part[part] for part in summed.params_by_part} == summed.params_by_part
    assert sum(summed.params_by_part.values()) == total_params(shape) == sum(parameter_breakdown(shape).values())


class CountingReader(io.RawIOBase):
    """A file whose every byte read is counted (seeks too): the proof that no tensor data is read."""

    def __init__(self, path: Path, counts: dict[str, int]) -> None:
        self.inner, self.counts, self.name = open(path, "rb"), counts, path.name

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.inner.fileno()

    def readinto(self, buffer: Any) -> int:
        data = self.inner.read(len(buffer))
        buffer[: len(data)] = data
        self.counts[self.name] = self.counts.get(self.name, 0) + len(data)
        return len(data)

    def close(self) -> None:
        self.inner.close()
        super().close()


def test_no_tensor_data_is_read(tiny_folder, monkeypatch):
    import tfcost.readers.files

    counts: dict[str, int] = {}
    real_open = tfcost.readers.files.open_regular

    def counting_open(path: Path) -> Any:
        if path.suffix == ".safetensors":
            return io.BufferedReader(CountingReader(path, counts), buffer_size=1)
        return real_open(path)

    monkeypatch.setattr(tfcost.readers.files, "open_regular", counting_open)
    read_folder(tiny_folder)
    for name in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"):
        with real_open(tiny_folder / name) as handle:
            header = struct.unpack("<Q", handle.read(8))[0]
        assert counts[name] == 8 + header  # the length, the JSON header, not one byte of data


def test_the_folder_is_a_model_for_estimate_serve_and_inspect(tiny_folder, tfcost):
    estimate = json.loads(tfcost("estimate", str(tiny_folder), "-f", "json").stdout)
    total = sum(expected_bytes().values())
    assert estimate["stored"]["total_bytes"] == total and estimate["params"]["total"] == total_params(
        load_model(str(tiny_folder))
    )
    served = json.loads(tfcost("serve", str(tiny_folder), "-f", "json").stdout)
    assert served["memory"]["weights_bytes"] == total - 32 * 64 * 2  # all but the MTP layer
    assert served["weights_format"].startswith("as the files store them")
    asked = json.loads(tfcost("serve", str(tiny_folder), "--weights-dtype", "bf16", "-f", "json").stdout)
    assert asked["memory"]["weights_bytes"] == 2 * total_params(load_model(str(tiny_folder)))
    inspected = tfcost("inspect", str(tiny_folder))
    assert inspected.code == 0 and "model.adapter.weight" in inspected.stdout
    alone = json.loads(tfcost("inspect", str(tiny_folder / "model-00002-of-00002.safetensors"), "-f", "json").stdout)
    assert alone["model"] is None and alone["stored"]["unaccounted"] == [
        "model.layers.2.eh_proj.weight",
        "model.adapter.weight",
    ]


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (struct.pack("<Q", MAX_HEADER_BYTES + 1), "over the format's limit"),
        (struct.pack("<Q", 1000) + b"{}", "the header claims 1,000 bytes"),
        (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
        (b"abc", "shorter than its 8-byte header length"),
    ],
)
def test_a_broken_header_is_one_line(tmp_path, header, expected):
    path = tmp_path / "broken.safetensors"
    path.write_bytes(header)
    with pytest.raises(TfcostError, match=expected):
        read_safetensors(path)


def test_a_tensor_whose_bytes_do_not_match_its_shape_is_refused(tmp_path):
    raw = json.dumps({"w": {"dtype": "BF16", "shape": [4, 4], "data_offsets": [0, 30]}}).encode()
    path = tmp_path / "bad.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(32))
    with pytest.raises(TfcostError, match="30 bytes for BF16 of shape"):
        read_safetensors(path)


@pytest.mark.parametrize(
    ("name", "part"),
    [
        ("model.layers.0.mlp.gate.weight", "router"),
        ("model.layers.0.mlp.gate_proj.weight", "mlp"),
        ("model.layers.3.mlp.experts.7.down_proj.weight", "experts"),
        ("model.layers.3.mlp.shared_experts.up_proj.weight_scale_inv", "shared_experts"),
        ("model.layers.0.mlp.experts.gate_up_proj_blocks", "experts"),
        ("model.layers.3.mlp.gate.e_score_correction_bias", "router"),
        ("model.layers.0.self_attn.q_norm.weight", "norms"),
        ("model.vision_tower.blocks.0.attn.qkv.weight", "towers"),
        ("blk.0.attn_q.weight", "attention"),
        ("blk.1.ffn_gate_exps.weight", "experts"),
        ("blk.1.ffn_gate_inp.weight", "router"),
        ("output_norm.weight", "norms"),
        ("output.weight", "output_head"),
        ("token_embd.weight", "embedding"),
    ],
)
def test_tensor_names_are_placed_in_their_part(name, part):
    assert tensor_part(name, 4) == part


# GGUF ---------------------------------------------------------------------------------------------------------

# ggml's block_q4_K: 256 weights in 144 bytes (fp16 d and dmin, 12 bytes of 6-bit scales, 128 bytes of 4-bit
# quants); F16 2 bytes and F32 4 bytes per weight.
Q4_K_BLOCK, Q4_K_BYTES = 256, 144


def write_gguf(path: Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    """A llama-architecture GGUF (width 256, 2 layers, 4 heads and 2 key-value heads of 64, MLP 512, vocabulary 64)
    with Q4_K attention and embedding, F16 MLP, F32 norms; returns each tensor's type and shape (outermost first)."""
    gguf = pytest.importorskip("gguf")
    import numpy as np

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(2)
    writer.add_context_length(2048)
    writer.add_embedding_length(256)
    writer.add_feed_forward_length(512)
    writer.add_head_count(4)
    writer.add_head_count_kv(2)
    writer.add_layer_norm_rms_eps(1e-5)
    tensors: dict[str, tuple[str, tuple[int, ...]]] = {"token_embd.weight": ("Q4_K", (64, 256))}
    for i in range(2):
        tensors |= {
            f"blk.{i}.attn_q.weight": ("Q4_K", (256, 256)), f"blk.{i}.attn_k.weight": ("Q4_K", (128, 256)),
            f"blk.{i}.attn_v.weight": ("Q4_K", (128, 256)), f"blk.{i}.attn_output.weight": ("Q4_K", (256, 256)),
            f"blk.{i}.ffn_gate.weight": ("F16", (512, 256)), f"blk.{i}.ffn_up.weight": ("F16", (512, 256)),
            f"blk.{i}.ffn_down.weight": ("F16", (256, 512)), f"blk.{i}.attn_norm.weight": ("F32", (256,)),
            f"blk.{i}.ffn_norm.weight": ("F32", (256,)),
        }  # fmt: skip
    tensors |= {"output_norm.weight": ("F32", (256,)), "output.weight": ("Q4_K", (64, 256))}
    for name, (kind, shape) in tensors.items():
        if kind == "Q4_K":
            rows, columns = shape
            payload = np.zeros((rows, columns // Q4_K_BLOCK * Q4_K_BYTES), dtype=np.uint8)
            writer.add_tensor(name, payload, raw_dtype=gguf.GGMLQuantizationType.Q4_K)
        else:
            writer.add_tensor(name, np.ones(shape, dtype=np.float16 if kind == "F16" else np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return tensors


def gguf_bytes(kind: str, shape: tuple[int, ...]) -> int:
    n = math.prod(shape)
    return n // Q4_K_BLOCK * Q4_K_BYTES if kind == "Q4_K" else n * {"F16": 2, "F32": 4}[kind]


@pytest.fixture
def gguf_file(tmp_path: Path) -> tuple[Path, dict[str, tuple[str, tuple[int, ...]]]]:
    """The GGUF file, whose tensors the gguf package's own reader lists with the bytes gguf_bytes expects."""
    gguf = pytest.importorskip("gguf")
    path = tmp_path / "tiny-llama-Q4_K.gguf"
    tensors = write_gguf(path)
    full = gguf.GGUFReader(str(path))
    assert {t.name: int(t.n_bytes) for t in full.tensors} == {n: gguf_bytes(*v) for n, v in tensors.items()}
    return path, tensors


def test_a_gguf_file_reports_every_tensors_type_and_exact_bytes_without_its_data(gguf_file, tfcost):
    path, tensors = gguf_file
    result = json.loads(tfcost("inspect", str(path), "-f", "json").stdout)
    stored = result["stored"]
    by_dtype: dict[str, int] = {}
    for kind, shape in tensors.values():
        by_dtype[kind] = by_dtype.get(kind, 0) + gguf_bytes(kind, shape)
    assert stored["by_dtype"] == by_dtype and stored["total_bytes"] == sum(by_dtype.values())
    assert stored["unaccounted"] == []
    # Priced as the op tables price the same shape: every part's stored weights are its parameters.
    assert stored["weights_by_part"] == stored["params_by_part"]
    shape = load_model(str(path))
    assert result["parameters"] == total_params(shape) == sum(math.prod(s) for _, s in tensors.values())
    assert (shape.n_layers, shape.d_model, shape.n_heads, shape.n_kv_heads, shape.d_ff, shape.vocab_size) == (
        2, 256, 4, 2, 512, 64
    )  # fmt: skip
    served = json.loads(tfcost("serve", str(path), "-f", "json").stdout)
    assert served["memory"]["weights_bytes"] == sum(by_dtype.values())


# The Hub: range requests to a loopback server ----------------------------------------------------------------


class RangeHub(BaseHTTPRequestHandler):
    """The Hub's resolve endpoint for one sharded repository, answering Range requests with 206 and counting the
    bytes it sends; the config and index are whole files."""

    files: ClassVar[dict[str, bytes]] = {}
    sent: ClassVar[dict[str, int]] = {}

    def do_GET(self) -> None:
        prefix = "/acme/tiny-fp8/resolve/main/"
        if not self.path.startswith(prefix) or self.path[len(prefix) :] not in self.files:
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.end_headers()
            return
        name = self.path[len(prefix) :]
        body = self.files[name]
        wanted = self.headers.get("Range")
        status = 200
        if wanted:
            start, stop = (int(x) for x in wanted.removeprefix("bytes=").split("-"))
            body, status = body[start : stop + 1], 206
        self.sent[name] = self.sent.get(name, 0) + len(body)
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Repo-Commit", "0123456789abcdef0123456789abcdef01234567")
        self.send_header("ETag", f'"{abs(hash(name))}"')
        self.end_headers()
        self.wfile.write(body)

    do_HEAD = do_GET

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def range_hub(tiny_folder: Path) -> Iterator[str]:
    RangeHub.files = {path.name: path.read_bytes() for path in tiny_folder.iterdir()}
    RangeHub.sent = {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), RangeHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_hub_id_is_read_by_range_requests_for_its_headers_only(tmp_path, range_hub, tiny_folder):
    tfcost = run_tfcost  # a fresh interpreter: huggingface_hub reads HF_ENDPOINT once, when first imported
    env = {"HF_HOME": str(tmp_path / "home"), "HF_ENDPOINT": range_hub, "HF_HUB_DISABLE_TELEMETRY": "1"}
    run = tfcost("inspect", "acme/tiny-fp8", "-f", "json", env=env)
    assert run.code == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["stored"]["total_bytes"] == sum(expected_bytes().values())
    assert result["parameters"] == total_params(load_model(str(tiny_folder)))
    for name in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"):
        header = struct.unpack("<Q", RangeHub.files[name][:8])[0]
        assert RangeHub.sent[name] == 8 + header  # the length and the header, no tensor data


# LongCat-Flash: transformers' build against the checkpoint ---------------------------------------------------

SMALL_LONGCAT = {
    "model_type": "longcat_flash", "architectures": ["LongcatFlashForCausalLM"], "vocab_size": 512,
    "hidden_size": 64, "num_layers": 2, "num_attention_heads": 4, "ffn_hidden_size": 96, "expert_ffn_hidden_size": 32,
    "n_routed_experts": 8, "zero_expert_num": 4, "moe_topk": 3, "q_lora_rank": 48, "kv_lora_rank": 32,
    "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "head_dim": 8, "v_head_dim": 16, "max_position_embeddings": 256,
}  # fmt: skip


def test_transformers_saves_longcat_zero_experts_the_checkpoint_does_not_hold(tmp_path, tfcost):
    """transformers 5.24's LongcatFlashExperts allocates gate_up_proj for E + Z experts and down_proj for E
    (its forward sends an expert index >= E to nn.Identity), and save_pretrained writes gate_proj and up_proj for
    the Z zero experts: 2 x Z x F x d per MoE layer that the published checkpoint (E experts, GPTQModel's
    LongCat module tree) does not have. tfcost counts the E real experts and reports the rest as outside its op
    tables: for the default config, 560.66 B against transformers' 741.05 B (docs/checkpoints.md)."""
    pytest.importorskip("transformers", reason="needs tfcost[hf]")
    from transformers import AutoConfig, AutoModelForCausalLM

    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**SMALL_LONGCAT))
    model.save_pretrained(tmp_path)
    result = json.loads(tfcost("inspect", str(tmp_path), "-f", "json").stdout)
    stored = result["stored"]
    zero = [
        f"model.layers.{i}.mlp.experts.{e}.{p}_proj.weight"
        for i in range(2)
        for e in range(8, 12)
        for p in ("gate", "up")
    ]
    assert sorted(stored["unaccounted"]) == sorted(zero)
    layers, z, f, d = 2, 4, 32, 64
    built = sum(p.numel() for p in model.parameters())
    assert built - result["parameters"] == layers * z * 2 * f * d  # the zero experts' gate and up rows
    assert stored["unaccounted_bytes"] == 4 * layers * z * 2 * f * d  # saved as float32
    # What is left is the parameters, and the router's e_score_correction_bias (a buffer of E + Z per MoE layer).
    assert stored["total_bytes"] - stored["unaccounted_bytes"] == 4 * (result["parameters"] + layers * 12)


def test_hub_failures_are_one_line_each(tmp_path, range_hub):
    tfcost = run_tfcost  # a fresh interpreter: huggingface_hub reads HF_ENDPOINT once, when first imported
    env = {"HF_HOME": str(tmp_path / "home"), "HF_ENDPOINT": range_hub, "HF_HUB_DISABLE_TELEMETRY": "1"}
    del RangeHub.files["model-00002-of-00002.safetensors"]  # the index names a shard the server does not have
    missing = tfcost("inspect", "acme/tiny-fp8", env=env)
    assert missing.code == 1 and missing.stderr.count("\n") == 1
    assert "the repository has no model-00002-of-00002.safetensors" in missing.stderr  # the 404, said plainly
    offline = tfcost("inspect", "acme/tiny-fp8", env={**env, "HF_HUB_OFFLINE": "1"})
    assert offline.code == 1 and offline.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("content", "expected"),
    [(b"GGML" + bytes(20), "not a GGUF file"), (b"GGUF" + struct.pack("<I", 9) + bytes(16), "GGUF version 9")],
)
def test_a_broken_gguf_file_is_one_line(tmp_path, tfcost, content, expected):
    pytest.importorskip("gguf")
    path = tmp_path / "broken.gguf"
    path.write_bytes(content)
    run = tfcost("inspect", str(path))
    assert run.code == 1 and run.stderr.count("\n") == 1 and expected in run.stderr


def test_inspect_of_nothing_is_one_line(tmp_path, tfcost):
    run = tfcost("inspect", str(tmp_path / "nothing-here"))
    assert run.code == 1 and "no such file or folder" in run.stderr


def test_a_folder_whose_config_tfcost_cannot_read_still_reports_its_bytes(tiny_folder, tfcost):
    (tiny_folder / "config.json").write_text(json.dumps({**TINY, "model_type": "no_such_family"}))
    run = tfcost("inspect", str(tiny_folder), "-f", "json")
    assert run.code == 0 and "the model is not priced" in run.stderr and "no_such_family" in run.stderr
    result = json.loads(run.stdout)
    assert result["parameters"] is None and result["stored"]["total_bytes"] == sum(expected_bytes().values())
