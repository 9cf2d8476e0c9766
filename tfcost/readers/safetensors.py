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
import os
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


# No tensor has more dimensions than this (NumPy's own limit, NPY_MAXDIMS in NumPy 2), nor a dimension, an offset
# or a byte count past 2^63 (safetensors' offsets are u64s, its shapes usizes; no file holds 2^63 bytes): with both
# bounds a shape's product is a few dozen multiplications of small integers, whatever the header says.
MAX_RANK = 64
MAX_SIZE = 1 << 63
# The most tensors one header may list: DeepSeek-V3's 163 shards list 91,991 between them, and the largest
# published checkpoints (Kimi K2's 61 layers of 384 fp8 experts, each weight with its scale) about 145,000; more
# in one file is no checkpoint, and each costs a few microseconds to check.
MAX_TENSORS = 1 << 18
MAX_CONTAINERS = 4 * MAX_TENSORS


def parse_header(raw: bytes, where: str, data_bytes: int | None = None) -> list[StoredTensor]:
    """The tensors a safetensors JSON header describes. Each entry's byte range must match its dtype and shape
    (for the dtypes of DTYPE_BITS; an unknown dtype must hold at least one bit an element) and, when the data
    region's length is known, lie inside it; no two ranges may overlap, so that the bytes claimed in all are at most
    the data region's. Time and memory grow linearly with the header's length (json's C parser, then a few
    microseconds a tensor)."""

    # Every JSON object comes back as its list of (key, value) pairs (`list` is called from json's C scanner, so
    # a header of millions of objects costs no Python call each), and only the top level's keys are looked at.
    # Objects and arrays are counted first: a tensor's entry is 3 of them, and __metadata__ (a map of strings, in
    # the format) a few; more than MAX_CONTAINERS is no header of at most MAX_TENSORS tensors.
    containers = raw.count(b"{") + raw.count(b"[")
    if containers > MAX_CONTAINERS:
        raise TfcostError(
            f"{where}: the safetensors header holds {containers:,} objects and arrays (at most {MAX_CONTAINERS:,})"
        )
    try:
        pairs = json.loads(raw.decode("utf-8"), object_pairs_hook=list)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise TfcostError(f"{where}: the safetensors header is not JSON") from None
    if not isinstance(pairs, list) or not raw.lstrip().startswith(b"{"):
        raise TfcostError(f"{where}: the safetensors header is not a JSON object")
    if len(pairs) > MAX_TENSORS + 1:
        raise TfcostError(f"{where}: the header lists {len(pairs) - 1:,} tensors (at most {MAX_TENSORS:,} are read)")
    seen: set[str] = set()
    tensors = []
    ranges = []
    for name, entry in pairs:
        if name in seen:
            raise TfcostError(f"{where}: tensor {name[:200]!r} is written twice in the header")
        seen.add(name)
        if name == "__metadata__":
            continue
        fields = dict(entry) if isinstance(entry, list) else None
        if fields is not None and len(fields) != len(entry):
            raise TfcostError(f"{where}: tensor {name[:200]!r} has a key written twice")
        tensor, begin = tensor_entry(name, fields, where, data_bytes)
        tensors.append(tensor)
        ranges.append((begin, begin + tensor.nbytes, name))
    refuse_overlaps(ranges, where)
    return tensors


def refuse_overlaps(ranges: list[tuple[int, int, str]], where: str) -> None:
    """Byte ranges [begin, end) of the data region that no two tensors share (empty ones aside): a header cannot
    claim more bytes than the file holds by pointing many tensors at the same ones."""
    end, last = 0, ""
    for begin, stop, name in sorted(item for item in ranges if item[1] > item[0]):
        if begin < end:
            raise TfcostError(f"{where}: tensors {last[:100]!r} and {name[:100]!r} claim the same bytes")
        end, last = stop, name


def size_text(value: int) -> str:
    """A byte count or offset as a person reads it: with thousands separators, or in powers of ten when longer."""
    return f"{value:,}" if value < 10**18 else f"{value:.3g}"


