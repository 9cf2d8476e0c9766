"""Frameworks as data: presets/frameworks/NAME.yaml, one trainer or serving engine each, every field sourced.

A framework file lists the framework's releases oldest first; each release gives the conventions that changed
from the one before (the first gives them all). `NAME@VERSION` picks a release: the one listed under that name,
else, for a dotted version number, the newest listed release at or before it (vllm@0.10.1 is priced as the last
release whose conventions the file records, 0.8). `NAME` alone is the newest.

The conventions a release sets are setup fields (tfcost.schema.TRAINING_CONVENTIONS, SERVING_CONVENTIONS). A run's
setup is the schema's defaults, then the framework's conventions, then the user's --framework-set, then the user's
own options.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated, Any

from tfcost.errors import TfcostError, UsageError, describe_validation_error
from tfcost.schema import (
    SERVING_CONVENTIONS,
    TRAINING_CONVENTIONS,
    Framework,
    FrameworkField,
    FrameworkKind,
    FrameworkUsed,
    ServingSetup,
    TrainingSetup,
)

USER_SOURCE = "set by the user (--framework-set)"
DEFAULT_SOURCE = "tfcost's default (tfcost.schema, the setup field's description): no --framework was given"


def frameworks_dir() -> Path:
    from tfcost.readers.presets import presets_dir

    return presets_dir() / "frameworks"


def framework_paths() -> dict[str, Path]:
    """Every shipped framework file by name, in name order."""
    return {path.stem: path for path in sorted(frameworks_dir().glob("*.yaml"))}


def read_framework(path: Path) -> Framework:
    """One framework file, validated: its fields are conventions of its kind, each value of its field's type."""
    from pydantic import ValidationError

    from tfcost.readers.files import read_yaml_mapping

    data = read_yaml_mapping(path)
    try:
        framework = Framework.model_validate(data)
    except ValidationError as error:
        raise TfcostError(f"{path}: {describe_validation_error(error)}") from None
    if framework.name != path.stem:
        raise TfcostError(f"{path}: name '{framework.name}' is not the file's name '{path.stem}'")
    for release in framework.versions:
        checked_values(framework.kind, {key: field.value for key, field in release.fields.items()}, str(path))
    return framework


def all_frameworks(kind: FrameworkKind | None = None) -> list[Framework]:
    """Every shipped framework (of one kind), in name order."""
    found = [read_framework(path) for path in framework_paths().values()]
    return [framework for framework in found if kind is None or framework.kind == kind]


def setup_schema(kind: FrameworkKind) -> type[TrainingSetup] | type[ServingSetup]:
    return TrainingSetup if kind == "training" else ServingSetup


def conventions(kind: FrameworkKind) -> frozenset[str]:
    return TRAINING_CONVENTIONS if kind == "training" else SERVING_CONVENTIONS


def checked_values(kind: FrameworkKind, values: dict[str, Any], where: str) -> dict[str, Any]:
    """Convention values, each validated as its setup field validates it (a typo'd choice is one line)."""
    from pydantic import TypeAdapter, ValidationError

    schema = setup_schema(kind)
    checked = {}
    for key, value in values.items():
        if key not in conventions(kind):
            known = ", ".join(sorted(conventions(kind)))
            raise UsageError(f"{where}: '{key}' is not a {kind} convention a framework sets (known: {known})")
        field = schema.model_fields[key]
        try:  # the field's annotation with its constraints (gt=0, le=0.99), as the setup validates it
            annotation: Any = Annotated[field.annotation, *field.metadata] if field.metadata else field.annotation
            adapter: TypeAdapter[Any] = TypeAdapter(annotation)
            checked[key] = adapter.validate_python(value, strict=True)
        except ValidationError as error:
            raise UsageError(f"{where}: {key}: {describe_validation_error(error)}") from None
    return checked


def version_key(version: str) -> tuple[int, ...] | None:
    """A dotted release number as a tuple of ints (0.10.1 -> (0, 10, 1)), or None for a tag or a commit."""
    parts = version.removeprefix("v").split(".")
    if not all(part.isdigit() and len(part) < 10 for part in parts):
        return None
    numbers = [int(part) for part in parts]
    while len(numbers) > 1 and numbers[-1] == 0:  # 0.7 is 0.7.0
        numbers.pop()
    return tuple(numbers)


