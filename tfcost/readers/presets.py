"""Find and load model presets: YAML files shipped in the wheel (found by name) or the user's own (by path).

Files are read with PyYAML's safe loader only, size-checked before parsing, and validated into a ModelShape; every
failure becomes one TfcostError line that names the file and the problem.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfcost.errors import TfcostError, UsageError, describe_validation_error
from tfcost.readers.files import CONSTRUCTOR_ERRORS, read_json_mapping, read_yaml_mapping, safe_load
from tfcost.readers.packaged import packaged
from tfcost.readers.trusted import NotTrusted, trusted
from tfcost.schema import GpuSpec, ModelShape

if TYPE_CHECKING:
    from tfcost.readers.hf_config import ConfigReading
    from tfcost.readers.hub import HubConfig
    from tfcost.readers.safetensors import StoredFiles


def presets_dir() -> Path:
    """The shipped presets: inside the installed package, or the repo's top-level presets/ in a checkout."""
    package = Path(__file__).parent.parent  # tfcost/
    packaged = package / "presets"
    return packaged if packaged.is_dir() else package.parent / "presets"


@cache  # the shipped files do not change while a command runs, and compare looks a name up per model
def model_preset_paths() -> dict[str, Path]:
    """Shipped model presets by name (the file stem), sorted."""
    return {path.stem: path for path in sorted((presets_dir() / "models").glob("*.yaml"))}


def looks_like_path(reference: str) -> bool:
    return reference.endswith((".yaml", ".yml", ".json")) or "/" in reference or "\\" in reference


def config_name(path: Path, config: dict[str, Any]) -> str:
    """A model name for a config.json: its `_name_or_path`, else its folder (`.../llama-3-8b/config.json`)."""
    named = config.get("_name_or_path")
    if isinstance(named, str) and named.strip("/"):
        return named.strip("/").rsplit("/", 1)[-1]
    if path.stem == "config" and path.resolve().parent.name:
        return path.resolve().parent.name
    return path.stem


def config_reading(path: Path, strict: bool = False, lenient: bool = False) -> ConfigReading:
    """A Hugging Face config.json read as a preset mapping with a name and source, and what was ignored."""
    from tfcost.readers.hf_config import read_config

    config = read_json_mapping(path)
    try:
        reading = read_config(config, strict=strict, lenient=lenient)
    except TfcostError as error:
        raise TfcostError(f"{path}: {error}") from None
    source = f"Hugging Face {reading.model_type} config.json ({path.name})"
    reading.mapping = {"name": config_name(path, config), "source": source, **reading.mapping}
    return reading


def config_mapping(path: Path) -> dict[str, Any]:
    """The preset mapping equivalent to a Hugging Face config.json, with a name and source."""
    return config_reading(path).mapping


def normalized(name: str) -> str:
    """A name without case or punctuation: Qwen3-8B, qwen3_8b and qwen3-8b are one."""
    return "".join(char for char in name.lower() if char.isalnum())


def preset_for_hub_id(repo_id: str) -> str | None:
    """The shipped preset of the same model as a Hub id: the one whose source names `Hugging Face owner/name`,
    else the one whose name is the id's name (Qwen/Qwen3-8B -> qwen3-8b). Read as text: this runs only on an
    error path and need not validate sixty presets."""
    import re

    wanted = repo_id.lower()
    paths = model_preset_paths()
    for name, path in paths.items():
        text = path.read_text(encoding="utf-8", errors="replace")
        source = re.search(r"^source:(.*)$", text, re.MULTILINE)
        if source and re.search(rf"(?<![\w./-]){re.escape(wanted)}(?![\w/-])", source.group(1).lower()):
            return name
    by_name = {normalized(name): name for name in paths}
    return by_name.get(normalized(repo_id.rsplit("/", 1)[-1]))


def fetch_hub_config(repo_id: str, revision: str | None) -> HubConfig:
    """tfcost.readers.hub.fetch_config, whose offline line also names the shipped preset of the same model."""
    from tfcost.readers.hub import HubUnreachable, fetch_config

    try:
        return fetch_config(repo_id, revision)
    except HubUnreachable as error:
        preset = preset_for_hub_id(repo_id)
        if preset is None:
            raise
        raise TfcostError(error.with_preset(preset)) from None


