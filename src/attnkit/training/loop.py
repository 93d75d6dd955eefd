"""The model-agnostic training loop: AdamW, validation every epoch, best-model selection, early stopping, a time
budget, resumable atomic checkpoints, and multi-process DDP (layer 5).

A :class:`Task` ties a model to its batches: ``loss(batch)`` for training, ``evaluate(batches)`` for metrics. The
loop knows nothing else about the model, so classifiers and sequence-to-sequence models share it.

Checkpoints, when ``checkpoint_dir`` is given (see :mod:`attnkit.training.checkpoint` for the format)::

    checkpoint_dir/last/   after every epoch: weights, config, extra files and the trainer state (resume from here)
    checkpoint_dir/best/   whenever the selection metric improves: weights, config and extra files (ship this one)

``best/`` is written before ``last/``, and ``last/`` carries the best weights itself whenever they differ from its
own, so a run killed at any instant resumes to the same result.

Repeatability: at the start of every epoch all random generators are reseeded from ``(seed, epoch, rank)`` (see
:mod:`attnkit.training.seeding`), so an epoch's randomness never depends on what came before it. A run resumed
after epoch ``e`` therefore repeats an uninterrupted run bit for bit (on the same hardware and thread count):
weights, AdamW moments and the loop's counters come from the checkpoint, and the random streams from the seed.

Distributed: under ``torchrun --nproc-per-node N`` each process calls ``fit`` with its own shard of the data
(``train_batches`` and ``valid_batches`` must give every rank the same number of batches, of equal size, so
that averaging gradients over ranks equals one process on the global batch). ``fit`` joins the process group,
wraps the model in DDP for training, reduces validation statistics exactly (the task must implement
:class:`SummableTask`), and lets rank 0 alone print and write checkpoints. Ranks draw different random streams
(different dropout masks), so the shuffle that decides each rank's shard must use its own generator seeded by the
epoch (``DistributedSampler``, attnkit's batch samplers with ``num_replicas``/``rank``), not the global one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import torch
from torch import nn

from attnkit.training._progress import Reporter
from attnkit.training._run_state import EpochRecord, RunCheckpoints, RunState, cpu_copy, start_run
from attnkit.training.distributed import (
    DistributedContext,
    all_reduce_sums,
    any_rank,
    check_replicas_in_sync,
    init_distributed,
    wrap_model,
)
from attnkit.training.optim import decay_learning_rate, make_optimizer, warm_up
from attnkit.training.seeding import derive_seed, seed_everything

__all__ = ["EpochRecord", "FitConfig", "FitResult", "SummableTask", "Task", "fit"]

Batch = Any  # whatever the caller's collate function yields: a dict of tensors, a batch dataclass with .to(), ...


@runtime_checkable
class Task(Protocol):
    """A model with its training loss and its evaluation.

    ``loss`` must run the model as ``self.model(...)``: during training steps under DDP, ``fit`` temporarily
    points ``task.model`` at the DistributedDataParallel wrapper, which averages gradients over ranks only for
    calls that go through it. ``evaluate`` always sees the plain model, in eval mode, under ``torch.no_grad()``.
    """

    model: nn.Module

    def loss(self, batch: Batch) -> torch.Tensor:
        """The scalar mean loss of ``batch``."""
        ...

    def evaluate(self, batches: Iterable[Batch]) -> dict[str, float]:
        """Metrics over a whole split, e.g. ``{"accuracy": 0.91, "loss": 0.27}``."""
        ...


@runtime_checkable
class SummableTask(Protocol):
    """Optional: evaluation as additive statistics, so that metrics combine exactly across ranks (needed by DDP).

    ``fit`` computes ``metrics_from_sums(sums over all ranks of evaluate_sums(shard))``. Accuracy, for instance:
    ``evaluate_sums`` returns ``{"correct": 91.0, "count": 100.0, "loss_sum": 27.3}`` and ``metrics_from_sums``
    turns the totals into ``{"accuracy": correct / count, "loss": loss_sum / count}``. Corpus BLEU and chrF
    (n-gram matches and totals), WER and PER (error and reference counts) are additive in the same way. When a
    task has both methods, ``fit`` uses them in one process too, so one and N processes share one code path.
    """

    def evaluate_sums(self, batches: Iterable[Batch]) -> dict[str, float]:
        """Additive statistics of these batches."""
        ...

    def metrics_from_sums(self, sums: Mapping[str, float]) -> dict[str, float]:
        """The metrics of a split from the statistics summed over all of it."""
        ...


@dataclass
class FitConfig:
    """Options of :func:`fit`.

    Attributes:
        epochs: the most epochs to train (in total, counting the epochs of a resumed run).
        lr: AdamW's (initial) learning rate.
        lr_decay: after every validated epoch that does not improve the selection metric, the learning rate is
            multiplied by this factor (0 < lr_decay <= 1; 1.0 keeps it constant). The rate lives in the optimiser's
            state, so a resumed run carries on with the decayed value.
        warmup_steps: the learning rate rises linearly over the first this many optimiser steps of the run
            (resumed parts included), from ``lr / warmup_steps`` at step 1 to ``lr`` at step ``warmup_steps``; 0
            starts at ``lr``. Transformers trained with Adam need it (Vaswani et al. 2017, section 5.3).
        weight_decay: AdamW's decoupled weight decay, applied to matrices and embeddings only (parameters with two
            or more dimensions), not to biases and norm gains.
        grad_clip: the largest global gradient norm, or None for no clipping.
        patience: stop after this many epochs in a row without improvement; None trains every epoch.
        select_metric: the validation metric that picks the best epoch (a key of the task's metrics).
        select_mode: ``"max"`` (accuracy, BLEU) or ``"min"`` (loss, WER).
        seed: seeds every epoch's random generators (with the epoch and the rank).
        progress: show a bar per epoch on a terminal and a line per epoch (rank 0 only, on stderr).
        max_minutes: a wall-time budget for the whole run (resumed runs included): training stops after the step
            that exhausts it, validates that partial epoch, checkpoints and returns.
        log_every: refresh the bar's running loss every this many steps.
        find_unused_parameters: passed to DDP, for models whose forward leaves some parameters unused.
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
    find_unused_parameters: bool = False

    def __post_init__(self) -> None:
        problems = []
        if self.epochs < 0:
            problems.append(f"epochs must be >= 0, got {self.epochs}")
        if not self.lr > 0:
            problems.append(f"lr must be > 0, got {self.lr}")
        if not 0 < self.lr_decay <= 1:
            problems.append(f"lr_decay must be in (0, 1], got {self.lr_decay}")
        if self.warmup_steps < 0:
            problems.append(f"warmup_steps must be >= 0, got {self.warmup_steps}")
        if not self.weight_decay >= 0:
            problems.append(f"weight_decay must be >= 0, got {self.weight_decay}")
        if self.grad_clip is not None and not self.grad_clip > 0:
            problems.append(f"grad_clip must be > 0 or None, got {self.grad_clip}")
        if self.patience is not None and self.patience < 1:
            problems.append(f"patience must be >= 1 or None, got {self.patience}")
        if self.select_mode not in ("max", "min"):
            problems.append(f"select_mode must be 'max' or 'min', got {self.select_mode!r}")
        if self.seed < 0:
            problems.append(f"seed must be >= 0, got {self.seed}")
        if self.max_minutes is not None and not self.max_minutes > 0:
            problems.append(f"max_minutes must be > 0 or None, got {self.max_minutes}")
        if self.log_every < 1:
            problems.append(f"log_every must be >= 1, got {self.log_every}")
        if problems:
            raise ValueError("FitConfig: " + "; ".join(problems))


@dataclass
class FitResult:
    """The outcome of :func:`fit`.

    Attributes:
        best_epoch: the epoch whose weights the model holds on return (None if no epoch was validated).
        best_metrics: that epoch's validation metrics.
        history: one record per epoch, resumed epochs included.
        wall_time: seconds of training, summed over the interrupted and resumed parts of a run.
        stopped_early: True when training ended before ``epochs`` (patience or time budget).
        stop_reason: ``"epochs"``, ``"early_stopping"`` or ``"time_budget"``.
        resumed_from: the epoch of the checkpoint this call resumed from, or None.
    """

    best_epoch: int | None
    best_metrics: dict[str, float]
    history: list[EpochRecord]
    wall_time: float
    stopped_early: bool
    stop_reason: str
    resumed_from: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy."""
        return asdict(self)


def fit(
    task: Task,
    train_batches: Callable[[int], Iterable[Batch]],
    valid_batches: Callable[[], Iterable[Batch]],
    config: FitConfig,
    *,
    checkpoint_dir: str | Path | None = None,
    resume: bool = False,
    model_config: dict | None = None,
    extra_files: dict[str, str | Path] | None = None,
) -> FitResult:
    """Train ``task.model`` with AdamW, validate every epoch, keep the best weights, stop early on a plateau.

    Args:
        task: the model with its loss and evaluation (see :class:`Task`).
        train_batches: ``train_batches(epoch)`` gives epoch ``epoch``'s batches (epochs count from 1); the caller's
            sampler reshuffles by epoch. Under DDP, this rank's shard.
        valid_batches: the validation batches (this rank's shard under DDP).
        config: the options.
        checkpoint_dir: where ``last/`` and ``best/`` go; None keeps everything in memory.
        resume: continue from ``checkpoint_dir/last`` if it exists (else start afresh). The settings that change
            the numbers (seed, lr, weight decay, clipping, selection) must be those the run started with.
        model_config: JSON options that rebuild the model, saved in each checkpoint's config.json.
        extra_files: files copied into each checkpoint, e.g. ``{"tokenizer.json": path}``.

    Returns:
        A :class:`FitResult`; ``task.model`` holds the best epoch's weights.

    Raises:
        ValueError: bad arguments, a selection metric the task does not report, settings that differ from the
            resumed run's, or DDP with a task that is not a :class:`SummableTask`.
        CheckpointError: ``checkpoint_dir/last`` is not a valid resumable checkpoint for this model.
        FloatingPointError: the gradient norm became NaN or infinite.
    """
    started = time.monotonic()
    context = init_distributed()
    if context.is_distributed and not _is_summable(task):
        raise ValueError(
            f"distributed training needs exact metrics across ranks: {type(task).__name__} must implement "
            "evaluate_sums() and metrics_from_sums() (see attnkit.training.loop.SummableTask)"
        )
    if resume and checkpoint_dir is None:
        raise ValueError("resume=True needs a checkpoint_dir to resume from")
    model = task.model
    was_training = model.training
    if context.device.type == "cuda":
        model.to(context.device)
    device = _device_of(model)
    optimizer = make_optimizer(model, lr=config.lr, weight_decay=config.weight_decay)
    reporter = Reporter(
        enabled=config.progress and context.is_main, epochs=config.epochs, refresh_every=config.log_every
    )

    run, resumed_from, checkpoints = RunState(), None, None
    if checkpoint_dir is not None:
        checkpoints = RunCheckpoints(Path(checkpoint_dir), model_config, extra_files, context)
        run, resumed_from = start_run(
            checkpoints.directory, resume, model, optimizer, config, model_config, context, reporter
        )
    previous = run.elapsed

    def clock() -> float:
        return previous + time.monotonic() - started

    def out_of_time() -> bool:
        return config.max_minutes is not None and any_rank(clock() >= 60 * config.max_minutes, context)

    train_model = wrap_model(model, context, find_unused_parameters=config.find_unused_parameters)
    while (reason := _stop_reason(run, config, out_of_time())) is None:
        epoch = run.epoch + 1
        epoch_started = time.monotonic()
        seed_everything(derive_seed(config.seed, epoch, context.rank))
        with _running(task, train_model):
            loss_sum, steps, partial = _train_epoch(
                task,
                model,
                optimizer,
                train_batches(epoch),
                config,
                context,
                device,
                reporter,
                epoch,
                out_of_time,
                steps_before=sum(record.steps for record in run.history),
            )
        totals = all_reduce_sums({"loss": loss_sum, "steps": float(steps)}, context)
        if totals["steps"] == 0:
            raise ValueError(f"train_batches({epoch}) gave no batches")
        metrics = _validate(task, valid_batches(), config, context, device)
        improved = _improves(metrics[config.select_metric], run.best_value, config.select_mode)
        if improved:
            run.best_epoch, run.best_value, run.best_metrics = epoch, metrics[config.select_metric], metrics
            run.best_weights, run.bad_epochs = cpu_copy(model), 0
        else:
            run.bad_epochs += 1
            decay_learning_rate(optimizer, config.lr_decay)
        train_loss, seconds = totals["loss"] / totals["steps"], time.monotonic() - epoch_started
        record = EpochRecord(epoch, train_loss, metrics, seconds, steps, partial)
        run.epoch = epoch
        run.history.append(record)
        run.elapsed = clock()
        check_replicas_in_sync(model, context, where=f"end of epoch {epoch}")
        if checkpoints is not None:
            checkpoints.after_epoch(model, optimizer, run, config, improved=improved)
        reporter.epoch_done(
            epoch, record.train_loss, metrics, seconds=record.seconds, best_epoch=run.best_epoch, partial=partial
        )

    if run.best_weights is not None:
        model.load_state_dict(run.best_weights)
    if checkpoints is not None and run.best_epoch is not None:
        checkpoints.refresh_best(model, run)
    model.train(was_training)
    reporter.message(f"stopped ({reason}) after epoch {run.epoch}; best epoch {run.best_epoch}: {run.best_metrics}")
    return FitResult(
        best_epoch=run.best_epoch,
        best_metrics=dict(run.best_metrics),
        history=list(run.history),
        wall_time=clock(),
        stopped_early=reason != "epochs",
        stop_reason=reason,
        resumed_from=resumed_from,
    )


# -------------------------------------------------------------------------------------------------- epochs


def _train_epoch(
    task: Task,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    batches: Iterable[Batch],
    config: FitConfig,
    context: DistributedContext,
    device: torch.device,
    reporter: Reporter,
    epoch: int,
    out_of_time: Callable[[], bool],
    *,
    steps_before: int = 0,
) -> tuple[float, int, bool]:
    """One pass over ``batches``: ``(summed batch losses, steps, cut short by the time budget)``.

    ``steps_before`` counts the run's optimiser steps in earlier epochs (for the warm-up).
    """
    model.train()
    parameters = [p for p in model.parameters() if p.requires_grad]
    max_norm = math.inf if config.grad_clip is None else config.grad_clip
    loss_sum, steps = 0.0, 0
    with reporter.epoch_bar(epoch, _length(batches)) as bar:
        for batch in batches:
            loss = task.loss(_to_device(batch, device))
            if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
                shape = list(loss.shape) if isinstance(loss, torch.Tensor) else type(loss).__name__
                raise ValueError(f"Task.loss must return a scalar tensor (the batch's mean loss), got {shape}")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(parameters, max_norm)
            if not torch.isfinite(norm):
                raise FloatingPointError(
                    f"epoch {epoch}, step {steps + 1}: gradient norm {norm.item()} (loss {loss.item()}); "
                    "lower the learning rate or check the data"
                )
            warm_up(optimizer, steps_before + steps + 1, config.warmup_steps)
            optimizer.step()
            steps += 1
            value = loss.item()
            loss_sum += value
            bar.step(value)
            if steps == 1:
                check_replicas_in_sync(model, context, where=f"epoch {epoch}, step 1")
            if out_of_time():
                return loss_sum, steps, True
    return loss_sum, steps, False


def _validate(
    task: Task, batches: Iterable[Batch], config: FitConfig, context: DistributedContext, device: torch.device
) -> dict[str, float]:
    """The task's metrics on the validation split (reduced exactly over ranks), with the selection metric checked."""
    model = task.model
    model.eval()
    try:
        with torch.no_grad():
            moved = (_to_device(batch, device) for batch in batches)
            if _is_summable(task):
                raw = task.metrics_from_sums(all_reduce_sums(task.evaluate_sums(moved), context))
            else:
                raw = task.evaluate(moved)
    finally:
        model.train()
    try:
        metrics = {str(name): float(value) for name, value in raw.items()}
    except (AttributeError, TypeError, ValueError) as error:
        raise ValueError(f"the task's evaluation must return {{name: number}}, got {raw!r}") from error
    if config.select_metric not in metrics:
        raise ValueError(
            f"the task's metrics {sorted(metrics)} have no {config.select_metric!r} (FitConfig.select_metric)"
        )
    return metrics


def _stop_reason(run: RunState, config: FitConfig, out_of_time: bool) -> str | None:
    if run.epoch >= config.epochs:
        return "epochs"
    if config.patience is not None and run.bad_epochs >= config.patience:
        return "early_stopping"
    if out_of_time:
        return "time_budget"
    return None


def _improves(value: float, best: float | None, mode: str) -> bool:
    if not math.isfinite(value):
        return False
    return best is None or (value > best if mode == "max" else value < best)


# ------------------------------------------------------------------------------------------------- helpers


@contextmanager
def _running(task: Task, train_model: nn.Module) -> Iterator[None]:
    """Point ``task.model`` at the DDP wrapper for the training steps, and back at the plain model afterwards."""
    plain = task.model
    if train_model is plain:
        yield
        return
    task.model = train_model
    try:
        yield
    finally:
        task.model = plain


def _is_summable(task: object) -> bool:
    return callable(getattr(task, "evaluate_sums", None)) and callable(getattr(task, "metrics_from_sums", None))


def _device_of(model: nn.Module) -> torch.device:
    parameter = next(model.parameters(), None)
    return torch.device("cpu") if parameter is None else parameter.device


def _to_device(batch: Batch, device: torch.device) -> Batch:
    """Move a batch's tensors to the model's device (nothing to do on the CPU)."""
    if device.type == "cpu":
        return batch
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, Mapping):
        return {
            key: _to_device(value, device) if isinstance(value, torch.Tensor) else value for key, value in batch.items()
        }
    mover = getattr(batch, "to", None)
    return mover(device) if callable(mover) else batch


def _length(batches: Iterable[Batch]) -> int | None:
    try:
        return len(batches)  # type: ignore[arg-type]
    except TypeError:
        return None
