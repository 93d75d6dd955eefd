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
    """Options of :func:`attnkit.training.loop.fit`.

    Attributes:
        epochs: the most epochs to train (in total, counting the epochs of a resumed run).
        lr: AdamW's (initial, or peak after the warm-up) learning rate.
        schedule: how the rate moves after the warm-up (see :mod:`attnkit.training.schedule`):
            ``"plateau"`` (the default) keeps ``lr`` and multiplies it by ``lr_decay`` after every validated epoch
            that does not improve the selection metric; ``"inverse-sqrt"`` decays it as
            ``lr * sqrt(warmup_steps / step)`` (Vaswani et al. 2017); ``"cosine"`` anneals it from ``lr`` to
            ``min_lr`` along half a cosine, over ``max_steps`` optimiser steps when set, else over the time budget when
            ``max_minutes`` is set (so a time-budgeted run anneals fully whatever its speed), else over ``epochs``
            epochs of optimiser steps.
        lr_decay: the plateau factor (0 < lr_decay <= 1; 1.0 keeps the rate constant); ``"plateau"`` only. The
            rate lives in the optimiser's state, so a resumed run carries on with the decayed value.
        min_lr: the rate the cosine schedule ends at (``"cosine"`` only; 0 <= min_lr <= lr).
        warmup_steps: the learning rate rises linearly over the first this many optimiser steps of the run
            (resumed parts included), from ``lr / warmup_steps`` at step 1 to ``lr`` at step ``warmup_steps``; 0
            starts at ``lr``. Transformers trained with Adam need it (Vaswani et al. 2017, section 5.3).
        weight_decay: AdamW's decoupled weight decay, applied to matrices and embeddings only (parameters with two
            or more dimensions), not to biases and norm gains.
        grad_clip: the largest global gradient norm, or None for no clipping.
        accumulate: sum the gradients of this many batches before each optimiser step, each batch's mean loss
            divided by ``accumulate``, so that a step equals one step on the concatenated batch (when the batches
            have equal sizes); the last step of an epoch averages the batches left over. Steps, warm-up and
            schedules count optimiser steps.
        average_last: ``k`` > 1 validates, selects and ships the average of the weights at the end of the last
            ``k`` validated epochs (fewer in the first ``k - 1`` epochs), while training goes on from the
            weights themselves (checkpoint averaging; see :mod:`attnkit.training.averaging`). 1 uses each epoch's
            own weights.
        patience: stop after this many epochs in a row without improvement (epochs that end during the warm-up
            spend none); None trains every epoch.
        select_metric: the validation metric that picks the best epoch (a key of the objective's metrics); epochs
            that tie on it are told apart by the validation ``loss`` when the objective reports one.
        select_mode: ``"max"`` (accuracy, BLEU) or ``"min"`` (loss, WER).
        seed: seeds every epoch's random generators (with the epoch and the rank).
        progress: show a bar per epoch on a terminal and a line per epoch (rank 0 only, on stderr).
        max_minutes: a wall-time budget for the whole run, cumulative over its resumed parts: training stops after
            the step that exhausts it, validates the weights of that moment (kept as the best when they are), saves
            ``last/`` at that step and returns (``stop_reason`` ``"time_budget"``); a resumed run (with a larger
            budget) does the rest of that epoch, from the next batch.
        max_steps: a budget of optimiser steps for the whole run (resumed runs included): training stops after
            that step, validates that partial epoch, checkpoints and returns. Unlike ``max_minutes`` it gives the
            same model on any machine; the cosine schedule then anneals over these steps.
        log_every: refresh the bar's running loss every this many steps.
        save_every: also save ``last/`` every this many optimiser steps of the run (in the middle of an epoch: the
            position in the epoch's batches and every random generator's state with it), so that a run killed at
            any step resumes from there to the weights of an uninterrupted run; None saves at epoch ends only.
        save_every_minutes: also save ``last/`` (as ``save_every``) after the first step that ends this many
            minutes after the previous save; None: no time rule.
        progress_seconds: when stderr is not a terminal (nohup, Slurm, CI), print a progress line (step, rows/s,
            loss, elapsed, ETA) at most this often, besides the line of every epoch.
        tensorboard_dir: also log each epoch's training loss and validation metrics there as TensorBoard scalars
            (rank 0; needs the ``tensorboard`` package); None logs nothing.
        find_unused_parameters: passed to DDP, for models whose forward leaves some parameters unused.
        precision: ``"fp32"`` (the default: no autocast), ``"bf16"`` or ``"fp16"``: the training steps and the
            validation run under :func:`torch.autocast` in that dtype on the model's device (weights, gradients and
            optimiser state stay float32); ``"fp16"`` also scales the loss with a ``GradScaler``, which skips a step
            with inf/NaN gradients instead of raising (see :mod:`attnkit.training.precision`).
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
