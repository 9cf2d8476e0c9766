"""Reading the small text files tfcost takes (presets, config.json, the GPU table): size-checked first, parsed
safely (no YAML tag builds an object, no key is written twice), and every failure one line naming the file. Also
the one writer of every file tfcost writes (atomic_write)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import IO, Any

from tfcost.errors import TfcostError

# No sane preset comes near this; refusing before parsing keeps a stray multi-GB file from hanging the tool.
MAX_PRESET_BYTES = 1 << 20


# Plain scalars that YAML 1.1 (PyYAML) reads as something a YAML 1.2 reader or a person would not: `012` is 10
# (octal), `1:30` is 90 (base 60), `0b11` is 3, and yes/no/on/off are booleans. They are refused, never guessed at.
YAML11_ONLY = (
    r"^(?:[-+]?0[0-9_]+|[-+]?0b[01_]+|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?"
    r"|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF)$"
)
YAML11_TAG = "tag:tfcost,2026:yaml11-only"


@cache
def strict_loader() -> type:
    """PyYAML's safe loader (plain data only: no tag may build an object), through libyaml's C parser when PyYAML
    has it (six times faster on presets), that also refuses a key written twice and the YAML 1.1-only scalars."""
    import re

    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class StrictLoader(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                if isinstance(key, list | dict):  # unhashable: the base constructor says so in its own words
                    continue
                if key in seen:
                    mark = key_node.start_mark
                    raise yaml.constructor.ConstructorError(None, None, f"key '{key}' is written twice", mark)
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    def refuse(loader: Any, node: Any) -> None:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"'{node.value}' means different things in YAML 1.1 and 1.2; quote it if it is text, "
            "or write the number or true/false plainly",
            node.start_mark,
        )

    resolvers = {first: list(items) for first, items in base.yaml_implicit_resolvers.items()}
    pattern = re.compile(YAML11_ONLY)
    for first in "+-0123456789yYnNoO":  # checked before the standard resolvers, which would accept them
        resolvers.setdefault(first, []).insert(0, (YAML11_TAG, pattern))
    StrictLoader.yaml_implicit_resolvers = resolvers
    StrictLoader.add_constructor(YAML11_TAG, refuse)
    return StrictLoader


def safe_load(text: str) -> Any:
    """Plain data from YAML text, read by strict_loader()."""
    import yaml

    return yaml.load(text, Loader=strict_loader())


def open_regular(path: Path) -> IO[bytes]:
    """`path` opened for reading when it is a regular file (after symlinks), else one line saying what it is. The
    file is looked at before it is opened and opened without blocking: a FIFO named x.gguf would otherwise hold
    open() until a writer came, and a device or socket is never a checkpoint or a preset. The opened file is looked
    at again, in case it was swapped between the two."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise TfcostError(f"{path}: no such file") from None
    except OSError as error:
        raise TfcostError(f"{path}: cannot read: {error.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "is a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file (a pipe, device or socket)"
        raise TfcostError(f"{path}: {kind}")
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        raise TfcostError(f"{path}: cannot read: {error.strerror}") from None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise TfcostError(f"{path}: not a regular file (a pipe, device or socket)")
    return os.fdopen(descriptor, "rb")


def read_text(path: Path, what: str) -> str:
    """A small UTF-8 text file, size-checked before reading, or one line saying why not."""
    try:
        too_large = f"is too large for {what} (limit {MAX_PRESET_BYTES:,} bytes)"
        with open_regular(path) as handle:  # read no more than the limit, whatever stat said (/proc files say 0)
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_PRESET_BYTES:
                raise TfcostError(f"{path}: {size:,} bytes {too_large}")
            raw = handle.read(MAX_PRESET_BYTES + 1)
        if len(raw) > MAX_PRESET_BYTES:
            raise TfcostError(f"{path}: {too_large}")
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise TfcostError(f"{path}: not UTF-8 text (byte {error.start})") from None
    except OSError as error:
        raise TfcostError(f"{path}: cannot read: {error.strerror}") from None


# The safe constructor's own failures, which are not YAMLErrors: a date such as 2024-13-01 or a 5,000-digit number
# (ValueError), a "!!timestamp" that is no date at all (AttributeError).
CONSTRUCTOR_ERRORS = (ValueError, TypeError, AttributeError)


def constructor_problem(error: Exception) -> str:
    """What a CONSTRUCTOR_ERRORS exception says, without Python's advice to raise its digit limit."""
    return str(error).split(";")[0] if isinstance(error, ValueError) else "a value that does not fit its tag"


def read_yaml_mapping(path: Path) -> dict[str, Any]:
    """A YAML file that must hold a mapping, read safely, or one line saying why not."""
    import yaml

    text = read_text(path, "a preset")
    try:
        data = safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or getattr(error, "reason", None) or type(error).__name__
        raise TfcostError(f"{path}: malformed YAML{where}: {problem}") from None
    except CONSTRUCTOR_ERRORS as error:
        raise TfcostError(f"{path}: malformed YAML: {constructor_problem(error)}") from None
    except RecursionError:
        raise TfcostError(f"{path}: YAML nested too deeply") from None
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise TfcostError(f"{path}: a preset must be a mapping of keys to values, this file is {kind}")
    return data


def read_json_mapping(path: Path) -> dict[str, Any]:
    """A JSON file that must hold an object (a Hugging Face config.json), or one line saying why not."""
    return parse_json_mapping(read_text(path, "a config.json"), str(path))


def parse_json_mapping(text: str, where: str) -> dict[str, Any]:
    """JSON text that must hold an object (a file's, or a body fetched from the Hub), or one line naming `where`."""
    import json

    def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        mapping: dict[str, Any] = {}
        for key, value in pairs:
            if key in mapping:
                raise TfcostError(f"{where}: key '{key}' is written twice; which one is meant?")
            mapping[key] = value
        return mapping

    try:
        data = json.loads(text, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as error:
        raise TfcostError(
            f"{where}: malformed JSON at line {error.lineno}, column {error.colno}: {error.msg}"
        ) from None
    except ValueError as error:  # a number of more than 4,300 digits
        raise TfcostError(f"{where}: malformed JSON: {str(error).split(';')[0]}") from None
    except RecursionError:
        raise TfcostError(f"{where}: JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise TfcostError(f"{where}: a config.json must hold a JSON object, this file holds a {type(data).__name__}")
    return data


def atomic_write(target: Path, content: bytes | str | Callable[[Path], None]) -> None:
    """The one way tfcost writes a file (a --plot chart, a saved profile, a Hub cache entry): the content goes to a
    temporary file in the target's folder, which is then renamed over the target. A reader never sees a torn file,
    and a target that is a symbolic link is replaced by the new file, never written through (the file it points to
    is left as it was). `content` is the bytes or text (UTF-8), or a function that writes the temporary file at
    the path it is given (matplotlib's savefig). The new file has the mode a file created in place would have: the
    old file's when the target is a regular file, else 0o666 less the umask (mkstemp's own is 0o600). OSError
    passes to the caller, who names the file in its own words; the temporary file is gone either way."""
    import tempfile

    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".tfcost-", suffix=target.suffix + ".tmp")
    try:
        if callable(content):
            os.close(handle)
            content(Path(temporary))
        else:
            with os.fdopen(handle, "wb") as out:
                out.write(content.encode("utf-8") if isinstance(content, str) else content)
        os.chmod(temporary, created_mode(target))
        os.replace(temporary, target)
    finally:
        Path(temporary).unlink(missing_ok=True)


def created_mode(target: Path) -> int:
    """The mode of a file written at `target`: the old regular file's (the link itself is not followed), else
    0o666 less the umask."""
    try:
        old = target.lstat()
    except OSError:
        old = None
    if old is not None and stat.S_ISREG(old.st_mode):
        return old.st_mode & 0o7777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
