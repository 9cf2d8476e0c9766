"""The tensors a checkpoint stores, from the headers of its files alone: safetensors (8-byte little-endian header
length, then that many bytes of JSON naming each tensor's dtype, shape and byte range; the safetensors format,
huggingface/safetensors) and GGUF (llama.cpp's format, read with the types of the `gguf` package). No tensor data
is ever read: a header is bounded (safetensors' own limit of 100 MB; GGUF's strings and arrays by count), and
every tensor's bytes come from its offsets (safetensors) or its type and shape (GGUF). Pure parsing; what the
bytes mean for a model is tfcost.core.stored's.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tfcost.errors import TfcostError

# safetensors refuses a header over 100 MB (SafeTensorError::HeaderTooLarge, "larger than 100Mo"): so does tfcost,
# before reading it.
MAX_HEADER_BYTES = 100_000_000
# Bits per element of every safetensors dtype (the format's Dtype enum); F4 and the F6s pack below a byte.
DTYPE_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "E8M0": 8, "I16": 16, "U16": 16,
    "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "F64": 64, "I64": 64, "U64": 64, "F4": 4,
    "F6_E2M3": 6, "F6_E3M2": 6,
}  # fmt: skip
INDEX = "model.safetensors.index.json"


@dataclass(frozen=True)
class StoredTensor:
    """One tensor as a file stores it: its name, dtype (safetensors' name, or GGUF's quantization type), shape
    (outermost first) and bytes, and the file it is in."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    file: str

    @property
    def elements(self) -> int:
        return math.prod(self.shape)


@dataclass
class StoredFiles:
    """What a model's files hold: every tensor, and for a GGUF file its metadata (architecture and sizes)."""

    tensors: list[StoredTensor]
    files: list[str]
    gguf_metadata: dict[str, Any] = field(default_factory=dict)


def read_exactly(handle: IO[bytes], count: int, where: str) -> bytes:
    data = handle.read(count)
    if len(data) != count:
        raise TfcostError(f"{where}: the file ends inside its header ({len(data)} of {count} bytes)")
    return data


def header_length(first_eight: bytes, where: str, file_size: int | None = None) -> int:
    """The JSON header's length from a safetensors file's first 8 bytes, checked against the limit and the file."""
    if len(first_eight) != 8:
        raise TfcostError(f"{where}: not a safetensors file (shorter than its 8-byte header length)")
    (length,) = struct.unpack("<Q", first_eight)
    if length > MAX_HEADER_BYTES:
        raise TfcostError(
            f"{where}: a safetensors header of {length:,} bytes is over the format's limit ({MAX_HEADER_BYTES:,})"
        )
    if file_size is not None and 8 + length > file_size:
        raise TfcostError(f"{where}: the header claims {length:,} bytes; the file has {file_size:,}")
    return length


def parse_header(raw: bytes, where: str, data_bytes: int | None = None) -> list[StoredTensor]:
    """The tensors a safetensors JSON header describes. Each entry's byte range must match its dtype and shape
    (for the dtypes of DTYPE_BITS) and, when the data region's length is known, lie inside it."""

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        mapping: dict[str, Any] = {}
        for key, value in pairs:
            if key in mapping:
                raise TfcostError(f"{where}: tensor '{key}' is written twice in the header")
            mapping[key] = value
        return mapping

    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=unique)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise TfcostError(f"{where}: the safetensors header is not JSON") from None
    if not isinstance(header, dict):
        raise TfcostError(f"{where}: the safetensors header is not a JSON object")
    tensors = []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        tensors.append(tensor_entry(name, entry, where, data_bytes))
    return tensors


