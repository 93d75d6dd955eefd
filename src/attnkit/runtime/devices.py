"""Where a model runs and in what precision: ``--device`` and ``--precision`` at run time, for training and
inference alike (layer 5; as torchtune's ``utils/_device.py: get_device`` sits outside its training package).

    device = resolve_device("auto")                 # cuda:0 when CUDA is available, else the CPU (never mps)
    check_precision("bf16", device)
    model = ready_for_inference(model, device, "bf16")
    with autocast(device, "bf16"):                  # fp32: a nullcontext, nothing else happens
        output = to_host(model(to_device(batch, device)))

Devices: ``auto`` (CUDA when ``torch.cuda.is_available()``, else the CPU; ``auto`` never picks ``mps``: ask for it),
``cpu``, ``cuda`` (the current CUDA device), ``cuda:N``, ``mps``. A device that is not there is one ``ValueError``.
Under ``torchrun`` (``WORLD_SIZE > 1``) ``auto`` and ``cuda`` mean ``cuda:LOCAL_RANK``.

Precisions (:data:`attnkit.runtime.PRECISIONS`): ``fp32`` (no autocast), ``bf16`` and ``fp16`` through
:func:`torch.autocast` with the device's type; weights stay float32. On a CPU without native reduced-precision
kernels both are slower than fp32 (``docs/benchmarks.md``). Training's own part (the fp16 gradient scaler, a model
placed in a process group) is :mod:`attnkit.training.precision`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import torch
from torch import nn

from attnkit.runtime import PRECISIONS
from attnkit.runtime.torchrun_env import torchrun_env

__all__ = [
    "autocast",
    "check_precision",
    "device_of",
    "on_device",
    "ready_for_inference",
    "resolve_device",
    "to_device",
    "to_host",
]

_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """The device ``device`` names (see the module docstring), checked to be there; a CUDA device always carries its
    index, so it compares equal to a parameter's ``.device``. ValueError naming ``--device`` for an unknown name
    or a device this machine does not have."""
    text = str(device)
    if text == "auto":
        return resolve_device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    try:
        resolved = torch.device(text)
    except (RuntimeError, ValueError):
        raise ValueError(f"--device {text}: expected auto, cpu, cuda, cuda:N or mps") from None
    if resolved.type == "cpu":
        return torch.device("cpu")
    if resolved.type == "cuda":
        return _cuda(text, resolved.index)
    if resolved.type == "mps":
        if not torch.backends.mps.is_available():
            raise ValueError(f"--device {text}: MPS is not available here (torch.backends.mps.is_available() is False)")
        return torch.device("mps")
    raise ValueError(f"--device {text}: expected auto, cpu, cuda, cuda:N or mps")


def _cuda(text: str, index: int | None) -> torch.device:
    if not torch.cuda.is_available():
        raise ValueError(f"--device {text}: CUDA is not available here (torch.cuda.is_available() is False)")
    count = torch.cuda.device_count()
    if torchrun_env().world_size > 1:
        local_rank = torchrun_env().local_rank
        if index is not None and index != local_rank:
            raise ValueError(
                f"--device {text}: under torchrun each process uses cuda:LOCAL_RANK (cuda:{local_rank} here); "
                "give --device cuda or auto"
            )
        index = local_rank
    elif index is None:
        index = torch.cuda.current_device()
    if index >= count:
        raise ValueError(f"--device {text}: this machine has {count} CUDA device(s), cuda:0 to cuda:{count - 1}")
    return torch.device("cuda", index)


def check_precision(precision: str, device: torch.device) -> None:
    """Refuse (ValueError) a precision that is not ``fp32``/``bf16``/``fp16``, or one ``device`` cannot compute
    in (bf16 on a GPU without bfloat16, no autocast on the device's type)."""
    if precision not in PRECISIONS:
        raise ValueError(f"--precision {precision}: expected one of {', '.join(PRECISIONS)}")
    if precision == "fp32":
        return
    if not torch.amp.autocast_mode.is_autocast_available(device.type):
        raise ValueError(f"--precision {precision}: torch has no autocast on {device.type}; use fp32")
    if precision == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        name = torch.cuda.get_device_name(device)
        raise ValueError(f"--precision bf16: {device} ({name}) does not support bfloat16; use fp16 or fp32")


def autocast(device: torch.device, precision: str) -> AbstractContextManager:
    """``torch.autocast`` on ``device``'s type in ``precision``'s dtype; a ``nullcontext`` for ``fp32``."""
    if precision == "fp32":
        return nullcontext()
    return torch.autocast(device_type=device.type, dtype=_DTYPES[precision])


def ready_for_inference(model: nn.Module, device: str | torch.device = "auto", precision: str = "fp32") -> nn.Module:
    """``model`` on the resolved ``device``, in eval mode, after checking ``precision`` there (ValueError); unlike
    ``attnkit.training.precision.place_model`` it never joins a process group."""
    resolved = resolve_device(device)
    check_precision(precision, resolved)
    return model.to(resolved).eval()


def device_of(model: nn.Module) -> torch.device:
    """Where ``model``'s parameters live (the CPU for a model without parameters)."""
    parameter = next(model.parameters(), None)
    return torch.device("cpu") if parameter is None else parameter.device


def to_device(batch: Any, device: torch.device) -> Any:
    """A batch's tensors on ``device``: a tensor, a mapping of tensors, or an object with ``.to(device)`` (attnkit's
    batches); the batch itself when it is already there (the CPU: nothing to do)."""
    if device.type == "cpu":
        return batch
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, Mapping):
        return {
            key: to_device(value, device) if isinstance(value, torch.Tensor) else value for key, value in batch.items()
        }
    mover = getattr(batch, "to", None)
    return mover(device) if callable(mover) else batch


def on_device(batches: Iterable[Any], device: torch.device) -> Iterator[Any]:
    """Each batch of ``batches`` moved to ``device`` as it is drawn."""
    for batch in batches:
        yield to_device(batch, device)


def to_host(value: Any) -> Any:
    """A model output brought back for the user: tensors on the CPU, floating ones in float32 (bf16/fp16 results of
    autocast become float32); dataclasses, lists, tuples and dicts are rebuilt around them. One copy per tensor."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        return value.float() if value.is_floating_point() else value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(
            value, **{f.name: to_host(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
        )
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple
        return type(value)(*(to_host(item) for item in value))
    if isinstance(value, (list, tuple)):
        return type(value)(to_host(item) for item in value)
    if isinstance(value, dict):
        return {key: to_host(item) for key, item in value.items()}
    return value