def hub_reading(repo_id: str, revision: str | None, strict: bool, lenient: bool) -> ConfigReading:
    """The config.json of a Hub model (tfcost.readers.hub fetches it), read as a preset mapping."""
    from tfcost.readers.hf_config import read_config

    fetched = fetch_hub_config(repo_id, revision)
    try:
        reading = read_config(fetched.config, strict=strict, lenient=lenient)
    except TfcostError as error:
        raise TfcostError(f"{repo_id}: {error}") from None
    source = f"{fetched.described(revision)}, {reading.model_type} config.json"
    reading.mapping = {"name": repo_id.rsplit("/", 1)[-1], "source": source, **reading.mapping}
    reading.checkpoint_bytes = fetched.checkpoint_bytes
    return reading


def folder_reading(folder: Path, strict: bool = False, lenient: bool = False) -> ConfigReading:
    """A local model folder: its config.json, and the tensors its safetensors files store (their headers only)."""
    from tfcost.readers.safetensors import read_folder

    if not (folder / "config.json").exists():  # a config.json that is no regular file is refused by its reader
        raise TfcostError(f"{folder}: is a directory without a config.json (a model folder needs one)")
    reading = config_reading(folder / "config.json", strict, lenient)
    if any(folder.glob("*.safetensors")):
        reading.stored = read_folder(folder)
    return reading


def gguf_reading(path: Path) -> ConfigReading:
    """A GGUF file: its model's shape from its metadata, and its tensors, from its header only."""
    from tfcost.readers.hf_config import ConfigReading
    from tfcost.readers.safetensors import gguf_mapping, read_gguf

    stored = read_gguf(path)
    return ConfigReading(gguf_mapping(stored), "gguf", stored=stored)


@dataclass
class ModelSource:
    """The model a command is asked about, and what its source said that tfcost did not use: the config keys
    ignored, the towers of a multimodal model not priced, and a Hub checkpoint's stored bytes (a cross-check)."""

    shape: ModelShape
    ignored_fields: list[str] = field(default_factory=list)
    not_priced: list[str] = field(default_factory=list)
    checkpoint_bytes: int | None = None
    notes: list[str] = field(default_factory=list)  # quantization_config entries tfcost could not price
    stored: StoredFiles | None = None  # the tensors a local model's files store (tfcost.readers.safetensors)


def is_hub_id(reference: str) -> bool:
    """tfcost.readers.hub's test, imported only for a name with a slash: a preset name is never one."""
    from tfcost.readers.hub import looks_like_hub_id

    return looks_like_hub_id(reference)


def path_exists(reference: str) -> bool:
    """Whether a file or folder of this name is here; a name too long to be a path is not one."""
    try:
        return Path(reference).exists()
    except (OSError, ValueError):
        return False


def names_hub_model(reference: str) -> bool:
    """Whether a MODEL is a Hub id: `owner/name`, and no file or folder of that name here."""
    return "/" in reference and not path_exists(reference) and is_hub_id(reference)


@dataclass(frozen=True)
class Shipped:
    """A preset shipped with tfcost, found by its name: read and built by shipped_model, or read as a mapping when
    --set changes it."""

    path: Path


