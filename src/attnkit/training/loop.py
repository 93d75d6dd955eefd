"""The model-agnostic training loop: AdamW with a warm-up and a learning-rate schedule, gradient accumulation,
validation every epoch, best-model selection (optionally of averaged checkpoints), early stopping, a time budget,
resumable atomic checkpoints, and multi-process DDP (layer 5).

An :class:`Objective` ties a model to its batches: ``loss(batch)`` for training, ``evaluate(batches)`` for metrics;
the loop knows nothing else about the model. The epochs, selection and pauses live in
:mod:`attnkit.training._fit_session`.

Checkpoints, when ``checkpoint_dir`` is given (format: :mod:`attnkit.checkpointing`)::

    checkpoint_dir/last/   after every epoch, and every ``save_every`` steps / ``save_every_minutes`` in between:
                           weights, config, extra files and the trainer state (resume from here)
    checkpoint_dir/best/   whenever the selection metric improves: weights, config and extra files (ship this one)

``best/`` is written before ``last/``, and ``last/`` carries the best weights whenever they differ from its own, so a
run killed at any instant resumes to the same result. Every epoch reseeds all generators from ``(seed, epoch, rank)``
(:mod:`attnkit.training.seeding`), so a resumed run repeats an uninterrupted one bit for bit on the same hardware
(a cosine schedule over a time budget excepted: its rates follow the clock).

``fit`` trains where the model's parameters are (:func:`attnkit.training.precision.place_model` puts them there).
Under ``torchrun`` each process passes its own shard (every rank the same number of batches, of equal size), the
objective must be a :class:`SummableObjective`, and rank 0 alone prints and writes checkpoints. Ranks draw different
random streams, so the shuffle that decides each rank's shard must use its own generator seeded by the epoch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from attnkit.runtime.devices import check_precision, device_of
from attnkit.training._fit_session import FitSession
from attnkit.training._progress import Reporter
from attnkit.training._run_checkpoints import RunCheckpoints
from attnkit.training._run_state import EpochRecord, RunState, start_run
from attnkit.training.distributed import DistributedContext, any_rank, init_distributed, wrap_model
from attnkit.training.fit_config import SCHEDULES, FitConfig, check_schedule_without_validation
from attnkit.training.objective import Batch, Objective, SummableObjective, is_summable
from attnkit.training.optim import make_optimizer
from attnkit.training.precision import grad_scaler
from attnkit.training.schedule import LearningRateSchedule

__all__ = ["SCHEDULES", "EpochRecord", "FitConfig", "FitResult", "Objective", "SummableObjective", "fit"]


@dataclass
class FitResult:
    """The outcome of :func:`fit`. ``best_epoch`` (None if no epoch was validated) is the epoch whose weights, or
    average of the last ``average_last`` epochs' weights, the model holds on return; ``history`` holds completed
    epochs, resumed ones included; ``wall_time`` sums the interrupted and resumed parts; ``resumed_from`` is the last
    epoch completed before this call's checkpoint; ``paused_epoch`` is the epoch a time budget cut before its last
    batch (``last/`` holds its position); ``stop_reason`` is ``"epochs"``, ``"early_stopping"``, ``"time_budget"``
    or ``"max_steps"``."""

    best_epoch: int | None
    best_metrics: dict[str, float]
    history: list[EpochRecord]
    wall_time: float
    stopped_early: bool
    stop_reason: str
    resumed_from: int | None = None
    device: str = "cpu"
    paused_epoch: EpochRecord | None = None
    world_size: int = 1

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy."""
        return asdict(self)


def fit(
    objective: Objective,
    train_batches: Callable[[int], Iterable[Batch]],
    valid_batches: Callable[[], Iterable[Batch]] | None,
    config: FitConfig,
    *,
    checkpoint_dir: str | Path | None = None,
    resume: bool = False,
    model_config: dict | None = None,
    extra_files: dict[str, str | Path] | None = None,
    init_from: str | Path | None = None,
) -> FitResult:
    """Train ``objective.model`` with AdamW, validate every epoch, keep the best weights, stop early on a plateau.

    ``train_batches(epoch)`` gives an epoch's batches (epochs count from 1; this rank's shard under DDP).
    ``valid_batches=None`` trains without validation (a recipe already chosen, refitted on all the data): every epoch
    counts as the best, so this needs a schedule that does not watch validation (not ``"plateau"``). ``resume``
    continues from ``checkpoint_dir/last`` if it exists, with the settings that change the numbers unchanged.
    ``model_config`` (JSON) and ``extra_files`` go into each checkpoint. ``init_from`` is a checkpoint whose weights a
    new run starts from, with a fresh optimiser (:mod:`attnkit.training.init_from`).

    Returns a :class:`FitResult`; ``objective.model`` holds the best epoch's weights. Raises ``ValueError`` for bad
    arguments or settings that differ from the resumed run's, ``CheckpointError`` for an unusable ``last/``, and
    ``FloatingPointError`` when the gradient norm is not finite (fp16's scaler skips such steps instead).
    """
    context = init_distributed()
    _check_arguments(objective, valid_batches, config, resume=resume, checkpoint_dir=checkpoint_dir, context=context)
    was_training = objective.model.training
    session, resumed_from = _open_session(
        objective,
        config,
        context,
        checkpoint_dir,
        resume=resume,
        model_config=model_config,
        extra_files=extra_files,
        init_from=init_from,
    )
    reason = session.train(train_batches, valid_batches)
    return _close_session(session, reason, was_training=was_training, resumed_from=resumed_from)


