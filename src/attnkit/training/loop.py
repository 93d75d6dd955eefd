"""The model-agnostic training loop: AdamW with a warm-up and a learning-rate schedule, gradient accumulation,
validation every epoch, best-model selection (optionally of averaged checkpoints), early stopping, a time budget,
resumable atomic checkpoints, and multi-process DDP (layer 5).

A :class:`Objective` ties a model to its batches: ``loss(batch)`` for training, ``evaluate(batches)`` for metrics. The
loop knows nothing else about the model, so classifiers and sequence-to-sequence models share it.

Checkpoints, when ``checkpoint_dir`` is given (see :mod:`attnkit.checkpointing` for the format)::

    checkpoint_dir/last/   after every epoch, and every ``save_every`` steps / ``save_every_minutes`` in between:
                           weights, config, extra files and the trainer state (resume from here)
    checkpoint_dir/best/   whenever the selection metric improves: weights, config and extra files (ship this one)

``best/`` is written before ``last/``, and ``last/`` carries the best weights itself whenever they differ from its
own, so a run killed at any instant resumes to the same result. A ``last/`` written in the middle of an epoch holds
its position (batches done, every rank's random generators): the resumed run skips those batches and goes on as if
never stopped. A time budget that runs out in the middle of an epoch saves there too (see
:mod:`attnkit.training._fit_session`). The epochs, selection and pauses live in that module.

The recipe (:class:`FitConfig`): the schedules ``"plateau"`` (the default), ``"inverse-sqrt"`` and ``"cosine"``
after a linear warm-up (:mod:`attnkit.training.schedule`); ``accumulate`` batches per optimiser step; and
``average_last`` epochs' weights averaged into the model that is validated and kept
(:mod:`attnkit.training.averaging`). Their state lives in the optimiser's parameter groups and the trainer state of
``last/``, and they are settings a resumed run must keep.

Repeatability: at the start of every epoch all random generators are reseeded from ``(seed, epoch, rank)`` (see
:mod:`attnkit.training.seeding`), so an epoch's randomness never depends on what came before it. A run resumed
after epoch ``e`` (or at a step checkpoint, whose generators' state is saved) therefore repeats an uninterrupted
run bit for bit (on the same hardware and thread count):
weights, AdamW moments and the loop's counters come from the checkpoint, and the random streams from the seed
(a cosine schedule over a time budget is the exception: its rates follow the clock).

Device and precision: ``fit`` trains where the model's parameters are (move the model first:
:func:`attnkit.training.precision.place_model` resolves ``--device`` and, under torchrun, joins the process group
on the matching backend) and moves each batch there. ``FitConfig.precision`` runs the training steps and the
validation under :func:`torch.autocast` (bf16, fp16) with a ``GradScaler`` for fp16; fp32 adds nothing.

Distributed: under ``torchrun --nproc-per-node N`` each process calls ``fit`` with its own shard of the data
(``train_batches`` and ``valid_batches`` must give every rank the same number of batches, of equal size, so
that averaging gradients over ranks equals one process on the global batch). ``fit`` joins the process group,
wraps the model in DDP for training, reduces validation statistics exactly (the objective must implement
:class:`SummableObjective`), and lets rank 0 alone print and write checkpoints. Ranks draw different random streams
(different dropout masks), so the shuffle that decides each rank's shard must use its own generator seeded by the
epoch (``DistributedSampler``, attnkit's batch samplers with ``num_replicas``/``rank``), not the global one.
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
    """The outcome of :func:`fit`.

    Attributes:
        best_epoch: the epoch whose weights (or whose average of the last ``average_last`` epochs' weights) the
            model holds on return (None if no epoch was validated).
        best_metrics: that epoch's validation metrics.
        history: one record per epoch, resumed epochs included.
        wall_time: seconds of training, summed over the interrupted and resumed parts of a run.
        stopped_early: True when training ended before ``epochs`` (patience or a budget).
        stop_reason: ``"epochs"``, ``"early_stopping"``, ``"time_budget"`` or ``"max_steps"``.
        resumed_from: the epoch of the checkpoint this call resumed from (the last epoch completed before it, when
            that checkpoint was written in the middle of the next), or None.
        device: where the model trained (``"cpu"``, ``"cuda:0"``, ...).
        paused_epoch: the epoch the time budget ran out in, when it did before that epoch's last batch: its steps
            and loss so far and the validation of that moment (``partial``); ``last/`` holds its position, and
            ``resume=True`` does the rest of it. Not in ``history``, which holds completed epochs.
        world_size: the processes that trained (torchrun's ``WORLD_SIZE``; 1 without it).
    """

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

    Args:
        objective: the model with its loss and evaluation (see :class:`Objective`).
        train_batches: ``train_batches(epoch)`` gives epoch ``epoch``'s batches (epochs count from 1); the caller's
            sampler reshuffles by epoch. Under DDP, this rank's shard.
        valid_batches: the validation batches (this rank's shard under DDP); None trains without validation (a
            recipe already chosen on a validation split, refitted on all the data): every epoch counts as the best,
            so the model kept is the last epoch's (or the average of the last ``average_last``). That needs a
            schedule that does not watch validation (``"cosine"`` or ``"inverse-sqrt"``, not ``"plateau"``).
        config: the options.
        checkpoint_dir: where ``last/`` and ``best/`` go; None keeps everything in memory.
        resume: continue from ``checkpoint_dir/last`` if it exists (else start afresh). The settings that change
            the numbers (seed, lr, schedule and its options, weight decay, clipping, accumulation, averaging,
            selection; and the cosine schedule's horizon: ``max_minutes``, or ``epochs`` without it) must be those
            the run started with.
        model_config: JSON options that rebuild the model, saved in each checkpoint's config.json.
        extra_files: files copied into each checkpoint, e.g. ``{"tokenizer.json": path}``.
        init_from: a checkpoint directory whose weights the model starts from (``--init-from``; see
            :mod:`attnkit.training.init_from`): loaded before the first step of a new run, with a fresh optimiser;
            a run resumed from ``checkpoint_dir/last`` keeps its own weights instead.

    Returns:
        A :class:`FitResult`; ``objective.model`` holds the best epoch's weights (averaged when ``average_last > 1``).

    Raises:
        ValueError: bad arguments, a selection metric the objective does not report, settings that differ from the
            resumed run's, DDP with an objective that is not a :class:`SummableObjective`, a model on another device than
            the process group's, or a precision the model's device cannot compute in.
        CheckpointError: ``checkpoint_dir/last`` is not a valid resumable checkpoint for this model.
        FloatingPointError: the gradient norm became NaN or infinite (fp32, bf16; fp16's scaler skips the step).
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
