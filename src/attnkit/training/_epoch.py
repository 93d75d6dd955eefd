"""One epoch of :func:`attnkit.training.loop.fit`: the training steps (with gradient accumulation and, when asked,
autocast and a gradient scaler), the validation, and the rules that decide what comes next (layer 5)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import NamedTuple

import torch
from torch import nn

from attnkit.runtime.devices import autocast, on_device, to_device
from attnkit.training._progress import Reporter
from attnkit.training._run_state import RunState
from attnkit.training.distributed import DistributedContext, all_reduce_sums, check_replicas_in_sync
from attnkit.training.fit_config import FitConfig
from attnkit.training.objective import Batch, Objective, is_summable
from attnkit.training.schedule import LearningRateSchedule
from attnkit.training.seeding import set_random_state

__all__ = [
    "EpochStart",
    "EpochTotals",
    "batch_count",
    "batch_rows",
    "improves",
    "remaining_batches",
    "running",
    "selection_notes",
    "stop_reason",
    "to_device",
    "train_epoch",
    "validate",
]


class EpochTotals(NamedTuple):
    """What one process's training part of an epoch did (a resumed epoch's counts include its earlier part)."""

    loss_sum: float  # the batches' mean losses, summed
    batches: int
    steps: int  # optimiser steps
    partial: bool  # cut short by a budget (time or steps) before its last batch


class EpochStart(NamedTuple):
    """Where an epoch starts: at its beginning, or (resuming a checkpoint written in its middle) after ``batches``
    batches and ``steps`` steps whose losses summed to ``loss_sum``, with this rank's generators' state then."""

    batches: int = 0
    steps: int = 0
    loss_sum: float = 0.0
    random: dict | None = None


def train_epoch(
    objective: Objective,
    train_model: nn.Module,
    optimizer: torch.optim.Optimizer,
    schedule: LearningRateSchedule,
    batches: Iterable[Batch],
    *,
    config: FitConfig,
    context: DistributedContext,
    device: torch.device,
    reporter: Reporter,
    epoch: int,
    clock: Callable[[], float],
    out_of_time: Callable[[], bool],
    steps_before: int = 0,
    scaler: torch.amp.GradScaler | None = None,
    start: EpochStart | None = None,
    after_step: Callable[[EpochTotals], None] | None = None,
) -> EpochTotals:
    """One pass over ``batches`` (from ``start``), an optimiser step every ``config.accumulate`` batches (and after
    the last).

    ``steps_before`` counts the run's optimiser steps in earlier epochs (for the schedule). After every step but the
    epoch's last, ``after_step`` gets the totals so far (step checkpoints), then the time and step budgets are
    checked. A resumed epoch skips ``start.batches`` batches, then puts back the generators' state of that moment.
    Under DDP the gradients are reduced across ranks only on the batch that completes a step.
    """
    start = start or EpochStart()
    model = _plain(train_model)
    model.train()
    rest = _resumed(batches, start)
    loss_sum, count, steps, pending = start.loss_sum, start.batches, start.steps, 0
    with reporter.epoch_bar(epoch, batch_count(batches), done=start.batches) as bar:
        for batch, last in _mark_last(rest):
            boundary = last or pending + 1 == config.accumulate
            value = _backward(objective, train_model, batch, config, device, optimizer, scaler, pending, boundary)
            pending, count, loss_sum = pending + 1, count + 1, loss_sum + value
            bar.step(value, batch_rows(batch))
            if not boundary:
                continue
            where = f"epoch {epoch}, step {steps + 1}: gradient norm {{}} (loss {value})"
            _step(model, optimizer, schedule, scaler, config, pending, steps_before + steps + 1, clock(), where)
            pending, steps = 0, steps + 1
            reporter.step(steps_before + steps, value, optimizer.param_groups[0]["lr"])
            if steps == start.steps + 1:
                check_replicas_in_sync(model, context, where=f"epoch {epoch}, step {steps}")
            if last:
                break
            totals = EpochTotals(loss_sum, count, steps, True)
            if after_step is not None:
                after_step(totals)
            if out_of_time() or (config.max_steps is not None and steps_before + steps >= config.max_steps):
                return totals
    return EpochTotals(loss_sum, count, steps, False)


def _backward(
    objective: Objective,
    train_model: nn.Module,
    batch: Batch,
    config: FitConfig,
    device: torch.device,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler | None,
    pending: int,
    boundary: bool,
) -> float:
    """One batch's forward and backward pass (gradients kept local under DDP unless it completes a step); its loss.

    The loss is computed under autocast in ``config.precision`` (the backward pass runs outside it, as torch
    recommends); with a ``scaler`` (fp16) it is scaled before backward."""
    with nullcontext() if boundary else _no_sync(train_model):
        with autocast(device, config.precision):
            loss = objective.loss(to_device(batch, device))
        if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
            shape = list(loss.shape) if isinstance(loss, torch.Tensor) else type(loss).__name__
            raise ValueError(f"Objective.loss must return a scalar tensor (the batch's mean loss), got {shape}")
        if pending == 0:
            optimizer.zero_grad(set_to_none=True)
        scaled = loss if config.accumulate == 1 else loss / config.accumulate
        (scaled if scaler is None else scaler.scale(scaled)).backward()
    return loss.item()


def _step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    schedule: LearningRateSchedule,
    scaler: torch.amp.GradScaler | None,
    config: FitConfig,
    pending: int,
    step: int,
    seconds: float,
    problem: str,
) -> None:
    """The optimiser step ``step`` of the run over ``pending`` batches' gradients: unscaled, averaged, clipped;
    ``problem`` is the message of a non-finite gradient norm (``{}`` for the norm).

    With a ``scaler`` (fp16) a step whose gradients hold inf/NaN is skipped by the scaler (which lowers its scale)
    and still counts as a step; without one a non-finite gradient norm raises ``FloatingPointError``."""
    parameters = [p for p in model.parameters() if p.requires_grad]
    if scaler is not None:
        scaler.unscale_(optimizer)
    if pending < config.accumulate:  # the epoch's last step, over fewer batches: their mean, not a smaller sum
        for parameter in parameters:
            if parameter.grad is not None:
                parameter.grad.mul_(config.accumulate / pending)
    max_norm = math.inf if config.grad_clip is None else config.grad_clip
    norm = torch.nn.utils.clip_grad_norm_(parameters, max_norm)
    if scaler is None and not torch.isfinite(norm):
        raise FloatingPointError(problem.format(norm.item()) + "; lower the learning rate or check the data")
    schedule.before_step(optimizer, step, seconds)
    if scaler is None:
        optimizer.step()
    else:  # skips the step when unscale_ found inf/NaN gradients, then adjusts the scale
        scaler.step(optimizer)
        scaler.update()


def _resumed(batches: Iterable[Batch], start: EpochStart) -> Iterator[Batch]:
    """The epoch's batches from ``start``: those done skipped, then this rank's generators put back as they were."""
    rest = remaining_batches(batches, start.batches)
    if start.random is not None:
        set_random_state(start.random)
    return rest


def remaining_batches(batches: Iterable[Batch], skip: int) -> Iterator[Batch]:
    """``batches`` after the first ``skip``: through ``batches.from_batch(skip)`` when it has one (a stream that
    skips without collating), else by drawing and dropping them, now (so that what drawing them does to the global
    generators is done before a resumed epoch puts their saved state back)."""
    if skip and hasattr(batches, "from_batch"):
        return iter(batches.from_batch(skip))
    iterator = iter(batches)
    for _ in range(skip):
        if next(iterator, _END) is _END:
            raise ValueError(f"the epoch's batches ended before the {skip} a resumed run had done: the data changed")
    return iterator


_END = object()


def batch_rows(batch: Batch) -> int | None:
    """The rows in a batch: the first dimension of its first tensor (a tensor, a dataclass, a mapping or a
    sequence of them), or None."""
    if isinstance(batch, torch.Tensor):
        return batch.shape[0] if batch.dim() else None
    if dataclasses.is_dataclass(batch):
        values = [getattr(batch, item.name) for item in dataclasses.fields(batch)]
    elif isinstance(batch, Mapping):
        values = list(batch.values())
    elif isinstance(batch, (list, tuple)):
        values = list(batch)
    else:
        return None
    return next((value.shape[0] for value in values if isinstance(value, torch.Tensor) and value.dim()), None)


def validate(
    objective: Objective, batches: Iterable[Batch], config: FitConfig, context: DistributedContext, device: torch.device
) -> dict[str, float]:
    """The objective's metrics on the validation split (reduced exactly over ranks), with the selection metric checked;
    the batches are moved to ``device`` and the objective evaluates under autocast in ``config.precision``."""
    model = objective.model
    model.eval()
    try:
        with torch.no_grad(), autocast(device, config.precision):
            moved = on_device(batches, device)
            if is_summable(objective):
                raw = objective.metrics_from_sums(all_reduce_sums(objective.evaluate_sums(moved), context))
            else:
                raw = objective.evaluate(moved)
    finally:
        model.train()
    try:
        metrics = {str(name): float(value) for name, value in raw.items()}
    except (AttributeError, TypeError, ValueError) as error:
        raise ValueError(f"the objective's evaluation must return {{name: number}}, got {raw!r}") from error
    if config.select_metric not in metrics:
        raise ValueError(
            f"the objective's metrics {sorted(metrics)} have no {config.select_metric!r} (FitConfig.select_metric)"
        )
    return metrics


def stop_reason(run: RunState, config: FitConfig, out_of_time: bool) -> str | None:
    """Why the run stops before its next epoch (``"epochs"``, ``"early_stopping"``, ``"time_budget"``,
    ``"max_steps"``), or None."""
    if run.epoch >= config.epochs:
        return "epochs"
    if config.max_steps is not None and run.steps >= config.max_steps:
        return "max_steps"
    if config.patience is not None and run.bad_epochs >= config.patience:
        return "early_stopping"
    if out_of_time:
        return "time_budget"
    return None


def improves(metrics: Mapping[str, float], best: Mapping[str, float] | None, config: FitConfig) -> bool:
    """True when ``metrics`` beat ``best`` (the best metrics so far; empty or None: nothing yet): a finite
    ``config.select_metric`` better in ``config.select_mode``, or equal to the best with a lower validation
    ``loss`` (on a small validation split the metric often ties, while the loss still tells the epochs apart)."""
    value = metrics[config.select_metric]
    if not math.isfinite(value):
        return False
    held = None if not best else best.get(config.select_metric)
    if held is None or not math.isfinite(held):
        return True
    if value != held:
        return value > held if config.select_mode == "max" else value < held
    loss, held_loss = metrics.get("loss"), best.get("loss")  # type: ignore[union-attr]
    return loss is not None and held_loss is not None and math.isfinite(loss) and loss < held_loss


SMALL_VALIDATION = 100  # examples below which a validation metric is too coarse to choose epochs on its own


def selection_notes(history: list, config: FitConfig) -> list[str]:
    """Warnings about choosing epochs on this validation split, each said once in a run: when it has fewer than
    :data:`SMALL_VALIDATION` examples (said at the first epoch), and when its metric has not moved over the first
    three validated epochs (said at the third)."""
    validated = [record.metrics for record in history if record.metrics]
    notes, name = [], config.select_metric
    if len(validated) == 1 and 0 < validated[0].get("count", SMALL_VALIDATION) < SMALL_VALIDATION:
        notes.append(
            f"the validation split has only {validated[0]['count']:.0f} examples (fewer than {SMALL_VALIDATION}): its "
            f"{name} moves in coarse steps, so epochs tying on it are told apart by validation loss; a larger "
            "split chooses more reliably"
        )
    by_loss = name != "loss" and all("loss" in metrics for metrics in validated)
    if by_loss and len(validated) == 3 and len({metrics[name] for metrics in validated}) == 1:
        notes.append(
            f"the validation {name} has stayed at {validated[0][name]:g} for 3 epochs: the best epoch is being "
            "chosen by validation loss; check that the model can learn this data, or train longer"
        )
    return notes


@contextmanager
def running(objective: Objective, train_model: nn.Module) -> Iterator[None]:
    """Point ``objective.model`` at the DDP wrapper for the training steps, and back at the plain model afterwards."""
    plain = objective.model
    if train_model is plain:
        yield
        return
    objective.model = train_model
    try:
        yield
    finally:
        objective.model = plain


def batch_count(batches: Iterable[Batch]) -> int | None:
    """``len(batches)``, or None when the iterable has no length."""
    try:
        return len(batches)  # type: ignore[arg-type]
    except TypeError:
        return None


def _mark_last(batches: Iterable[Batch]) -> Iterator[tuple[Batch, bool]]:
    """``(batch, is the last one)`` pairs, looking one batch ahead."""
    iterator = iter(batches)
    try:
        current = next(iterator)
    except StopIteration:
        return
    for following in iterator:
        yield current, False
        current = following
    yield current, True


def _plain(train_model: nn.Module) -> nn.Module:
    """The model inside a DDP wrapper (the model itself otherwise)."""
    return train_model.module if isinstance(train_model, nn.parallel.DistributedDataParallel) else train_model


def _no_sync(train_model: nn.Module) -> AbstractContextManager:
    """DDP's ``no_sync()`` (keep this batch's gradients local); nothing to do for a plain model."""
    if isinstance(train_model, nn.parallel.DistributedDataParallel):
        return train_model.no_sync()
    return nullcontext()