def model_mapping(
    reference: str, revision: str | None = None, strict: bool = False, lenient: bool = False
) -> tuple[dict[str, Any] | ConfigReading | Shipped, str, str]:
    """(mapping, config reading or shipped preset, origin for errors, default name) of a preset name, a YAML preset
    path, a config.json path or a Hub id (`owner/name`, when no such file exists)."""
    if names_hub_model(reference):
        return hub_reading(reference, revision, strict, lenient), reference, reference.rsplit("/", 1)[-1]
    exists = path_exists(reference)
    if revision is not None:
        raise UsageError(f"--revision applies to a Hugging Face Hub id (owner/name), not to '{reference}'")
    if exists and Path(reference).is_dir():
        return folder_reading(Path(reference), strict, lenient), reference, Path(reference).name
    if reference.endswith(".gguf"):
        return gguf_reading(Path(reference)), reference, Path(reference).stem
    if reference.endswith(".json"):
        path = Path(reference)
        return config_reading(path, strict, lenient), str(path), path.stem
    if looks_like_path(reference) or (exists and Path(reference).is_file()):
        path = Path(reference)
        return read_yaml_mapping(path), str(path), path.stem
    known = model_preset_paths()
    if reference not in known:  # names are case-insensitive: Llama-3-8B is llama-3-8b
        folded = {name.lower(): name for name in known}
        reference = folded.get(reference.lower(), reference)
    if reference not in known:
        close = difflib.get_close_matches(reference.lower(), known, n=4, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `tfcost list` shows them all"
        raise TfcostError(f"unknown preset '{reference}'{hint}")
    return Shipped(known[reference]), str(known[reference]), reference


def shipped_model(path: Path) -> ModelShape:
    """A shipped preset's shape, read once per process (compare may name it twice, train reads it again for its
    suggestion) and built as trusted package data (tfcost.readers.trusted), or validated where it is not."""
    try:
        stat = path.stat()
    except OSError as error:
        raise TfcostError(f"{path}: cannot read: {error.strerror}") from None
    return shipped_shape(path, stat.st_mtime_ns, stat.st_size)


@cache  # keyed on the file's mtime and size: a file changed since is read afresh
def shipped_shape(path: Path, mtime_ns: int, size: int) -> ModelShape:
    mapping = packaged(path, f"models/{path.name}", size)  # the file's literal: no YAML (tfcost.readers.packaged)
    if not isinstance(mapping, dict):
        mapping = read_yaml_mapping(path)
    try:
        return trusted(ModelShape, {"name": path.stem, **mapping})
    except (NotTrusted, ValueError, TypeError):  # validation says what is wrong, in its one line
        return model_from_mapping(mapping, str(path), path.stem)


def model_from_mapping(data: dict[str, Any], origin: str, default_name: str) -> ModelShape:
    """Validate a mapping into a ModelShape; `origin` names it in errors."""
    from pydantic import ValidationError

    try:
        return ModelShape.model_validate({"name": default_name, **data})
    except (ValidationError, ValueError) as error:
        raise TfcostError(f"{origin}: {describe_validation_error(error)}") from None


def parse_override(text: str) -> tuple[list[str], Any]:
    """`key=value` -> (dotted key parts, value read as YAML: 16 is an int, true a bool, [0, 2] a list)."""
    import yaml

    key, sep, raw = text.partition("=")
    parts = key.strip().split(".")
    if not sep or not all(parts):
        raise UsageError(f"--set expects KEY=VALUE (e.g. n_kv_heads=16 or bias.qkv=true), got '{text}'")
    try:
        return parts, safe_load(raw)
    except (yaml.YAMLError, *CONSTRUCTOR_ERRORS, RecursionError):
        raise UsageError(f"--set {key.strip()}: cannot read the value '{raw}'") from None


def split_column(reference: str) -> tuple[str, list[str]]:
    """`compare`'s per-column overrides: 'llama-3-8b:n_kv_heads=32,bias.qkv=true' -> ('llama-3-8b',
    ['n_kv_heads=32', 'bias.qkv=true']). A name with no ':KEY=' part (or a file of that very name) is taken whole;
    a comma starts a new override only before another KEY=, so a list value ([0, 2]) keeps its commas."""
    import re

    found = re.search(r":(?=[A-Za-z_][\w.]*=)", reference)
    if found is None or path_exists(reference):
        return reference, []
    model, rest = reference[: found.start()], reference[found.end() :]
    return model, [part.strip() for part in re.split(r",(?=\s*[A-Za-z_][\w.]*=)", rest)]


def apply_overrides(mapping: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """A copy of a preset mapping with each `key=value` set (dotted keys reach nested mappings: moe.n_experts).

    The shape is then validated like any preset. A changed shape is no longer the published model: it is named
    after its overrides and loses the published count, unless those are set too.
    """
    import copy

    result = copy.deepcopy(mapping)
    keys = set()
    for text in overrides:
        parts, value = parse_override(text)
        keys.add(parts[0])
        node = result
        for depth, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise UsageError(f"--set {'.'.join(parts)}: '{'.'.join(parts[: depth + 1])}' is not a mapping")
            node = child
        node[parts[-1]] = value
    if overrides:
        if "name" not in keys:
            result["name"] = f"{result.get('name', 'model')} ({', '.join(overrides)})"
        if "published_params" not in keys:
            result.pop("published_params", None)
    return result


# The shapes read last, each kept as the one object of its value: a model read twice in one command (a suggestion
# reads it again) is then the same object, which the core's caches recognise at once, where an equal copy would be
# compared field by field on every look-up (every layer of a `layers:` stack, each time).
INTERNED: dict[ModelShape, ModelShape] = {}


def interned(shape: ModelShape) -> ModelShape:
    """The shape read before that equals this one, else this one (remembered; the last 16 are kept)."""
    found = INTERNED.get(shape)
    if found is not None:
        return found
    if len(INTERNED) >= 16:
        INTERNED.pop(next(iter(INTERNED)))
    INTERNED[shape] = shape
    return shape


def resolve_source(
    model: str | None,
    config: str | None = None,
    overrides: Sequence[str] = (),
    *,
    strict: bool = False,
    lenient: bool = False,
    revision: str | None = None,
) -> ModelSource:
    """The model a command is asked about: a preset name or file, a config.json or a Hub id (`model`), or a
    config.json (`config`), with `--set` overrides applied, and what its config said that was not used. `strict`
    makes an ignored config key an error; `lenient` lets a structural-looking unknown key through (reported).
    Every command that takes a model goes through here."""
    if model is not None and config is not None:
        raise UsageError(f"give a MODEL or --config PATH, not both ('{model}' and --config {config})")
    if strict and lenient:
        raise UsageError("--strict and --lenient contradict each other: give one")
    found: dict[str, Any] | ConfigReading | Shipped
    if config is not None:
        if revision is not None:
            raise UsageError("--revision applies to a Hugging Face Hub id (owner/name), not to --config")
        found, origin, default_name = config_reading(Path(config), strict, lenient), config, Path(config).stem
    elif model is not None:
        found, origin, default_name = model_mapping(model, revision, strict, lenient)
    else:
        raise UsageError(
            "no model given: name a preset, a YAML preset or config.json path, a Hub id, or use --config PATH"
        )
    if isinstance(found, Shipped):
        if not overrides:
            return ModelSource(shipped_model(found.path))
        found = read_yaml_mapping(found.path)
    reading = None if isinstance(found, dict) else found
    mapping = found if isinstance(found, dict) else found.mapping
    if overrides:
        origin = f"{origin} with --set {' '.join(overrides)}"
    shape = interned(model_from_mapping(apply_overrides(mapping, overrides), origin, default_name))
    if reading is None:
        return ModelSource(shape)
    stored = None if overrides else reading.stored  # a shape changed by --set is no longer the files' model
    return ModelSource(shape, reading.ignored, reading.not_priced, reading.checkpoint_bytes, reading.notes, stored)


def resolve_model(
    model: str | None, config: str | None = None, overrides: Sequence[str] = (), **options: Any
) -> ModelShape:
    """The shape alone of resolve_source (same arguments)."""
    return resolve_source(model, config, overrides, **options).shape


def load_model_file(path: Path) -> ModelShape:
    """A user's own preset file."""
    return model_from_mapping(read_yaml_mapping(path), str(path), path.stem)


def load_model(reference: str) -> ModelShape:
    """A preset by name (`gpt2-small`), a path to a YAML file, or a path to a Hugging Face config.json."""
    return resolve_model(reference)


def all_models() -> list[ModelShape]:
    """Every shipped model preset, in name order."""
    return [shipped_model(path) for path in model_preset_paths().values()]


def all_gpus() -> list[GpuSpec]:
    """The GPU spec table shipped in presets/gpus.yaml, in file order."""
    path = presets_dir() / "gpus.yaml"
    try:
        stat = path.stat()
    except OSError as error:
        raise TfcostError(f"{path}: cannot read: {error.strerror}") from None
    return list(shipped_gpus(path, stat.st_mtime_ns, stat.st_size))


@cache  # read once per process (train reads it again for its suggestion); a file changed since is read afresh
def shipped_gpus(path: Path, mtime_ns: int, size: int) -> tuple[GpuSpec, ...]:
    """The table at `path` as it was at (mtime_ns, size), its rows built as trusted package data
    (tfcost.readers.trusted); a table not of the shipped shape goes through validation, which says what is wrong."""
    rows = packaged(path, "gpus.yaml", size)  # the table's literal: no YAML (tfcost.readers.packaged)
    if rows is None:
        rows = safe_load(path.read_text(encoding="utf-8"))
    try:
        if isinstance(rows, list):
            return tuple(trusted(GpuSpec, row) for row in rows)
    except NotTrusted:
        pass
    return tuple(validated_gpus(path, rows))


def validated_gpus(path: Path, rows: Any) -> list[GpuSpec]:
    """The GPU table through pydantic's validation: a broken shipped table is our bug, but still one line."""
    from pydantic import ValidationError

    try:
        return [GpuSpec.model_validate(row) for row in rows]
    except ValidationError as error:
        raise TfcostError(f"{path}: {describe_validation_error(error)}") from None


# What people call a GPU when they name no variant, mapped to the table's row: an H100 in a training cluster is
# the SXM part (the PCIe card says so), the A100 most rented is the 80 GB one; consumer cards without 'rtx'.
GPU_ALIASES = {
    "h100": "h100-sxm",
    "a100": "a100-80gb",
    "4090": "rtx-4090",
    "3090": "rtx-3090",
    "5090": "rtx-5090",
    "a6000": "rtx-a6000",
}


def load_gpu(name: str) -> GpuSpec:
    """A GPU by its table name (`h100-sxm`), case- and punctuation-insensitive (`H100 SXM`), or an alias
    (`h100`, said in a note: tfcost.notes), or one line listing the close names."""
    from tfcost.notes import note

    if not isinstance(name, str):
        raise UsageError(f"gpu: expected a GPU's name (`tfcost gpus` lists them), not {type(name).__name__}")
    gpus = {gpu.name: gpu for gpu in all_gpus()}
    key = name.strip().lower()
    if key in gpus:
        return gpus[key]
    by_normalized = {normalized(table_name): table_name for table_name in gpus}
    if normalized(key) in by_normalized:
        return gpus[by_normalized[normalized(key)]]
    alias = GPU_ALIASES.get(normalized(key).removeprefix("nvidia"))
    if alias is not None:
        note(f"--gpu {name.strip()} is taken as {alias} (`tfcost gpus` lists the others)")
        return gpus[alias]
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


def inspected(reference: str, revision: str | None = None) -> tuple[StoredFiles, ModelSource | None, str | None]:
    """What `tfcost inspect` reads: a checkpoint's stored tensors (their headers only) and, where its files say
    what model they hold (a folder's config.json, a GGUF file's metadata, a Hub id's config.json), that model; when
    that model cannot be read, why not (the bytes are reported all the same)."""
    from tfcost.readers.safetensors import read_folder, read_stored

    def model() -> tuple[ModelSource | None, str | None]:
        try:
            return resolve_source(reference, revision=revision), None
        except TfcostError as error:
            return None, str(error)

    if names_hub_model(reference):
        from tfcost.readers.hub import fetch_stored

        stored = fetch_stored(reference, revision)
        return (stored, *model())
    if revision is not None:
        raise UsageError(f"--revision applies to a Hugging Face Hub id (owner/name), not to '{reference}'")
    path = Path(reference)
    if not path_exists(reference):
        raise TfcostError(f"{reference}: no such file or folder (nor a Hub id: owner/name)")
    if (path.is_dir() and (path / "config.json").exists()) or path.suffix == ".gguf":
        stored = read_folder(path) if path.is_dir() else read_stored(path)
        return (stored, *model())
    return read_stored(path), None, None
