"""Checkpoint averaging: the model that :func:`attnkit.training.loop.fit` validates and ships when
``FitConfig.average_last = k > 1`` is the mean of the weights at the end of the last ``k`` validated epochs (layer 5).

Not an EMA: the Transformer recipe averages checkpoints (Vaswani et al. 2017), the option does not depend on the
steps per epoch, the steps pay nothing, and the result is a plain mean. Cost: ``k - 1`` extra copies of the weights
in memory and in ``last/``'s trainer state.

Training goes on from the epoch's own weights; only validation, selection, ``best/`` and the returned model see
the average, so selection stays honest: the model that is kept is the model that was validated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

__all__ = ["average_weights", "push_window"]


def average_weights(snapshots: Sequence[Mapping[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The element-wise mean of ``snapshots`` (state dicts with the same names and shapes), computed in float64 and
    returned in each tensor's own dtype; integer and boolean tensors (counters such as BatchNorm's
    ``num_batches_tracked``) are taken from the last snapshot."""
    if not snapshots:
        raise ValueError("snapshots must hold at least one state dict")
    last = snapshots[-1]
    for index, snapshot in enumerate(snapshots):
        if snapshot.keys() != last.keys() or any(snapshot[n].shape != last[n].shape for n in last):
            raise ValueError(f"snapshots[{index}] does not have the names and shapes of the last snapshot")
    averaged: dict[str, torch.Tensor] = {}
    for name, tensor in last.items():
        if not (tensor.is_floating_point() or tensor.is_complex()):
            averaged[name] = tensor.clone()
            continue
        wide = torch.complex128 if tensor.is_complex() else torch.float64
        total = torch.zeros(tensor.shape, dtype=wide, device=tensor.device)
        for snapshot in snapshots:
            total += snapshot[name].to(wide)
        averaged[name] = (total / len(snapshots)).to(tensor.dtype)
    return averaged


def push_window(
    window: Sequence[Mapping[str, torch.Tensor]], snapshot: Mapping[str, torch.Tensor], size: int
) -> list[Mapping[str, torch.Tensor]]:
    """``window`` with ``snapshot`` appended, keeping the last ``size`` entries (``size >= 1``)."""
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    return [*window, snapshot][-size:]
