"""Find and load model presets: YAML files shipped in the wheel (found by name) or the user's own (by path).

Files are read with PyYAML's safe loader only, size-checked before parsing, and validated into a ModelShape; every
failure becomes one TfcostError line that names the file and the problem.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from tfcost.errors import TfcostError, describe_validation_error
from tfcost.schema import GpuSpec, ModelShape

# No sane preset comes near this; refusing before parsing keeps a stray multi-GB file from hanging the tool.
MAX_PRESET_BYTES = 1 << 20


def presets_dir() -> Path:
    """The shipped presets: inside the installed package, or the repo's top-level presets/ in a checkout."""
    packaged = Path(__file__).parent / "presets"
    return packaged if packaged.is_dir() else Path(__file__).parent.parent / "presets"


def model_preset_paths() -> dict[str, Path]:
    """Shipped model presets by name (the file stem), sorted."""
    return {path.stem: path for path in sorted((presets_dir() / "models").glob("*.yaml"))}


def looks_like_path(reference: str) -> bool:
    return reference.endswith((".yaml", ".yml", ".json")) or "/" in reference or "\\" in reference


def safe_load(text: str) -> Any:
    """yaml.safe_load (plain data only: no tag may build an object), through libyaml's C parser when PyYAML has it,
    which parses presets about six times faster."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def read_yaml_mapping(path: Path) -> dict[str, Any]:
    """A YAML file that must hold a mapping, read safely, or one line saying why not."""
    import yaml

    try:
        if not path.is_file():  # a directory, or a device or pipe, whose reading would never end or never start
            kind = "no such file" if not path.exists() else "is a directory" if path.is_dir() else "not a regular file"
            raise TfcostError(f"{path}: {kind}")
        too_large = f"is too large for a preset (limit {MAX_PRESET_BYTES:,} bytes)"
        size = path.stat().st_size
        if size > MAX_PRESET_BYTES:
            raise TfcostError(f"{path}: {size:,} bytes {too_large}")
        with path.open("rb") as handle:  # read no more than the limit, whatever stat said (/proc files say 0)
            raw = handle.read(MAX_PRESET_BYTES + 1)
        if len(raw) > MAX_PRESET_BYTES:
            raise TfcostError(f"{path}: {too_large}")
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise TfcostError(f"{path}: not UTF-8 text (byte {error.start})") from None
    except OSError as error:
        raise TfcostError(f"{path}: cannot read: {error.strerror}") from None
    try:
        data = safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or getattr(error, "reason", None) or type(error).__name__
        raise TfcostError(f"{path}: malformed YAML{where}: {problem}") from None
    except (ValueError, TypeError, AttributeError) as error:
        # The safe constructor's own failures, not YAMLErrors: a date such as 2024-13-01 or a 5,000-digit number
        # (ValueError), a "!!timestamp" that is no date at all (AttributeError).
        problem = str(error).split(";")[0] if isinstance(error, ValueError) else "a value that does not fit its tag"
        raise TfcostError(f"{path}: malformed YAML: {problem}") from None
    except RecursionError:
        raise TfcostError(f"{path}: YAML nested too deeply") from None
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise TfcostError(f"{path}: a preset must be a mapping of keys to values, this file is {kind}")
    return data


def model_from_mapping(data: dict[str, Any], origin: str, default_name: str) -> ModelShape:
    """Validate a mapping into a ModelShape; `origin` names it in errors."""
    from pydantic import ValidationError

    try:
        return ModelShape.model_validate({"name": default_name, **data})
    except (ValidationError, ValueError) as error:
        raise TfcostError(f"{origin}: {describe_validation_error(error)}") from None


def load_model_file(path: Path) -> ModelShape:
    """A user's own preset file."""
    return model_from_mapping(read_yaml_mapping(path), str(path), path.stem)


def load_model(reference: str) -> ModelShape:
    """A preset by name (`gpt2-small`) or a path to a YAML file."""
    try:
        is_file = looks_like_path(reference) or Path(reference).is_file()
    except OSError:  # a name too long to be a path is not a file either
        is_file = False
    if is_file:
        return load_model_file(Path(reference))
    known = model_preset_paths()
    if reference not in known:
        close = difflib.get_close_matches(reference, known, n=4, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `tfcost list` shows them all"
        raise TfcostError(f"unknown preset '{reference}'{hint}")
    return load_model_file(known[reference])


def all_models() -> list[ModelShape]:
    """Every shipped model preset, in name order."""
    return [load_model_file(path) for path in model_preset_paths().values()]


def all_gpus() -> list[GpuSpec]:
    """The GPU spec table shipped in presets/gpus.yaml, in file order."""
    from pydantic import ValidationError

    path = presets_dir() / "gpus.yaml"
    rows = safe_load(path.read_text(encoding="utf-8"))
    try:
        return [GpuSpec.model_validate(row) for row in rows]
    except ValidationError as error:  # a broken shipped table is our bug, but still one line
        raise TfcostError(f"{path}: {describe_validation_error(error)}") from None


def load_gpu(name: str) -> GpuSpec:
    """A GPU by its table name (`h100-sxm`), case-insensitive, or one line listing the close names."""
    gpus = {gpu.name: gpu for gpu in all_gpus()}
    key = name.strip().lower()
    if key in gpus:
        return gpus[key]
    close = difflib.get_close_matches(key, gpus, n=4, cutoff=0.4)
    hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(gpus)}"
    raise TfcostError(f"unknown GPU '{name}'; {hint}")


def gpu_for_device_name(device_name: str) -> GpuSpec | None:
    """The table row whose device_names pattern matches what torch calls the local GPU, if any."""
    import re

    for gpu in all_gpus():
        if any(re.search(pattern, device_name, re.IGNORECASE) for pattern in gpu.device_names):
            return gpu
    return None
