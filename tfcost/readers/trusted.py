"""Schema models built from tfcost's own package data (the shipped presets and GPU table) without pydantic's
validation, whose first use in a process builds the model's validator: 4.9 ms of CPU for ModelShape and its
parts, 0.9 ms for GpuSpec and its 29 rows, of a command's ~170 ms (building both here: 0.6 ms). A user's files,
--set overrides, config.json and Hub configs are always validated; only files shipped inside the package come
through here.

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
from collections.abc import Callable
from functools import cache
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
    before, converters, required = plan(model)
    for validator in before:
        data = validator(data)
    if not data.keys() <= converters.keys() or not required <= data.keys():
        raise NotTrusted(model.__name__)
    return model.model_construct(**{key: converters[key](value) for key, value in data.items()})


Converter = Callable[[Any], Any]


@cache  # once per model class: compare builds 56 presets, each with its nested parts
def plan(model: type[BaseModel]) -> tuple[list[Converter], dict[str, Converter], set[str]]:
    """A model's "before" validators, a converter per field (field_converter), and its required fields."""
    decorators = model.__pydantic_decorators__
    if decorators.field_validators or decorators.field_serializers or decorators.model_serializers:
        raise NotTrusted(model.__name__)
    before = []
    for name, decorator in decorators.model_validators.items():
        if decorator.info.mode == "before":
            before.append(getattr(model, name))  # ModelShape's derived head sizes
        elif decorator.info.mode != "after":  # a wrap validator may change anything
            raise NotTrusted(model.__name__)
    fields = model.model_fields
    converters = {name: field_converter(info.annotation) for name, info in fields.items()}
    return before, converters, {name for name, info in fields.items() if info.is_required()}


def field_converter(annotation: Any) -> Converter:
    """A function giving one field's value as validation of well-formed data gives it, by the field's annotation,
    or raising NotTrusted."""
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return field_converter(get_args(annotation)[0])
    if origin is typing.Union or origin is types.UnionType:
        arms = [arm for arm in get_args(annotation) if arm is not type(None)]
        optional = len(arms) < len(get_args(annotation))
        arm = field_converter(arms[0]) if len(arms) == 1 else refuse  # two types: which one is validation's call

        def either(value: Any) -> Any:
            return None if value is None and optional else arm(value)

        return either
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return lambda value: trusted(annotation, value)
    if origin is tuple:
        args = get_args(annotation)
        if len(args) == 2 and args[1] is Ellipsis:
            item = field_converter(args[0])
            return lambda value: tuple(item(part) for part in sequence(value))
        items = [field_converter(arg) for arg in args]
        return lambda value: tuple(convert(part) for convert, part in zip(items, sized(value, len(items)), strict=True))
    if origin is list:
        (item_type,) = get_args(annotation)
        item = field_converter(item_type)
        return lambda value: [item(part) for part in sequence(value, list)]
    if origin is Literal:
        choices = get_args(annotation)
        return lambda value: value if type(value) in PLAIN and value in choices else refuse(value)
    if annotation is float:  # YAML's 80 for a float field: validation gives 80.0, exactly
        return lambda value: float(value) if type(value) in (int, float) else refuse(value)
    if annotation in PLAIN:  # strict: no bool for an int, no int for a str
        return lambda value: value if type(value) is annotation else refuse(value)
    return refuse


def refuse(value: Any) -> Any:
    raise NotTrusted(repr(value))


def sequence(value: Any, kinds: type | tuple[type, ...] = (list, tuple)) -> Any:
    return value if isinstance(value, kinds) else refuse(value)


def sized(value: Any, length: int) -> Any:
    return value if isinstance(value, list | tuple) and len(value) == length else refuse(value)
