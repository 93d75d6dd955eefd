"""JSON that attnkit reads back, checked against a schema, written once for every file (layer 5).

A schema is a dataclass that inherits :class:`JsonConfig`: ``to_dict()`` gives its JSON, and ``from_dict()``
rebuilds it, refusing unknown keys, missing keys and values of the wrong type with one line that names the field
(a hand-edited ``"embed_dim": "16"`` is a clear error, not a ``TypeError`` deep inside a model's constructor).
Fields may be scalars, ``Literal``\\ s, unions, lists, ``dict[str, X]`` and other :class:`JsonConfig` classes
(nested objects: an error names the path to the field, ``files['model.bin'].sha256``).

Task configs (``config.json``), the run manifest, the export manifest and the results tables under
``docs/results/`` are all read this way; :func:`read_json_file` reads a file and names it in every error.

    @dataclass
    class MyConfig(JsonConfig):
        kind_name: ClassVar[str] = "my task"
        hidden: int = 64
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar, Union

__all__ = ["JsonConfig", "check_json", "describe_hint", "read_json_file", "read_json_value", "value_problem"]

Config = TypeVar("Config", bound="JsonConfig")


class JsonConfig:
    """Mixin for dataclass schemas: ``to_dict`` / ``from_dict`` with checked keys and value types."""

    kind_name: ClassVar[str] = "config"  # how errors name this config ("classifier config", ...)
    # keys a reader ignores (written by other versions, or notes a person added); open: every key not a field
    ignored_keys: ClassVar[frozenset[str]] = frozenset()
    open_keys: ClassVar[bool] = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls: type[Config], values: Mapping[str, Any]) -> Config:
        """Rebuild from :meth:`to_dict`; ValueError for unknown or missing keys, a value whose type does not match
        its field (ints are accepted where a float is expected), or whatever ``__post_init__`` refuses."""
        return _build(cls, values, where="")


def check_json(value: Any, hint: Any, *, label: str) -> Any:
    """``value`` checked against any annotation (``dict[str, Row]``, ``list[Run]``, a schema class): the value
    with nested schema objects built; a ValueError starting with ``label`` names the first field that does not fit."""
    return _checked(value, hint, where="", label=label)


def read_json_value(path: str | Path) -> Any:
    """The JSON value in ``path``, unchecked; ValueError in one line starting with ``path``: unreadable, not UTF-8,
    or malformed JSON (with line and column)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    except OSError as error:
        raise ValueError(f"{path}: cannot read ({error.strerror or error})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}:{error.lineno}:{error.colno}: malformed JSON: {error.msg}") from None
    except (RecursionError, ValueError) as error:
        raise ValueError(f"{path}: malformed JSON ({type(error).__name__})") from None


def read_json_file(path: str | Path, schema: Any, *, label: str | None = None) -> Any:
    """The JSON in ``path`` as ``schema`` (a :class:`JsonConfig` class, or any annotation with ``label``); errors as
    :func:`read_json_value`'s, or a field the schema refuses (named)."""
    path = Path(path)
    values = read_json_value(path)
    try:
        if isinstance(schema, type) and issubclass(schema, JsonConfig) and label is None:
            return schema.from_dict(values)
        return check_json(values, schema, label=label or "file")
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def _build(cls: type[Config], values: Any, *, where: str, label: str | None = None) -> Config:
    """``cls`` from ``values``; errors start with ``label`` (the outermost schema's name) and name the field's
    path from the outermost object (``where``)."""
    label = label or cls.kind_name
    if not isinstance(values, Mapping):
        place = f" field {where!r}" if where else ""
        raise ValueError(f"the {label}{place} must be a JSON object, got {_shown(values)}")
    fields = {field.name: field for field in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = [] if cls.open_keys else sorted(set(values) - set(fields) - cls.ignored_keys)
    if unknown:
        raise ValueError(f"unknown {label} keys: {', '.join(_path(where, str(key)) for key in unknown)}")
    missing = [
        name
        for name, field in fields.items()
        if name not in values and field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING  # type: ignore[misc]
    ]
    if missing:
        raise ValueError(f"{label} field {_path(where, missing[0])!r} is missing")
    hints = typing.get_type_hints(cls)
    built = {}
    for name, value in values.items():
        if name in fields:
            built[name] = _checked(value, hints[name], where=_path(where, name), label=label)
    return cls(**built)


def _checked(value: Any, hint: Any, *, where: str, label: str) -> Any:
    """``value`` with nested schema objects built, or a ValueError naming the field at ``where``."""
    if isinstance(hint, type) and issubclass(hint, JsonConfig):
        return _build(hint, value, where=where, label=label)
    if typing.get_origin(hint) is dict and isinstance(value, dict):
        _, item = typing.get_args(hint) or (str, Any)
        return {key: _checked(entry, item, where=f"{where}[{key!r}]", label=label) for key, entry in value.items()}
    if typing.get_origin(hint) is list and isinstance(value, list):
        (item,) = typing.get_args(hint) or (Any,)
        return [_checked(entry, item, where=f"{where}[{index}]", label=label) for index, entry in enumerate(value)]
    problem = value_problem(value, hint, where=where)
    if problem is not None:
        raise ValueError(f"{label} field {problem}")
    return value


def value_problem(value: Any, hint: Any, *, where: str) -> str | None:
    """Why the JSON ``value`` at ``where`` does not fit the annotation ``hint`` (``"'dim' must be an integer, got
    '32' (str)"``), or None when it does."""
    if _matches(value, hint):
        return None
    place = repr(where) if where else "(the whole file)"
    return f"{place} must be {describe_hint(hint)}, got {_shown(value)}"


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    text = text if len(text) <= 60 else text[:60] + "..."
    return f"{text} ({type(value).__name__})"


def _path(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


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
        _, item = typing.get_args(hint) or (str, Any)
        return isinstance(value, dict) and all(_matches(v, item) for v in value.values())
    if origin is typing.Literal:
        return any(value == option and type(value) is type(option) for option in typing.get_args(hint))
    if isinstance(hint, type) and issubclass(hint, JsonConfig):
        try:
            _build(hint, value, where="")
        except ValueError:
            return False
        return True
    return True  # an annotation this checker does not model: the config's own checks decide


def describe_hint(hint: Any) -> str:
    """How a message names what ``hint`` accepts (``"an integer or null"``)."""
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(describe_hint(option) for option in typing.get_args(hint))
    if hint is type(None):
        return "null"
    if origin is list:
        (item,) = typing.get_args(hint) or (Any,)
        return f"a list of {describe_hint(item)}"
    if origin is dict or (isinstance(hint, type) and issubclass(hint, JsonConfig)):
        return "an object"
    if origin is typing.Literal:
        return "one of " + ", ".join(json.dumps(option) for option in typing.get_args(hint))
    names = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    return names.get(hint, str(hint))