def tensor_entry(name: str, entry: Any, where: str, data_bytes: int | None) -> StoredTensor:
    bad = f"{where}: tensor {name[:200]!r}"
    if not isinstance(entry, dict):
        raise TfcostError(f"{bad}: its entry is not an object")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if not isinstance(dtype, str) or not dtype.isascii() or not dtype.replace("_", "").isalnum() or len(dtype) > 16:
        raise TfcostError(f"{bad}: dtype is not a name")
    if not isinstance(shape, list) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise TfcostError(f"{bad}: shape is not a list of sizes")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(n, int) and not isinstance(n, bool) for n in offsets)
        or not 0 <= offsets[0] <= offsets[1]
    ):
        raise TfcostError(f"{bad}: data_offsets is not [begin, end]")
    nbytes = offsets[1] - offsets[0]
    bits = DTYPE_BITS.get(dtype)
    if bits is not None and nbytes != math.ceil(math.prod(shape) * bits / 8):
        raise TfcostError(f"{bad}: {nbytes:,} bytes for {dtype} of shape {shape}")
    if data_bytes is not None and offsets[1] > data_bytes:
        raise TfcostError(f"{bad}: its bytes end past the end of the file")
    return StoredTensor(name, dtype, tuple(shape), nbytes, where)


def read_safetensors(path: Path) -> list[StoredTensor]:
    """The tensors of one .safetensors file, from its header alone."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            length = header_length(handle.read(8), path.name, size)
            raw = read_exactly(handle, length, path.name)
    except OSError as error:
        raise TfcostError(f"{path}: cannot read: {error.strerror}") from None
    # The data region's length is what the file holds past its header; a tensor past it is refused.
    return parse_header(raw, path.name, size - 8 - length)


def shard_names(folder: Path) -> list[str]:
    """The safetensors files of a model folder: those its index's weight_map names, else every *.safetensors."""
    index = folder / INDEX
    if index.is_file():
        from tfcost.readers.files import read_json_mapping

        weight_map = read_json_mapping(index).get("weight_map")
        if not isinstance(weight_map, dict) or not all(isinstance(name, str) for name in weight_map.values()):
            raise TfcostError(f"{index}: weight_map should map tensor names to file names")
        names = sorted(set(weight_map.values()))
        for name in names:
            if Path(name).name != name or not name.endswith(".safetensors"):
                raise TfcostError(f"{index}: weight_map names {name[:200]!r}, not a .safetensors file beside it")
        return names
    return sorted(path.name for path in folder.glob("*.safetensors"))


def read_folder(folder: Path) -> StoredFiles:
    """Every tensor of a model folder's safetensors files (sharded or not)."""
    names = shard_names(folder)
    if not names:
        raise TfcostError(f"{folder}: no .safetensors files")
    tensors = []
    for name in names:
        path = folder / name
        if not path.is_file():
            raise TfcostError(f"{folder}: {name} (named by {INDEX}) is not there")
        tensors += read_safetensors(path)
    return StoredFiles(tensors, names)


# GGUF ---------------------------------------------------------------------------------------------------------

MAX_GGUF_STRING = 1 << 20  # a key, a tensor name or one metadata string; a vocabulary entry is a few bytes
MAX_GGUF_COUNT = 1 << 24  # tensors, keys, or items in one metadata array (vocabularies are ~10^5 to 10^6)
GGUF_VERSIONS = (2, 3)


