"""The trainer state of a resumable checkpoint as JSON text plus a flat ``{key: tensor}`` dict (for safetensors).

Optimizer state dicts and the loop's counters are nests of dicts, lists, tuples, scalars and tensors. JSON holds
most of that; what it cannot hold as it is gets a one-key tag: a tensor becomes ``{"__tensor__": key}`` (the tensor
itself goes to the dict, saved with safetensors), a tuple ``{"__tuple__": [...]}``, a dict with non-string keys
``{"__items__": [[key, value], ...]}``, a non-finite float ``{"__float__": "nan"}``. Nothing is pickled.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import torch

__all__ = ["decode_state", "encode_state"]

_TENSOR, _TUPLE, _ITEMS, _FLOAT = "__tensor__", "__tuple__", "__items__", "__float__"
_TAGS = frozenset({_TENSOR, _TUPLE, _ITEMS, _FLOAT})


def encode_state(state: Mapping[str, Any]) -> tuple[str, dict[str, torch.Tensor]]:
    """Split a nest of containers into JSON text and ``{key: tensor}``; tensors become ``{"__tensor__": key}``.

    Tuples, dicts with non-string keys and non-finite floats are tagged so that they come back as they were.
    """
    tensors: dict[str, torch.Tensor] = {}
    storages: set[tuple] = set()

    def encode(value: Any, path: tuple[str, ...]) -> Any:
        where = "/".join(path) or "<root>"
        if isinstance(value, torch.Tensor):
            if where in tensors:
                raise ValueError(f"trainer state: two tensors map to the key {where!r}")
            tensor = value.detach()
            if tensor.numel():
                storage = (tensor.device, tensor.untyped_storage().data_ptr())
                tensor = tensor.clone() if storage in storages else tensor
                storages.add(storage)
            tensors[where] = tensor.cpu().contiguous()
            return {_TENSOR: where}
        if isinstance(value, Mapping):
            if all(isinstance(key, str) for key in value):
                if _TAGS & set(value):
                    raise ValueError(f"trainer state at {where}: keys {sorted(_TAGS & set(value))} are reserved")
                return {key: encode(item, (*path, key)) for key, item in value.items()}
            items = []
            for key, item in value.items():
                if not (key is None or isinstance(key, (bool, int, float, str))):
                    raise ValueError(f"trainer state at {where}: dict key {key!r} is not a JSON scalar")
                items.append([encode(key, (*path, "<key>")), encode(item, (*path, str(key)))])
            return {_ITEMS: items}
        if isinstance(value, tuple):
            return {_TUPLE: [encode(item, (*path, str(index))) for index, item in enumerate(value)]}
        if isinstance(value, list):
            return [encode(item, (*path, str(index))) for index, item in enumerate(value)]
        if isinstance(value, float) and not math.isfinite(value):
            return {_FLOAT: repr(value)}  # 'nan', 'inf', '-inf'
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        raise ValueError(f"trainer state at {where}: cannot store a {type(value).__name__} without pickle")

    encoded = encode(state, ())
    return json.dumps(encoded, indent=1, allow_nan=False) + "\n", tensors


def decode_state(value: Any, tensors: dict[str, torch.Tensor], used: set[str]) -> Any:
    """Invert :func:`encode_state`; ``used`` collects the tensor keys referred to. Raises ValueError."""
    if isinstance(value, list):
        return [decode_state(item, tensors, used) for item in value]
    if not isinstance(value, dict):
        return value
    tags = _TAGS & set(value)
    if not tags:
        return {key: decode_state(item, tensors, used) for key, item in value.items()}
    if len(value) != 1:
        raise ValueError(f"malformed tagged value {sorted(value)}")
    tag, payload = next(iter(value.items()))
    if tag == _TENSOR:
        if not isinstance(payload, str) or payload not in tensors:
            raise ValueError(f"refers to a tensor {payload!r} that the tensors file does not hold")
        if payload in used:
            raise ValueError(f"refers to the tensor {payload!r} twice")
        used.add(payload)
        return tensors[payload]
    if tag == _FLOAT:
        if payload not in {"nan", "inf", "-inf"}:
            raise ValueError(f"malformed non-finite float {payload!r}")
        return float(payload)
    if not isinstance(payload, list):
        raise ValueError(f"malformed {tag} value")
    if tag == _TUPLE:
        return tuple(decode_state(item, tensors, used) for item in payload)
    if not all(isinstance(pair, list) and len(pair) == 2 for pair in payload):
        raise ValueError(f"malformed {_ITEMS} value")
    return {decode_state(key, tensors, used): decode_state(item, tensors, used) for key, item in payload}
