"""Task configs as JSON, written once for every task (layer 5).

A task's config is a dataclass that inherits :class:`JsonConfig`: ``to_dict()`` gives the JSON a checkpoint's
``config.json`` stores, and ``from_dict()`` rebuilds it, refusing unknown keys and values of the wrong type with
one line that names the field (a hand-edited ``"embed_dim": "16"`` is a clear error, not a ``TypeError`` deep
inside a model's constructor).

    @dataclass
    class MyConfig(JsonConfig):
        kind_name: ClassVar[str] = "my task"
        hidden: int = 64
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar, Union

__all__ = ["JsonConfig"]

Config = TypeVar("Config", bound="JsonConfig")


class JsonConfig:
    """Mixin for dataclass configs: ``to_dict`` / ``from_dict`` with checked keys and value types."""

    kind_name: ClassVar[str] = "config"  # how errors name this config ("classifier config", ...)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls: type[Config], values: Mapping[str, Any]) -> Config:
        """Rebuild from :meth:`to_dict`.

        Raises:
            ValueError: unknown keys, a value whose type does not match its field (ints are accepted where a float
                is expected), or whatever the config's own ``__post_init__`` refuses.
        """
        if not isinstance(values, Mapping):
            raise ValueError(f"the {cls.kind_name} must be a JSON object, got {type(values).__name__}")
        fields = {field.name: field for field in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(values) - set(fields))
        if unknown:
            raise ValueError(f"unknown {cls.kind_name} keys: {', '.join(unknown)}")
        hints = typing.get_type_hints(cls)
        for name, value in values.items():
            if not _matches(value, hints[name]):
                raise ValueError(
                    f"{cls.kind_name} field {name!r} must be {_describe(hints[name])}, got {value!r} "
                    f"({type(value).__name__})"
                )
        return cls(**values)


def _matches(value: Any, hint: Any) -> bool:
    """Whether a JSON value fits the annotation ``hint`` (the shapes configs use: scalars, lists, dicts, unions)."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return True
    if origin in (Union, types.UnionType):
        return any(_matches(value, option) for option in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if origin is list:
        (item,) = typing.get_args(hint) or (Any,)
        return isinstance(value, list) and all(_matches(v, item) for v in value)
    if origin is dict:
        return isinstance(value, dict)
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    return True  # an annotation this checker does not model: the config's own checks decide


def _describe(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(option) for option in typing.get_args(hint))
    if hint is type(None):
        return "null"
    if origin is list:
        (item,) = typing.get_args(hint) or (Any,)
        return f"a list of {_describe(item)}"
    if origin is dict:
        return "an object"
    names = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    return names.get(hint, str(hint))