class GgufHeader:
    """A GGUF file's header read field by field (GGUF v2/v3: magic, version, tensor and key counts, the metadata
    key-values, the tensor infos), through the `gguf` package's type tables. Arrays keep only their length, or
    their items when they are numbers (at most 4,096 of them); strings inside arrays are skipped."""

    def __init__(self, handle: IO[bytes], where: str) -> None:
        from gguf import GGUFValueType

        self.handle, self.where = handle, where
        self.scalar: dict[int, str] = {
            GGUFValueType.UINT8: "B", GGUFValueType.INT8: "b", GGUFValueType.UINT16: "H", GGUFValueType.INT16: "h",
            GGUFValueType.UINT32: "I", GGUFValueType.INT32: "i", GGUFValueType.FLOAT32: "f",
            GGUFValueType.BOOL: "?", GGUFValueType.UINT64: "Q", GGUFValueType.INT64: "q",
            GGUFValueType.FLOAT64: "d",
        }  # fmt: skip
        self.string_kind, self.array_kind = GGUFValueType.STRING, GGUFValueType.ARRAY

    def unpack(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        return struct.unpack("<" + fmt, read_exactly(self.handle, size, self.where))[0]

    def count(self, what: str) -> int:
        value = int(self.unpack("Q"))
        if value > MAX_GGUF_COUNT:
            raise TfcostError(f"{self.where}: {value:,} {what} is more than a GGUF header holds")
        return value

    def string_length(self) -> int:
        length = int(self.unpack("Q"))
        if length > MAX_GGUF_STRING:
            raise TfcostError(f"{self.where}: a string of {length:,} bytes in the GGUF header")
        return length

    def string(self) -> str:
        return read_exactly(self.handle, self.string_length(), self.where).decode("utf-8", errors="replace")

    def value(self, kind: int, keep: bool = True) -> Any:
        if kind in self.scalar:
            return self.unpack(self.scalar[kind])
        if kind == self.string_kind:
            if keep:
                return self.string()
            self.handle.seek(self.string_length(), 1)  # a vocabulary entry: passed over, not kept
            return None
        if kind == self.array_kind:
            item_kind, length = int(self.unpack("I")), self.count("array items")
            small = length <= 4096 and item_kind != self.string_kind
            items = [self.value(item_kind, keep=keep and small) for _ in range(length)]
            return items if keep and small else length
        raise TfcostError(f"{self.where}: unknown GGUF value type {kind}")


def read_gguf(path: Path) -> StoredFiles:
    """A GGUF file's metadata and tensors (name, quantization type, shape, bytes), from its header alone."""
    from gguf import GGML_QUANT_SIZES, GGUF_MAGIC, GGMLQuantizationType

    try:
        with path.open("rb") as handle:
            header = GgufHeader(handle, path.name)
            if len(magic := handle.read(4)) != 4 or struct.unpack("<I", magic)[0] != GGUF_MAGIC:
                raise TfcostError(f"{path.name}: not a GGUF file (no GGUF magic)")
            version = header.unpack("I")
            if version not in GGUF_VERSIONS:
                raise TfcostError(f"{path.name}: GGUF version {version} is not supported (2 and 3 are)")
            tensor_count, key_count = header.count("tensors"), header.count("metadata keys")
            metadata: dict[str, Any] = {}
            for _ in range(key_count):
                key = header.string()
                metadata[key] = header.value(int(header.unpack("I")))
            tensors = []
            for _ in range(tensor_count):
                name = header.string()
                dims = [header.count("elements") for _ in range(header.unpack("I"))]
                kind, _offset = int(header.unpack("I")), header.unpack("Q")
                try:
                    quant = GGMLQuantizationType(kind)
                except ValueError:
                    raise TfcostError(f"{path.name}: tensor {name[:200]!r} has unknown type {kind}") from None
                block, type_size = GGML_QUANT_SIZES[quant]
                elements = math.prod(dims)
                if elements % block:
                    raise TfcostError(f"{path.name}: tensor {name[:200]!r} is not whole {quant.name} blocks")
                # GGUF writes dimensions innermost first; the shape is kept outermost first, as safetensors has it.
                shape = tuple(reversed(dims))
                tensors.append(StoredTensor(name, quant.name, shape, elements // block * type_size, path.name))
    except OSError as error:
        raise TfcostError(f"{path}: cannot read: {error.strerror}") from None
    return StoredFiles(tensors, [path.name], metadata)


def read_stored(path: Path) -> StoredFiles:
    """The stored tensors of a model folder (safetensors shards), a .safetensors file or a .gguf file."""
    if path.is_dir():
        return read_folder(path)
    if path.suffix == ".gguf":
        return read_gguf(path)
    if path.suffix == ".safetensors":
        return StoredFiles(read_safetensors(path), [path.name])
    raise TfcostError(f"{path}: not a model folder, a .safetensors file or a .gguf file")


# The GGUF architectures whose shape tfcost reads: Llama-like decoders (RMSNorm, rotary positions, a gated MLP),
# with q/k/v biases, q/k norms and experts found from the tensors themselves.
GGUF_ARCHITECTURES = ("llama", "mistral", "qwen2", "qwen3", "qwen2moe", "qwen3moe")


def gguf_int(metadata: dict[str, Any], key: str, where: str, default: int | None = None) -> int:
    value = metadata.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        if value is None:
            raise TfcostError(f"{where}: GGUF metadata has no '{key}'")
        raise TfcostError(f"{where}: GGUF metadata '{key}' should be a size, not {value!r}")
    return value


def gguf_mapping(stored: StoredFiles) -> dict[str, Any]:
    """The preset mapping of a GGUF file's model, from its metadata (`llama.block_count` and the rest, llama.cpp's
    keys) and its tensors' names and shapes: the vocabulary is token_embd's rows; no `output.weight` means a tied
    head; `attn_q.bias`, `attn_q_norm` and `ffn_gate_inp` mean q/k/v biases, q/k norms and experts."""
    where = stored.files[0] if stored.files else "GGUF file"
    metadata = stored.gguf_metadata
    arch = metadata.get("general.architecture")
    if arch not in GGUF_ARCHITECTURES:
        shown = repr(arch)[:60]
        raise TfcostError(
            f"{where}: GGUF architecture {shown} is not one tfcost reads the shape of ({', '.join(GGUF_ARCHITECTURES)})"
        )
    names = {tensor.name: tensor for tensor in stored.tensors}
    embedding = names.get("token_embd.weight")
    if embedding is None or len(embedding.shape) != 2:
        raise TfcostError(f"{where}: no token_embd.weight [vocabulary, width] tensor")
    heads = gguf_int(metadata, f"{arch}.attention.head_count", where)
    width = gguf_int(metadata, f"{arch}.embedding_length", where)
    mapping: dict[str, Any] = {
        "vocab_size": embedding.shape[0],
        "d_model": width,
        "n_layers": gguf_int(metadata, f"{arch}.block_count", where),
        "n_heads": heads,
        "n_kv_heads": gguf_int(metadata, f"{arch}.attention.head_count_kv", where, heads),
        "head_dim": gguf_int(metadata, f"{arch}.attention.key_length", where, width // max(heads, 1)),
        "d_ff": gguf_int(metadata, f"{arch}.feed_forward_length", where, 0),
        "mlp": "gated",
        "norm": "rmsnorm",
        "position": "rotary",
        "max_seq_len": gguf_int(metadata, f"{arch}.context_length", where),
        "tied_embeddings": "output.weight" not in names,
    }
    if "blk.0.attn_q.bias" in names:
        mapping["bias"] = {"qkv": True, "attn_out": "blk.0.attn_output.bias" in names, "mlp": False}
    if "blk.0.attn_q_norm.weight" in names:
        mapping["qk_norm"] = True
    if f"{arch}.expert_count" in metadata:
        shared = gguf_int(metadata, f"{arch}.expert_shared_count", where, 0)
        mapping["moe"] = {
            "n_experts": gguf_int(metadata, f"{arch}.expert_count", where),
            "experts_per_token": gguf_int(metadata, f"{arch}.expert_used_count", where),
            "expert_d_ff": gguf_int(metadata, f"{arch}.expert_feed_forward_length", where),
            "n_shared_experts": shared,
        }
    name = metadata.get("general.name")
    mapping["name"] = name if isinstance(name, str) and name.isprintable() and len(name) < 100 else Path(where).stem
    mapping["source"] = f"GGUF file {where} (architecture {arch})"
    return mapping
