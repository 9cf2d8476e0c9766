"""How long the checkpoint readers take on the largest headers a file may have (issue 37): the speed targets the
test suite does not assert (tests/test_readers_hostile.py checks the bounds, this times them).

Builds, in a temporary folder, headers of up to 100 MB of the shapes that cost the most per byte, reads each with
tfcost's reader in a forked child, and prints the seconds and the child's peak resident memory for each:
- GGUF: one string array of 12.5 million empty strings (8 bytes each: every one a length to follow);
- GGUF: MAX_TENSORS tensor infos (the most read), each of 8 F32 elements;
- GGUF: 3.1 million tensor infos of 32 bytes (refused: over MAX_TENSORS, once the count is checked);
- safetensors: a 100 MB JSON header of MAX_TENSORS tensors (the most read), padded with spaces;
- safetensors: a 100 MB JSON header of one tensor whose shape lists 50 million zeros (refused by its rank);
- safetensors: a 100 MB JSON header of 33 million empty objects (refused before parsing).

    PYTHONPATH=. python benchmarks/hostile_headers.py
"""

from __future__ import annotations

import json
import os
import resource
import struct
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tfcost.errors import TfcostError
from tfcost.readers.safetensors import MAX_HEADER_BYTES, MAX_TENSORS, read_gguf, read_safetensors

STRING, ARRAY = 8, 9


def gguf(path: Path, tensors: int, keys: bytes, infos: bytes, data: int = 0) -> Path:
    body = b"GGUF" + struct.pack("<IQQ", 3, tensors, 1 if keys else 0) + keys + infos
    path.write_bytes(body + bytes(-len(body) % 32) + bytes(data))
    return path


def string_array(folder: Path) -> Path:
    count = 12_500_000
    key = struct.pack("<Q", 1) + b"s" + struct.pack("<IIQ", ARRAY, STRING, count)
    return gguf(folder / "strings.gguf", 0, key + bytes(8 * count), b"")


def tensor_infos(folder: Path, count: int, name: str) -> Path:
    info = b"".join(struct.pack("<Q", 6) + f"{i:06x}".encode() + struct.pack("<IQIQ", 1, 8, 0, 32 * i)
                    for i in range(count))  # fmt: skip
    return gguf(folder / name, count, b"", info, 32 * count)


def safetensors_many(folder: Path) -> Path:
    header = {f"t{i}": {"dtype": "U8", "shape": [1], "data_offsets": [i, i + 1]} for i in range(MAX_TENSORS)}
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (MAX_HEADER_BYTES - len(raw))
    path = folder / "many.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(MAX_TENSORS))
    return path


def safetensors_rank(folder: Path) -> Path:
    shape = ",".join(["0"] * 49_999_000)
    raw = f'{{"t":{{"dtype":"U8","shape":[{shape}],"data_offsets":[0,1]}}}}'.encode()
    path = folder / "rank.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0")
    return path


def safetensors_objects(folder: Path) -> Path:
    raw = b'{"a":[' + b"{}," * 33_000_000 + b"{}]}"
    path = folder / "objects.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)
    return path


def timed(what: str, build: Callable[[Path], Path], read: Callable[[Path], object], folder: Path) -> None:
    path = build(folder)
    size = path.stat().st_size
    child = os.fork()
    if child == 0:  # the reading alone, in a process of its own, so that its peak memory is its own
        start = time.perf_counter()
        try:
            read(path)
            outcome = "read"
        except TfcostError as error:
            outcome = f"refused: {str(error)[:60]}"
        seconds = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{what:<42} {size / 1e6:6.1f} MB {seconds:6.2f} s  peak RSS {peak:5.0f} MB  {outcome}", flush=True)
        os._exit(0)
    os.waitpid(child, 0)
    path.unlink()


def main() -> None:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        timed("GGUF: 12.5 M strings in one array", string_array, read_gguf, folder)
        timed(
            f"GGUF: {MAX_TENSORS:,} tensor infos", lambda f: tensor_infos(f, MAX_TENSORS, "a.gguf"), read_gguf, folder
        )
        timed("GGUF: 3.1 M tensor infos", lambda f: tensor_infos(f, 3_100_000, "b.gguf"), read_gguf, folder)
        timed(f"safetensors: {MAX_TENSORS:,} tensors in 100 MB", safetensors_many, read_safetensors, folder)
        timed("safetensors: a shape of 50 M dimensions", safetensors_rank, read_safetensors, folder)
        timed("safetensors: 33 M empty objects", safetensors_objects, read_safetensors, folder)


if __name__ == "__main__":
    main()
