"""The optimiser of :func:`attnkit.training.loop.fit` and the plateau schedule's moves: AdamW, a linear warm-up over
the run's first steps, and a decay each time validation stops improving (layer 5). The other schedules, and the
choice among them, are in :mod:`attnkit.training.schedule`.

The plateau schedule lives in the optimiser's parameter groups (``"lr"``, and ``"scheduled_lr"`` during the
warm-up), so it is saved with the optimiser's state in every checkpoint and a resumed run carries on where it
stopped.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["decay_learning_rate", "make_optimizer", "warm_up"]


def warm_up(optimizer: torch.optim.Optimizer, step: int, warmup_steps: int) -> None:
    """Set the rate of the run's optimiser step ``step`` (from 1) during the warm-up: ``step / warmup_steps`` of
    the scheduled rate, which each group keeps in ``"scheduled_lr"`` until the warm-up ends (so the optimiser's
    state, saved in checkpoints, resumes a warm-up where it stopped)."""
    if step > warmup_steps:
        return
    for group in optimizer.param_groups:
        scheduled = group.setdefault("scheduled_lr", group["lr"])
        group["lr"] = scheduled * step / warmup_steps
        if step == warmup_steps:
            del group["scheduled_lr"]


def decay_learning_rate(optimizer: torch.optim.Optimizer, factor: float) -> None:
    """Multiply every parameter group's learning rate by ``factor`` (a plateau step; 1.0 does nothing), and its
    scheduled rate too while a warm-up is still under way."""
    for group in optimizer.param_groups:
        group["lr"] *= factor
        if "scheduled_lr" in group:
            group["scheduled_lr"] *= factor


def make_optimizer(model: nn.Module, *, lr: float, weight_decay: float = 0.0) -> torch.optim.AdamW:
    """AdamW at rate ``lr``, with ``weight_decay`` on parameters of two or more dimensions only (not on biases and
    norm gains); the fused kernel where the device and dtype allow it."""
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [
        group
        for group in ({"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0})
        if group["params"]
    ]
    if not groups:
        raise ValueError(f"{type(model).__name__} has no trainable parameters")
    # The fused kernel updates each parameter in one pass; the default (foreach) one allocates parameter-sized
    # temporaries every step, which is slow for a large embedding on the CPU.
    try:
        return torch.optim.AdamW(groups, lr=lr, fused=True)
    except (RuntimeError, ValueError):  # a device or dtype the fused kernel does not support
        return torch.optim.AdamW(groups, lr=lr)
