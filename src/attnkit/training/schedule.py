"""Learning-rate schedules of :func:`attnkit.training.loop.fit`: the rate of every optimiser step (layer 5).

Every schedule starts with the same linear warm-up: step ``s <= W`` (``W = warmup_steps``, steps counted from 1
over the whole run, resumed parts included) runs at ``lr * s / W``. After it:

``"plateau"``      ``lr``, multiplied by ``lr_decay`` after every validated epoch that does not improve the selection
                   metric (the rate, and the warm-up's target, live in the optimiser's parameter groups).
``"inverse-sqrt"`` ``lr * sqrt(W / s)`` (Vaswani et al. 2017, section 5.3; with ``W = 0``, ``lr / sqrt(s)``).
``"cosine"``       ``min_lr + (lr - min_lr) * (1 + cos(pi * p)) / 2``, where ``p`` in [0, 1] is the part of the
                   horizon gone since the warm-up ended: ``max_steps`` steps when set, ``p = (s - W) /
                   (max_steps - W)``; else the time budget, ``p = (t - t_W) / (T - t_W)`` in seconds of training
                   (``t_W``: when the warm-up ended), so a time-budgeted run anneals fully however fast its steps
                   are; else ``p = (s - W) / (S - W)`` with ``S = epochs * ceil(batches per epoch / accumulate)``,
                   the batches counted in the first epoch (``train_batches(1)`` must have a ``len()``).

``S`` and ``t_W`` are a :class:`ScheduleState` saved with the trainer state, so a resumed run carries on along the
same curve (a time-budgeted cosine's rates follow the clock, so it does not repeat a run bit for bit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attnkit.training.optim import decay_learning_rate, warm_up

__all__ = ["LearningRateSchedule", "ScheduleState", "cosine_rate", "inverse_sqrt_rate"]


def inverse_sqrt_rate(lr: float, step: int, warmup_steps: int) -> float:
    """The rate of step ``step`` (from 1): the warm-up's ``lr * step / W``, then ``lr * sqrt(W / step)``."""
    if step <= warmup_steps:
        return lr * step / warmup_steps
    return lr * math.sqrt(max(warmup_steps, 1) / step)


def cosine_rate(lr: float, min_lr: float, progress: float) -> float:
    """The cosine schedule's rate once ``progress`` (clamped to [0, 1]) of its horizon is gone: ``lr`` to ``min_lr``."""
    progress = min(max(progress, 0.0), 1.0)
    return min_lr + (lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))


@dataclass
class ScheduleState:
    """What a schedule learns during a run and a resumed run must get back: the cosine's last step ``S`` (fixed in
    the first epoch) and the training time ``t_W`` at which the warm-up ended."""

    horizon_steps: int | None = None
    warmup_end_seconds: float | None = None


class LearningRateSchedule:
    """Sets the optimiser's rate before every step and decays it after a plateau (see the module docstring);
    ``state`` is updated in place."""

    def __init__(
        self,
        name: str,
        *,
        lr: float,
        min_lr: float = 0.0,
        lr_decay: float = 1.0,
        warmup_steps: int = 0,
        epochs: int = 1,
        accumulate: int = 1,
        budget_seconds: float | None = None,
        max_steps: int | None = None,
        state: ScheduleState | None = None,
    ):
        if name not in ("plateau", "inverse-sqrt", "cosine"):
            raise ValueError(f"name must be 'plateau', 'inverse-sqrt' or 'cosine', got {name!r}")
        self.name, self.lr, self.min_lr, self.lr_decay = name, lr, min_lr, lr_decay
        self.warmup_steps, self.epochs, self.accumulate = warmup_steps, epochs, accumulate
        self.budget_seconds = None if max_steps is not None else budget_seconds
        self.max_steps = max_steps
        self.state = ScheduleState() if state is None else state

    def start_epoch(self, batches: int | None) -> None:
        """Fix the step-counted cosine horizon from the first epoch's number of ``batches`` (None: unknown)."""
        if self.name != "cosine" or self.budget_seconds is not None or self.state.horizon_steps is not None:
            return
        if self.max_steps is not None:
            self.state.horizon_steps = self.max_steps
            return
        if batches is None:
            raise ValueError(
                "schedule='cosine' without max_minutes decays over epochs x steps per epoch: train_batches(epoch) "
                "must have a len(), or set max_minutes to decay over the time budget"
            )
        self.state.horizon_steps = self.epochs * math.ceil(batches / self.accumulate)

    def before_step(self, optimizer: torch.optim.Optimizer, step: int, seconds: float) -> None:
        """Set the rate of the run's optimiser step ``step`` (from 1), taken ``seconds`` into the run's training."""
        if step == self.warmup_steps:
            self.state.warmup_end_seconds = seconds
        if self.name == "plateau":
            warm_up(optimizer, step, self.warmup_steps)
            return
        rate = self.rate(step, seconds)
        for group in optimizer.param_groups:
            group["lr"] = rate

    def rate(self, step: int, seconds: float) -> float:
        """The ``"inverse-sqrt"`` or ``"cosine"`` rate of step ``step`` at ``seconds`` of training."""
        if self.name == "inverse-sqrt":
            return inverse_sqrt_rate(self.lr, step, self.warmup_steps)
        if self.name != "cosine":
            raise ValueError(f"the {self.name!r} rate lives in the optimiser, not in a formula")
        if step <= self.warmup_steps:
            return self.lr * step / self.warmup_steps
        return cosine_rate(self.lr, self.min_lr, self._progress(step, seconds))

    def after_epoch(self, optimizer: torch.optim.Optimizer, *, improved: bool) -> None:
        """The plateau rule: decay the rate after an epoch that did not improve (``"plateau"`` only)."""
        if self.name == "plateau" and not improved:
            decay_learning_rate(optimizer, self.lr_decay)

    def _progress(self, step: int, seconds: float) -> float:
        """The part of the cosine's horizon gone since the warm-up ended."""
        if self.budget_seconds is not None:
            start = self.state.warmup_end_seconds if self.warmup_steps else 0.0
            start = 0.0 if start is None else start
            span = self.budget_seconds - start
            return 1.0 if span <= 0 else (seconds - start) / span
        if self.state.horizon_steps is None:
            raise RuntimeError("start_epoch() must fix the cosine horizon before the first step")
        span = self.state.horizon_steps - self.warmup_steps
        return 1.0 if span <= 0 else (step - self.warmup_steps) / span