def _open_session(
    objective: Objective,
    config: FitConfig,
    context: DistributedContext,
    checkpoint_dir: str | Path | None,
    *,
    resume: bool,
    model_config: dict | None,
    extra_files: dict[str, str | Path] | None,
    init_from: str | Path | None,
) -> tuple[FitSession, int | None]:
    """The session a sitting trains with (device, optimiser, clock, reporter, the resumed or initial state), and
    the epoch it resumed from (None for a new run)."""
    model = objective.model
    device = _training_device(model, context)
    check_precision(config.precision, device)
    scaler = grad_scaler(device, config.precision)
    optimizer = make_optimizer(model, lr=config.lr, weight_decay=config.weight_decay)  # (its first import is slow)
    started, previous = time.monotonic(), [0.0]

    def clock() -> float:
        return previous[0] + time.monotonic() - started

    def out_of_time() -> bool:
        return config.max_minutes is not None and any_rank(clock() >= 60 * config.max_minutes, context)

    reporter = Reporter(
        enabled=config.progress and context.is_main,
        epochs=config.epochs,
        refresh_every=config.log_every,
        tensorboard_dir=config.tensorboard_dir if context.is_main else None,
        line_seconds=config.progress_seconds,
        clock=clock,
    )
    run, resumed_from, checkpoints = RunState(), None, None
    if checkpoint_dir is not None:
        checkpoints = RunCheckpoints(Path(checkpoint_dir), model_config, extra_files, context)
        run, resumed_from = start_run(
            checkpoints.directory, resume, model, optimizer, config, model_config, context, reporter
        )
    if init_from is not None and resumed_from is None:
        from attnkit.checkpointing import load_model_weights

        load_model_weights(model, init_from)
    previous[0] = run.elapsed
    if scaler is not None and run.grad_scaler:
        scaler.load_state_dict(run.grad_scaler)
    train_model = wrap_model(model, context, find_unused_parameters=config.find_unused_parameters)
    session = FitSession(
        objective, train_model, optimizer, _schedule(config, run), scaler, reporter, run, checkpoints, config,
        context, device, clock, out_of_time,
    )  # fmt: skip
    return session, resumed_from


def _close_session(session: FitSession, reason: str, *, was_training: bool, resumed_from: int | None) -> FitResult:
    """Leave the best weights in the model (and in ``best/``), report the stop, and the result of the run."""
    model, run, checkpoints = session.model, session.run, session.checkpoints
    if run.best_weights is not None:
        model.load_state_dict(run.best_weights)
    if checkpoints is not None and run.best_epoch is not None:
        checkpoints.refresh_best(model, run)
    model.train(was_training)
    paused = None if run.position is None else (run.position["epoch"], run.position["batches"])
    session.reporter.finish(reason, run.epoch, run.best_epoch, run.best_metrics, paused=paused)
    return FitResult(
        best_epoch=run.best_epoch,
        best_metrics=dict(run.best_metrics),
        history=list(run.history),
        wall_time=session.clock(),
        stopped_early=reason != "epochs",
        stop_reason=reason,
        resumed_from=resumed_from,
        device=str(session.device),
        paused_epoch=session.paused,
        world_size=session.context.world_size,
    )


def _check_arguments(
    objective: Objective,
    valid_batches: Callable | None,
    config: FitConfig,
    *,
    resume: bool,
    checkpoint_dir: str | Path | None,
    context: DistributedContext,
) -> None:
    """Refuse what :func:`fit` cannot do, before anything is built."""
    if context.is_distributed and not is_summable(objective):
        raise ValueError(
            f"distributed training needs exact metrics across ranks: {type(objective).__name__} must implement "
            "evaluate_sums() and metrics_from_sums() (see attnkit.training.loop.SummableObjective)"
        )
    if valid_batches is None:
        check_schedule_without_validation(config.schedule, who="fit(valid_batches=None)")
    if resume and checkpoint_dir is None:
        raise ValueError("resume=True needs a checkpoint_dir to resume from")


def _schedule(config: FitConfig, run: RunState) -> LearningRateSchedule:
    """The run's learning-rate schedule, on the run's (restored) schedule state."""
    return LearningRateSchedule(
        config.schedule,
        lr=config.lr,
        min_lr=config.min_lr,
        lr_decay=config.lr_decay,
        warmup_steps=config.warmup_steps,
        epochs=config.epochs,
        accumulate=config.accumulate,
        budget_seconds=None if config.max_minutes is None else 60 * config.max_minutes,
        max_steps=config.max_steps,
        state=run.schedule,
    )


def _training_device(model: nn.Module, context: DistributedContext) -> torch.device:
    """Where the model trains: where its parameters are. Under DDP that must be the process group's device; a
    model left on the CPU follows an nccl group to its GPU (``cuda:LOCAL_RANK``), anything else is refused."""
    device = device_of(model)
    if not context.is_distributed or device == context.device:
        return device
    if device.type == "cpu" and context.device.type == "cuda":
        model.to(context.device)
        return context.device
    raise ValueError(
        f"the model is on {device} but this process's DDP group computes on {context.device}: place the model "
        "with attnkit.training.precision.place_model (or --device) before training"
    )
