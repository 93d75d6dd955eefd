"""Training's part of devices and precision: the fp16 gradient scaler and a model placed for training (layer 5).

    device = place_model(model, "auto")             # under torchrun: joins the process group first
    scaler = grad_scaler(device, "fp16")            # None unless fp16

``fp16`` training (the CPU included) scales the loss with a :class:`torch.amp.GradScaler`, which skips a step whose
gradients hold inf/NaN and lowers the scale; weights, optimiser state and gradients stay float32. Devices and
precision at run time are :mod:`attnkit.runtime.devices`; their old names here still work, with a warning.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import nn

from attnkit.runtime import PRECISIONS
from attnkit.runtime import devices as _devices
from attnkit.runtime.devices import resolve_device
from attnkit.runtime.torchrun_env import torchrun_env
from attnkit.training.distributed import init_distributed

__all__ = ["PRECISIONS", "grad_scaler", "place_model"]

_MOVED = frozenset(_devices.__all__) - {"resolve_device"}


def __getattr__(name: str) -> Any:
    """The run-time names that moved to :mod:`attnkit.runtime.devices`, with a ``DeprecationWarning``."""
    if name in _MOVED:
        warnings.warn(
            f"attnkit.training.precision.{name} moved to attnkit.runtime.devices.{name}", DeprecationWarning, 2
        )
        return getattr(_devices, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def grad_scaler(device: torch.device, precision: str) -> torch.amp.GradScaler | None:
    """A :class:`torch.amp.GradScaler` for ``fp16`` training on ``device``; None for ``fp32`` and ``bf16``.
    ``ValueError`` when torch has no working GradScaler for ``device``'s type."""
    if precision != "fp16":
        return None
    try:
        scaler = torch.amp.GradScaler(device.type)
    except (RuntimeError, ValueError) as error:
        raise ValueError(f"--precision fp16: torch has no GradScaler for {device.type} ({error}); use bf16") from None
    if not scaler.is_enabled():
        raise ValueError(f"--precision fp16: torch's GradScaler is disabled on {device.type}; use bf16 or fp32")
    return scaler


def place_model(model: nn.Module, device: str | torch.device = "auto") -> torch.device:
    """Move ``model`` to the resolved ``device`` and return it; under torchrun first join the process group on the
    backend that matches it (nccl for CUDA, gloo for the CPU), so training and DDP compute on the same device; a
    process group that already computes elsewhere is refused."""
    resolved = resolve_device(device)
    if torchrun_env().world_size > 1:
        if resolved.type not in ("cpu", "cuda"):
            raise ValueError(f"--device {device}: torchrun training runs on CUDA (nccl) or the CPU (gloo)")
        context = init_distributed("nccl" if resolved.type == "cuda" else "gloo")
        if context.device != resolved:
            raise ValueError(
                f"--device {device}: this process's DDP group already computes on {context.device}, not {resolved}"
            )
    model.to(resolved)
    return resolved