def is_size(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_SIZE


def tensor_entry(name: str, entry: Any, where: str, data_bytes: int | None) -> tuple[StoredTensor, int]:
    """One header entry as a StoredTensor, and where its bytes begin in the data region."""
    bad = f"{where}: tensor {name[:200]!r}"
    if not isinstance(entry, dict):
        raise TfcostError(f"{bad}: its entry is not an object")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if not isinstance(dtype, str) or not dtype.isascii() or not dtype.replace("_", "").isalnum() or len(dtype) > 16:
        raise TfcostError(f"{bad}: dtype is not a name")
    if not isinstance(shape, list) or len(shape) > MAX_RANK or not all(is_size(n) for n in shape):
        raise TfcostError(f"{bad}: shape is not a list of at most {MAX_RANK} sizes below 2^63")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(is_size(n) for n in offsets):
        raise TfcostError(f"{bad}: data_offsets is not [begin, end]")
    if offsets[0] > offsets[1]:
        raise TfcostError(f"{bad}: data_offsets is not [begin, end]")
    nbytes = offsets[1] - offsets[0]
    if data_bytes is not None and offsets[1] > data_bytes:
        raise TfcostError(f"{bad}: its bytes end past the end of the file")
    elements = math.prod(shape)
    bits = DTYPE_BITS.get(dtype)
    if bits is not None and nbytes != math.ceil(elements * bits / 8):
        raise TfcostError(f"{bad}: {nbytes:,} bytes for {dtype} of shape {shape}")
    if bits is None and elements > 8 * nbytes:
        raise TfcostError(
            f"{bad}: unknown dtype {dtype!r} with {elements:.3g} elements in {nbytes:,} bytes (under a bit each)"
        )
    return StoredTensor(name, dtype, tuple(shape), nbytes, where), offsets[0]


def read_safetensors(path: Path) -> list[StoredTensor]:
    """The tensors of one .safetensors file, from its header alone."""
    from tfcost.readers.files import open_regular

    try:
        with open_regular(path) as handle:
            size = os.fstat(handle.fileno()).st_size
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

        return checked_shard_names(read_json_mapping(index).get("weight_map"), str(index))
    return sorted(path.name for path in folder.glob("*.safetensors"))


def checked_shard_names(weight_map: Any, where: str) -> list[str]:
    """The file names an index's weight_map names, each a plain .safetensors file name (no folder, no `..`): the
    same rule for a local folder's index and a Hub repository's."""
    if not isinstance(weight_map, dict) or not all(isinstance(name, str) for name in weight_map.values()):
        raise TfcostError(f"{where}: weight_map should map tensor names to file names")
    names = sorted(set(weight_map.values()))
    for name in names:
        if (
            Path(name).name != name
            or "/" in name
            or "\\" in name
            or name.startswith(".")
            or not name.endswith(".safetensors")
            or not name.isprintable()
        ):
            raise TfcostError(f"{where}: weight_map names {name[:200]!r}, not a .safetensors file beside it")
    return names


def read_folder(folder: Path) -> StoredFiles:
    """Every tensor of a model folder's safetensors files (sharded or not)."""
    names = shard_names(folder)
    if not names:
        raise TfcostError(f"{folder}: no .safetensors files")
    tensors = []
    for name in names:
        path = folder / name
        if not path.exists():
            raise TfcostError(f"{folder}: {name} (named by {INDEX}) is not there")
        tensors += read_safetensors(path)
    return StoredFiles(tensors, names)


# GGUF ---------------------------------------------------------------------------------------------------------

MAX_GGUF_STRING = 1 << 20  # a key, a tensor name or one metadata string; a vocabulary entry is a few bytes
GGUF_VERSIONS = (2, 3)
GGML_MAX_DIMS = 4  # ggml.h: "#define GGML_MAX_DIMS 4"; gguf.cpp refuses a tensor with more
GGUF_DEFAULT_ALIGNMENT = 32  # gguf.h: "#define GGUF_DEFAULT_ALIGNMENT 32", unless general.alignment says otherwise
KEEP_ARRAY_ITEMS = 4096  # number arrays up to this long are kept; longer ones, and string arrays, only counted


class GgufHeader:
    """A GGUF file's header (GGUF v2/v3: magic, version, tensor and key counts, the metadata key-values, the tensor
    infos) read from the mapped file through the `gguf` package's type tables. Every count is checked against the
    bytes left in the file before anything is read for it (each item of any kind takes at least one byte); arrays
    of numbers are passed over in one step, strings in arrays one length at a time, so the time is at most a fraction
    of a microsecond per 8 bytes of header. Arrays keep only their length, or their items when they are numbers (at
    most KEEP_ARRAY_ITEMS of them); arrays of arrays are refused, as ggml refuses them."""

    def __init__(self, data: Any, where: str) -> None:
        from gguf import GGUFValueType

        self.data, self.where, self.position = data, where, 0
        self.scalar: dict[int, struct.Struct] = {
            kind: struct.Struct("<" + fmt)
            for kind, fmt in {
                GGUFValueType.UINT8: "B", GGUFValueType.INT8: "b", GGUFValueType.UINT16: "H",
                GGUFValueType.INT16: "h", GGUFValueType.UINT32: "I", GGUFValueType.INT32: "i",
                GGUFValueType.FLOAT32: "f", GGUFValueType.BOOL: "?", GGUFValueType.UINT64: "Q",
                GGUFValueType.INT64: "q", GGUFValueType.FLOAT64: "d",
            }.items()
        }  # fmt: skip
        self.string_kind, self.array_kind = GGUFValueType.STRING, GGUFValueType.ARRAY
        self.u32, self.u64 = self.scalar[GGUFValueType.UINT32], self.scalar[GGUFValueType.UINT64]

    @property
    def left(self) -> int:
        return len(self.data) - self.position

    def ends(self, wanted: int) -> TfcostError:
        return TfcostError(
            f"{self.where}: the file ends inside its header ({self.left:,} bytes left, {wanted:,} needed)"
        )

    def unpack(self, layout: struct.Struct) -> Any:
        if layout.size > self.left:
            raise self.ends(layout.size)
        (value,) = layout.unpack_from(self.data, self.position)
        self.position += layout.size
        return value

    def count(self, what: str, item_bytes: int) -> int:
        """A count the header claims, of items at least `item_bytes` long each, checked against the bytes left."""
        value = int(self.unpack(self.u64))
        if value * item_bytes > self.left:
            raise TfcostError(
                f"{self.where}: the header claims {value:,} {what}, more than the {self.left:,} bytes left can hold"
            )
        return value

    def string(self) -> str:
        length = int(self.unpack(self.u64))
        if length > MAX_GGUF_STRING:
            raise TfcostError(f"{self.where}: a string of {length:,} bytes in the GGUF header")
        if length > self.left:
            raise self.ends(length)
        text = bytes(self.data[self.position : self.position + length]).decode("utf-8", errors="replace")
        self.position += length
        return text

    def skip_strings(self, count: int) -> None:
        """`count` strings passed over: their lengths read one by one, their bytes never."""
        data, position, unpack = self.data, self.position, self.u64.unpack_from
        try:
            for _ in range(count):
                position += 8 + unpack(data, position)[0]
        except struct.error:
            position = len(data) + 1
        if position > len(data):
            raise self.ends(position - self.position)
        self.position = position

    def value(self, kind: int) -> Any:
        if kind in self.scalar:
            return self.unpack(self.scalar[kind])
        if kind == self.string_kind:
            return self.string()
        if kind != self.array_kind:
            raise TfcostError(f"{self.where}: unknown GGUF value type {kind}")
        item_kind = int(self.unpack(self.u32))
        if item_kind in self.scalar:
            layout = self.scalar[item_kind]
            length = self.count("array items", layout.size)
            if length > KEEP_ARRAY_ITEMS:
                self.position += length * layout.size
                return length
            items = list(struct.unpack_from(f"<{length}{layout.format[1:]}", self.data, self.position))
            self.position += length * layout.size
            return items
        if item_kind == self.string_kind:
            length = self.count("strings", 8)
            self.skip_strings(length)
            return length
        if item_kind == self.array_kind:
            # ggml's own reader refuses them (gguf.cpp, gguf_init_from_file_impl: "case GGUF_TYPE_ARRAY: default:
            # ... key '%s' has invalid GGUF type"), so no file llama.cpp loads holds one.
            raise TfcostError(f"{self.where}: an array of arrays in the GGUF header (llama.cpp reads none)")
        raise TfcostError(f"{self.where}: unknown GGUF value type {item_kind}")


def read_gguf(path: Path) -> StoredFiles:
    """A GGUF file's metadata and tensors (name, quantization type, shape, bytes), from its header alone, mapped
    rather than read (no more of the file is touched than its header). Every tensor's bytes must lie inside the
    data region after the header, aligned, and no two tensors may share bytes."""
    import mmap

    from tfcost.readers.files import open_regular

    try:
        with open_regular(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < 24:
                raise TfcostError(f"{path.name}: not a GGUF file ({size} bytes, shorter than any GGUF header)")
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return parse_gguf(data, path.name)
    except OSError as error:
        raise TfcostError(f"{path}: cannot read: {error.strerror}") from None


def parse_gguf(data: Any, where: str) -> StoredFiles:
    """parse_gguf of the bytes of a whole GGUF file (mapped)."""
    from gguf import GGML_QUANT_SIZES, GGUF_MAGIC, GGMLQuantizationType

    header = GgufHeader(data, where)
    if int(header.unpack(header.u32)) != GGUF_MAGIC:
        raise TfcostError(f"{where}: not a GGUF file (no GGUF magic)")
    version = header.unpack(header.u32)
    if version not in GGUF_VERSIONS:
        raise TfcostError(f"{where}: GGUF version {version} is not supported (2 and 3 are)")
    # A tensor info is at least 32 bytes (an empty name's length, one dimension, a type, an offset); a key-value at
    # least 13 (an empty key's length, a type, a one-byte value).
    tensor_count, key_count = header.count("tensors", 32), header.count("metadata keys", 13)
    metadata: dict[str, Any] = {}
    for _ in range(key_count):
        key = header.string()
        if key in metadata:
            raise TfcostError(f"{where}: metadata key {key[:200]!r} is written twice")
        metadata[key] = header.value(int(header.unpack(header.u32)))
    if tensor_count > MAX_TENSORS:
        raise TfcostError(f"{where}: the header lists {tensor_count:,} tensors (at most {MAX_TENSORS:,} are read)")
    tensors, ranges = [], []
    types: dict[int, tuple[str, int, int]] = {}
    for _ in range(tensor_count):
        name = header.string()
        rank = int(header.unpack(header.u32))
        if not 1 <= rank <= GGML_MAX_DIMS:
            raise TfcostError(f"{where}: tensor {name[:200]!r} has {rank:,} dimensions (GGUF allows 1 to 4)")
        if 8 * rank + 12 > header.left:
            raise header.ends(8 * rank + 12)
        *dims, kind, offset = struct.unpack_from(f"<{rank}QIQ", data, header.position)
        header.position += 8 * rank + 12
        if kind not in types:
            try:
                quant = GGMLQuantizationType(kind)
            except ValueError:
                raise TfcostError(f"{where}: tensor {name[:200]!r} has unknown type {kind}") from None
            types[kind] = (quant.name, *GGML_QUANT_SIZES[quant])
        type_name, block, type_size = types[kind]
        if dims[0] % block:  # ggml quantizes along the innermost dimension, a row of whole blocks
            raise TfcostError(f"{where}: tensor {name[:200]!r} is not whole {type_name} blocks")
        # GGUF writes dimensions innermost first; the shape is kept outermost first, as safetensors has it.
        nbytes = math.prod(dims) // block * type_size
        tensors.append(StoredTensor(name, type_name, tuple(reversed(dims)), nbytes, where))
        ranges.append((offset, offset + nbytes, name))
    alignment = metadata.get("general.alignment", GGUF_DEFAULT_ALIGNMENT)
    if not isinstance(alignment, int) or isinstance(alignment, bool) or alignment <= 0 or alignment & (alignment - 1):
        raise TfcostError(f"{where}: general.alignment {alignment!r} is not a power of two")
    data_start = -(-header.position // alignment) * alignment
    data_bytes = max(len(data) - data_start, 0)
    for begin, end, name in ranges:
        if begin % alignment:
            raise TfcostError(f"{where}: tensor {name[:200]!r} starts at {begin:,}, not a multiple of {alignment}")
        if end > data_bytes:
            raise TfcostError(
                f"{where}: tensor {name[:200]!r} claims bytes {size_text(begin)} to {size_text(end)} of a data "
                f"region of {data_bytes:,}"
            )
    refuse_overlaps(ranges, where)
    return StoredFiles(tensors, [where], metadata)


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
    refuse_disagreements(mapping, names, where)
    name = metadata.get("general.name")
    mapping["name"] = name if isinstance(name, str) and name.isprintable() and len(name) < 100 else Path(where).stem
    mapping["source"] = f"GGUF file {where} (architecture {arch})"
    return mapping


def refuse_disagreements(mapping: dict[str, Any], names: dict[str, StoredTensor], where: str) -> None:
    """The sizes GGUF metadata claims, checked against the tensors the file lists (the tensors are what is stored
    and priced; metadata that disagrees with them is refused, naming both): the layers are the blk.N indices, the
    width token_embd's columns, the query and key heads attn_q's and attn_k's rows, the MLP ffn_up's rows and the
    experts ffn_gate_exps' outermost dimension (llama.cpp's tensor layouts, outermost first)."""
    import re

    blocks = {int(match.group(1)) for name in names if (match := re.match(r"blk\.(\d{1,9})\.", name))}
    checks: list[tuple[str, Any, int | None, str]] = [
        ("block_count", mapping["n_layers"], max(blocks) + 1 if blocks else 0, "the blk.N tensors' layers")
    ]
    checks.append(("embedding_length", mapping["d_model"], names["token_embd.weight"].shape[1], "token_embd's width"))

    def rows(tensor: str, at: int = 0) -> int | None:
        found = names.get(f"blk.0.{tensor}.weight")
        return found.shape[at] if found is not None and len(found.shape) > at else None

    head_dim = mapping["head_dim"]
    checks.append(("head_count x key_length", mapping["n_heads"] * head_dim, rows("attn_q"), "attn_q's rows"))
    checks.append(("head_count_kv x key_length", mapping["n_kv_heads"] * head_dim, rows("attn_k"), "attn_k's rows"))
    if "moe" in mapping:
        checks.append(("expert_count", mapping["moe"]["n_experts"], rows("ffn_gate_exps"), "ffn_gate_exps' experts"))
    else:
        checks.append(("feed_forward_length", mapping["d_ff"], rows("ffn_up"), "ffn_up's rows"))
    for key, claimed, found, what in checks:
        if found is not None and claimed != found:
            raise TfcostError(f"{where}: GGUF metadata {key} is {claimed:,}, but {what} say {found:,}")