def release_index(framework: Framework, version: str | None) -> int:
    """Which listed release `version` is priced as (the newest when None)."""
    listed = [release.version for release in framework.versions]
    if version is None:
        return len(listed) - 1
    if version in listed:
        return listed.index(version)
    asked = version_key(version)
    numbered = [(key, index) for index, name in enumerate(listed) if (key := version_key(name)) is not None]
    if asked is not None and numbered:
        earlier = [(key, index) for key, index in numbered if key <= asked]
        if earlier:
            return max(earlier)[1]
    raise UsageError(
        f"--framework {framework.name}@{version}: no such release in its file; listed: {', '.join(listed)}"
        + (" (a newer number is priced as the newest listed before it)" if numbered else "")
    )


def load_framework(reference: str, kind: FrameworkKind) -> tuple[Framework, int]:
    """`NAME[@VERSION]` as a shipped framework of `kind` and the index of the release it names, or one line."""
    name, _, version = reference.strip().partition("@")
    name = name.strip().lower()
    paths = framework_paths()
    if name not in paths:
        close = difflib.get_close_matches(name, paths, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}?" if close else "`tfcost frameworks` lists them"
        raise UsageError(f"--framework: unknown framework '{name[:60]}'; {hint}")
    framework = read_framework(paths[name])
    if framework.kind != kind:
        wanted = "trainer" if kind == "training" else "serving engine"
        raise UsageError(f"--framework {name}: a {framework.kind} framework, and this command needs a {wanted}")
    return framework, release_index(framework, version.strip() or None)


def parse_framework_set(texts: tuple[str, ...] | list[str], kind: FrameworkKind) -> dict[str, Any]:
    """--framework-set key=value texts as convention values (the value read as YAML, as --set reads it)."""
    from tfcost.readers.presets import parse_override

    values: dict[str, Any] = {}
    for text in texts:
        if "=" not in text:
            raise UsageError(f"--framework-set expects KEY=VALUE (e.g. loss=full), got '{text[:60]}'")
        path, value = parse_override(text)
        values[".".join(path)] = value
    return checked_values(kind, values, "--framework-set")


def framework_used(reference: str | None, kind: FrameworkKind, overrides: dict[str, Any]) -> FrameworkUsed:
    """The conventions a run is priced under: a framework release's fields (every field of its releases up to it,
    later ones winning) and the user's overrides; with no framework, tfcost's defaults, named as assumed."""
    if reference is None:
        schema = setup_schema(kind)
        fields = {
            key: FrameworkField(value=schema.model_fields[key].default, source=DEFAULT_SOURCE)
            for key in sorted(conventions(kind))
        }
        used = FrameworkUsed(name=None, title="none given: tfcost's defaults", fields=fields)
    else:
        framework, index = load_framework(reference, kind)
        merged: dict[str, FrameworkField] = {}
        for release in framework.versions[: index + 1]:
            merged.update(release.fields)
        release = framework.versions[index]
        used = FrameworkUsed(
            name=framework.name,
            title=framework.title,
            version=release.version,
            source=release.source,
            fields=dict(sorted(merged.items())),
        )
    if not overrides:
        return used
    fields = dict(used.fields)
    for key, value in overrides.items():
        switch = fields[key].switch if key in fields else None
        fields[key] = FrameworkField(value=value, source=USER_SOURCE, switch=switch)
    if (
        "max_num_seqs" in overrides
        and "large_card_max_num_seqs" in fields
        and "large_card_max_num_seqs" not in overrides
    ):
        # the user's max_num_seqs is vLLM's --max-num-seqs: it holds on every card, the large-card default gives way
        fields["large_card_max_num_seqs"] = FrameworkField(
            value=overrides["max_num_seqs"], source=USER_SOURCE + ": max_num_seqs, on every card", switch="max_num_seqs"
        )
    return used.model_copy(update={"fields": dict(sorted(fields.items())), "overridden": tuple(sorted(overrides))})


def convention_values(used: FrameworkUsed) -> dict[str, Any]:
    """The setup fields the framework (and --framework-set) set. A convention about a layout the run does not use
    (FSDP2's copies without ZeRO-3) is kept: the costs read each only where it applies
    (tfcost.costs.training.uses_fsdp2 and its neighbours). With no framework, only the user's overrides: the rest are
    the schema's defaults already."""
    if used.name is None:
        return {key: used.fields[key].value for key in used.overridden}
    return {key: field.value for key, field in used.fields.items()}
