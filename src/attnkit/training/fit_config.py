"""The options of :func:`attnkit.training.loop.fit`, checked once when they are made (layer 5)."""

from __future__ import annotations

from dataclasses import dataclass

from attnkit.runtime import PRECISIONS  # the forward pass's precisions (attnkit.runtime.devices.autocast)

__all__ = ["PRECISIONS", "SCHEDULES", "FitConfig", "check_schedule_without_validation"]

# The learning-rate schedules: how the rate moves after the warm-up (see attnkit.training.schedule).
SCHEDULES = ("plateau", "inverse-sqrt", "cosine")


def check_schedule_without_validation(schedule: str, *, who: str) -> None:
    """Refuse ``schedule`` for a run without validation (``who`` names it in the message): such a run keeps its
    last epoch, and the plateau schedule lowers the learning rate when validation stops improving, which it
    would never see."""
    if schedule == "plateau":
        raise ValueError(
            f"{who} trains without validation and keeps the last epoch, and the plateau schedule lowers the learning "
            "rate when validation stops improving, which it then never sees: use schedule 'cosine' (over the "
            "epochs or max steps) or 'inverse-sqrt'"
        )


@dataclass
class FitConfig:
    """Options of :func:`attnkit.training.loop.fit`. Steps are optimiser steps; counts and budgets cover the whole
    run, resumed parts included.

    Attributes:
        lr: AdamW's (initial, or peak after the warm-up) learning rate.
        schedule: how the rate moves after the warm-up: ``"plateau"``, ``"inverse-sqrt"`` or ``"cosine"`` (see
            :mod:`attnkit.training.schedule`), with ``lr_decay`` (plateau only, in (0, 1]) and ``min_lr`` (cosine
            only). ``warmup_steps`` raise the rate linearly from ``lr / warmup_steps`` to ``lr``.
        weight_decay: AdamW's decoupled weight decay, on matrices and embeddings only (not biases and norm gains).
        grad_clip: the largest global gradient norm, or None for no clipping.
        accumulate: batches per optimiser step, each batch's mean loss divided by ``accumulate``, so that a step
            equals one on the concatenated batch; an epoch's last step averages the batches left over.
        average_last: ``k`` > 1 validates, selects and ships the average of the last ``k`` validated epochs'
            weights, while training goes on from the weights themselves (:mod:`attnkit.training.averaging`).
        patience: stop after this many epochs in a row without improvement (epochs that end during the warm-up
            spend none); None trains every epoch.
        select_metric: the validation metric that picks the best epoch; ties are told apart by validation ``loss``.
        select_mode: ``"max"`` (accuracy, BLEU) or ``"min"`` (loss, WER).
        seed: seeds every epoch's random generators (with the epoch and the rank).
        max_minutes: a wall-time budget, cumulative over resumed parts: training stops after the step that exhausts
            it, validates and saves ``last/`` there; a resumed run does the rest of that epoch.
        max_steps: a step budget; unlike ``max_minutes`` it gives the same model on any machine.
        save_every: also save ``last/`` every this many steps, with the epoch's position and every generator's
            state, so that a run killed at any step resumes to the weights of an uninterrupted run.
        save_every_minutes: also save ``last/`` after the first step this many minutes after the previous save.
        progress_seconds: when stderr is not a terminal, print a progress line at most this often.
        tensorboard_dir: also log each epoch's loss and metrics there (rank 0; needs ``tensorboard``).
        precision: ``"fp32"`` (no autocast), ``"bf16"`` or ``"fp16"``: training steps and validation run under
            :func:`torch.autocast` (weights, gradients and optimiser state stay float32); ``"fp16"`` adds a
            ``GradScaler``, which skips a step with inf/NaN gradients instead of raising.
    """

    epochs: int = 10
    lr: float = 1e-3
    lr_decay: float = 1.0
    warmup_steps: int = 0
    weight_decay: float = 0.0
    grad_clip: float | None = 1.0
    patience: int | None = 3
    select_metric: str = "accuracy"
    select_mode: str = "max"
    seed: int = 0
    progress: bool = True
    max_minutes: float | None = None
    log_every: int = 50
    tensorboard_dir: str | None = None
    find_unused_parameters: bool = False
    # Added later: last, so that positional construction keeps its meaning.
    schedule: str = "plateau"
    min_lr: float = 0.0
    accumulate: int = 1
    average_last: int = 1
    precision: str = "fp32"
    max_steps: int | None = None
    save_every: int | None = None
    save_every_minutes: float | None = None
    progress_seconds: float = 30.0

    def __post_init__(self) -> None:
        problems = []
        if self.epochs < 0:
            problems.append(f"epochs must be >= 0, got {self.epochs}")
        if not self.lr > 0:
            problems.append(f"lr must be > 0, got {self.lr}")
        problems += self._schedule_problems()
        if self.warmup_steps < 0:
            problems.append(f"warmup_steps must be >= 0, got {self.warmup_steps}")
        if not self.weight_decay >= 0:
            problems.append(f"weight_decay must be >= 0, got {self.weight_decay}")
        if self.grad_clip is not None and not self.grad_clip > 0:
            problems.append(f"grad_clip must be > 0 or None, got {self.grad_clip}")
        if self.accumulate < 1:
            problems.append(f"accumulate must be >= 1, got {self.accumulate}")
        if self.average_last < 1:
            problems.append(f"average_last must be >= 1, got {self.average_last}")
        if self.patience is not None and self.patience < 1:
            problems.append(f"patience must be >= 1 or None, got {self.patience}")
        if self.select_mode not in ("max", "min"):
            problems.append(f"select_mode must be 'max' or 'min', got {self.select_mode!r}")
        if self.seed < 0:
            problems.append(f"seed must be >= 0, got {self.seed}")
        if self.max_minutes is not None and not self.max_minutes > 0:
            problems.append(f"max_minutes must be > 0 or None, got {self.max_minutes}")
        if self.max_steps is not None and self.max_steps < 1:
            problems.append(f"max_steps must be >= 1 or None, got {self.max_steps}")
        if self.save_every is not None and self.save_every < 1:
            problems.append(f"save_every must be >= 1 or None, got {self.save_every}")
        if self.save_every_minutes is not None and not self.save_every_minutes > 0:
            problems.append(f"save_every_minutes must be > 0 or None, got {self.save_every_minutes}")
        if not self.progress_seconds > 0:
            problems.append(f"progress_seconds must be > 0, got {self.progress_seconds}")
        if self.log_every < 1:
            problems.append(f"log_every must be >= 1, got {self.log_every}")
        if self.precision not in PRECISIONS:
            problems.append(f"precision must be one of {', '.join(map(repr, PRECISIONS))}, got {self.precision!r}")
        if problems:
            raise ValueError("FitConfig: " + "; ".join(problems))

    def _schedule_problems(self) -> list[str]:
        """The schedule, its plateau factor and its floor: each option only where it acts, never ignored."""
        if self.schedule not in SCHEDULES:
            return [f"schedule must be one of {', '.join(map(repr, SCHEDULES))}, got {self.schedule!r}"]
        problems = []
        if not 0 < self.lr_decay <= 1:
            problems.append(f"lr_decay must be in (0, 1], got {self.lr_decay}")
        elif self.lr_decay != 1.0 and self.schedule != "plateau":
            problems.append(f"lr_decay applies to schedule='plateau' only, got {self.lr_decay} with {self.schedule!r}")
        if not 0 <= self.min_lr <= self.lr:
            problems.append(f"min_lr must be in [0, lr={self.lr}], got {self.min_lr}")
        elif self.min_lr != 0.0 and self.schedule != "cosine":
            problems.append(f"min_lr applies to schedule='cosine' only, got {self.min_lr} with {self.schedule!r}")
        return problems
