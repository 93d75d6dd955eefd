"""One epoch of :func:`attnkit.training.loop.fit`: the training steps (with gradient accumulation and, when asked,
autocast and a gradient scaler), the validation, and the rules that decide what comes next (layer 5)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
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

__all__ = ["EpochTotals", "batch_count", "improves", "running", "stop_reason", "to_device", "train_epoch", "validate"]


class EpochTotals(NamedTuple):
    """What one process's training part of an epoch did."""

    loss_sum: float  # the batches' mean losses, summed
    batches: int
    steps: int  # optimiser steps
    partial: bool  # cut short by the time budget


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
) -> EpochTotals:
    """One pass over ``batches``, an optimiser step every ``config.accumulate`` batches (and after the last).

    ``objective.model`` is ``train_model`` (the DDP wrapper under DDP) for the duration; ``steps_before`` counts the
    run's optimiser steps in earlier epochs (for the schedule); the time and step budgets are checked after every
    step.
    Each batch's mean loss is divided by ``accumulate`` before its backward pass, so that the summed gradient is
    that of the concatenated batches' mean; a step with fewer batches (the epoch's last) is rescaled to their mean.
    Under DDP the gradients are reduced across ranks only on the batch that completes a step.

    The loss is computed under autocast in ``config.precision`` (the backward pass runs outside it, as torch
    recommends). With a ``scaler`` (fp16) the loss is scaled before backward and the gradients unscaled before
    clipping; a step whose gradients hold inf/NaN is skipped by the scaler (which lowers its scale) and still
    counts as a step. Without one a non-finite gradient norm raises ``FloatingPointError``.
    """
    model = _plain(train_model)
    model.train()
    parameters = [p for p in model.parameters() if p.requires_grad]
    max_norm = math.inf if config.grad_clip is None else config.grad_clip
    accumulate = config.accumulate
    # With accumulation the step boundary must be known before the batch's backward pass (DDP reduces there).
    marked = _mark_last(batches) if accumulate > 1 else ((batch, False) for batch in batches)
    loss_sum, count, steps, pending = 0.0, 0, 0, 0
    with reporter.epoch_bar(epoch, batch_count(batches)) as bar:
        for batch, last in marked:
            boundary = last or pending + 1 == accumulate
            with nullcontext() if boundary else _no_sync(train_model):
                with autocast(device, config.precision):
                    loss = objective.loss(to_device(batch, device))
                if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
                    shape = list(loss.shape) if isinstance(loss, torch.Tensor) else type(loss).__name__
                    raise ValueError(f"Objective.loss must return a scalar tensor (the batch's mean loss), got {shape}")
                if pending == 0:
                    optimizer.zero_grad(set_to_none=True)
                scaled = loss if accumulate == 1 else loss / accumulate
                (scaled if scaler is None else scaler.scale(scaled)).backward()
            pending += 1
            count += 1
            value = loss.item()
            loss_sum += value
            bar.step(value)
            if not boundary:
                continue
            if scaler is not None:
                scaler.unscale_(optimizer)
            if pending < accumulate:  # the epoch's last step, over fewer batches: their mean, not a smaller sum
                for parameter in parameters:
                    if parameter.grad is not None:
                        parameter.grad.mul_(accumulate / pending)
            pending = 0
            norm = torch.nn.utils.clip_grad_norm_(parameters, max_norm)
            if scaler is None and not torch.isfinite(norm):
                raise FloatingPointError(
                    f"epoch {epoch}, step {steps + 1}: gradient norm {norm.item()} (loss {value}); "
                    "lower the learning rate or check the data"
                )
            schedule.before_step(optimizer, steps_before + steps + 1, clock())
            if scaler is None:
                optimizer.step()
            else:  # skips the step when unscale_ found inf/NaN gradients, then adjusts the scale
                scaler.step(optimizer)
                scaler.update()
            steps += 1
            reporter.step(steps_before + steps, value, optimizer.param_groups[0]["lr"])
            if steps == 1:
                check_replicas_in_sync(model, context, where=f"epoch {epoch}, step 1")
            if out_of_time() or (config.max_steps is not None and steps_before + steps >= config.max_steps):
                return EpochTotals(loss_sum, count, steps, True)
    return EpochTotals(loss_sum, count, steps, False)


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
    if config.max_steps is not None and sum(record.steps for record in run.history) >= config.max_steps:
        return "max_steps"
    if config.patience is not None and run.bad_epochs >= config.patience:
        return "early_stopping"
    if out_of_time:
        return "time_budget"
    return None


def improves(value: float, best: float | None, mode: str) -> bool:
    """True when ``value`` is finite and better than ``best`` (None: nothing yet) in ``mode`` (``"max"``/``"min"``)."""
    if not math.isfinite(value):
        return False
    return best is None or (value > best if mode == "max" else value < best)


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
