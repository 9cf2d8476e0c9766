"""Schema models built from tfcost's own package data (the shipped presets and GPU table) without pydantic's
validation, whose first use in a process builds the model's validator: ~5 ms for ModelShape and its parts, ~3 ms
for GpuSpec, of a command's ~170 ms. A user's files, --set overrides, config.json and Hub configs are always
validated; only files shipped inside the package come through here.

trusted() does what validation does to well-formed data, and no more: it runs the model's "before" validators
(ModelShape's derived head sizes), builds nested models, turns lists into tuples and ints into floats where the
field says so, and checks each plain value's type and each Literal's choice. Constraints (gt=0) and "after"
validators are not run: the shipped files are validated by tests/test_trusted.py, which also checks that every one
of them builds here exactly as validation builds it (values, types, the fields set). Anything it cannot build as
validation would (an unknown or missing key, a type it does not know) raises NotTrusted, and the caller validates.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal, TypeVar, get_args, get_origin

from pydantic import BaseModel

ModelT = TypeVar("ModelT", bound=BaseModel)
PLAIN = (int, str, bool)


class NotTrusted(Exception):
    """Data trusted() cannot build as validation would: the caller validates it instead."""


def trusted(model: type[ModelT], data: Any) -> ModelT:
    """`model` built from a mapping of well-formed package data, without validation (see the module's notes)."""
    if not isinstance(data, dict):
        raise NotTrusted(model.__name__)
    decorators = model.__pydantic_decorators__
    if decorators.field_validators or decorators.field_serializers or decorators.model_serializers:
        raise NotTrusted(model.__name__)
    for name, decorator in decorators.model_validators.items():
        if decorator.info.mode == "before":
            data = getattr(model, name)(data)
        elif decorator.info.mode != "after":  # a wrap validator may change anything
            raise NotTrusted(model.__name__)
    fields = model.model_fields
    if not data.keys() <= fields.keys() or any(info.is_required() and key not in data for key, info in fields.items()):
        raise NotTrusted(model.__name__)
    values = {key: trusted_value(fields[key].annotation, value) for key, value in data.items()}
    return model.model_construct(**values)


def trusted_value(annotation: Any, value: Any) -> Any:
    """One field's value as validation of well-formed data gives it, by the field's annotation."""
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return trusted_value(get_args(annotation)[0], value)
    if origin is typing.Union or origin is types.UnionType:
        arms = [arm for arm in get_args(annotation) if arm is not type(None)]
        if value is None and len(arms) < len(get_args(annotation)):
            return None
        if len(arms) != 1:  # a union of two types: which one validation picks is its business
            raise NotTrusted(str(annotation))
        return trusted_value(arms[0], value)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return trusted(annotation, value)
    if origin is tuple and isinstance(value, list | tuple):
        args = get_args(annotation)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(trusted_value(args[0], item) for item in value)
        if len(args) != len(value):
            raise NotTrusted(str(annotation))
        return tuple(trusted_value(arg, item) for arg, item in zip(args, value, strict=True))
    if origin is list and isinstance(value, list):
        (item_type,) = get_args(annotation)
        return [trusted_value(item_type, item) for item in value]
    if origin is Literal and value in get_args(annotation) and type(value) in PLAIN:
        return value
    if annotation is float and type(value) in (int, float):
        return float(value)  # YAML's 80 for a float field: validation gives 80.0, exactly
    if annotation in PLAIN and type(value) is annotation:  # strict: no bool for an int, no int for a str
        return value
    raise NotTrusted(f"{annotation}: {value!r}")
