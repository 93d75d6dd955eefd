"""One call of :func:`attnkit.training.loop.fit` (a sitting of a run, which may be resumed in others): its epochs,
what closes an epoch (validation, selection, patience, ``last/`` and ``best/``), the checkpoints written in the
middle of one, and the pause a time budget makes there (layer 5).

Patience and the plateau schedule compare each epoch with the best *completed* epoch (no patience is spent during
the warm-up). A time budget that runs out in the middle of an epoch validates the weights of that moment (kept when
better) and writes ``last/`` at that batch; the pause touches neither patience nor the schedule, so the resumed
run trains exactly as one never paused.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import torch
from torch import nn

from attnkit.training._epoch import (
    EpochStart,
    EpochTotals,
    batch_count,
    improves,
    running,
    selection_notes,
    stop_reason,
    train_epoch,
    validate,
)
from attnkit.training._progress import Reporter
from attnkit.training._run_checkpoints import RunCheckpoints
from attnkit.training._run_state import EpochRecord, RunState, cpu_copy, holding
from attnkit.training.averaging import average_weights, push_window
from attnkit.training.distributed import (
    DistributedContext,
    all_reduce_sums,
    any_rank,
    check_replicas_in_sync,
    gather_objects,
)
from attnkit.training.fit_config import FitConfig
from attnkit.training.objective import Batch, Objective
from attnkit.training.schedule import LearningRateSchedule
from attnkit.training.seeding import derive_seed, random_state, seed_everything

__all__ = ["FitSession"]


@dataclass
class FitSession:
    """Everything one sitting of a run trains with; :meth:`train` runs its epochs."""

    objective: Objective
    train_model: nn.Module  # the DDP wrapper under DDP, the model otherwise
    optimizer: torch.optim.Optimizer
    schedule: LearningRateSchedule
    scaler: torch.amp.GradScaler | None
    reporter: Reporter
    run: RunState
    checkpoints: RunCheckpoints | None
    config: FitConfig
    context: DistributedContext
    device: torch.device
    clock: Callable[[], float]
    out_of_time: Callable[[], bool]
    paused: EpochRecord | None = None  # the epoch a time budget paused, with its interim validation
    _last_save: float = field(default_factory=time.monotonic)

    @property
    def model(self) -> nn.Module:
        return self.objective.model

    def train(self, train_batches: Callable[[int], Iterable[Batch]], valid_batches: Callable | None) -> str:
        """Epochs until a stop rule holds (see :func:`~attnkit.training._epoch.stop_reason`); returns its reason."""
        while (reason := stop_reason(self.run, self.config, self.out_of_time())) is None:
            if not self._epoch(self.run.epoch + 1, train_batches, valid_batches):
                return "time_budget"
        return reason

    def _epoch(self, epoch: int, train_batches: Callable, valid_batches: Callable | None) -> bool:
        """Train epoch ``epoch`` (from its saved position when resuming in it) and close it; False when the time
        budget paused it."""
        run, config = self.run, self.config
        start, seconds_before = self._start(epoch)
        epoch_started = time.monotonic() - seconds_before
        steps_before = sum(record.steps for record in run.history)
        seed_everything(derive_seed(config.seed, epoch, self.context.rank))
        batches = train_batches(epoch)
        self.schedule.start_epoch(batch_count(batches))
        if epoch == 1 and start.batches == 0:
            self._warn_about_warmup(batch_count(batches))

        def after_step(totals: EpochTotals) -> None:
            self._maybe_save(epoch, totals, epoch_started, steps_before)

        with running(self.objective, self.train_model):
            totals = train_epoch(
                self.objective, self.train_model, self.optimizer, self.schedule, batches, config=config,
                context=self.context, device=self.device, reporter=self.reporter, epoch=epoch, clock=self.clock,
                out_of_time=self.out_of_time, steps_before=steps_before, scaler=self.scaler, start=start,
                after_step=after_step,
            )  # fmt: skip
        summed = all_reduce_sums({"loss": totals.loss_sum, "batches": float(totals.batches)}, self.context)
        if summed["batches"] == 0:
            raise ValueError(f"train_batches({epoch}) gave no batches")
        step_budget_spent = config.max_steps is not None and steps_before + totals.steps >= config.max_steps
        if totals.partial and not step_budget_spent:
            self._pause(epoch, totals, summed, epoch_started, valid_batches)
            return False
        self._close(epoch, totals, summed, epoch_started, steps_before, valid_batches)
        return True

    def _start(self, epoch: int) -> tuple[EpochStart, float]:
        """Where epoch ``epoch`` starts, and the seconds already spent in it (resuming in its middle)."""
        position = self.run.position
        if position is None or position["epoch"] != epoch:
            return EpochStart(), 0.0
        rank, world = self.context.rank, self.context.world_size
        if len(position["random"]) != world:
            warnings.warn(
                f"the checkpoint stopped in epoch {epoch} with {len(position['random'])} process(es), resumed with "
                f"{world}: epoch {epoch} starts again from its beginning",
                stacklevel=2,
            )
            return EpochStart(), 0.0
        sums = position["loss_sum"]
        start = EpochStart(
            int(position["batches"]), int(position["steps"]), float(sums[rank]), position["random"][rank]
        )
        return start, float(position["seconds"])

    def _position(self, epoch: int, totals: EpochTotals, epoch_started: float) -> dict:
        """Where this sitting is in epoch ``epoch`` (collective: every rank's loss sum and generators)."""
        ranks = gather_objects((totals.loss_sum, random_state()), self.context)
        return {
            "epoch": epoch,
            "batches": totals.batches,
            "steps": totals.steps,
            "loss_sum": [loss for loss, _ in ranks],
            "seconds": time.monotonic() - epoch_started,
            "random": [state for _, state in ranks],
        }

    def _maybe_save(self, epoch: int, totals: EpochTotals, epoch_started: float, steps_before: int) -> None:
        """After a step in the middle of an epoch: ``last/`` at this position when ``save_every`` steps or
        ``save_every_minutes`` say so (the same decision on every rank)."""
        config = self.config
        if self.checkpoints is None or (config.save_every is None and config.save_every_minutes is None):
            return
        due = config.save_every is not None and (steps_before + totals.steps) % config.save_every == 0
        if config.save_every_minutes is not None:
            late = time.monotonic() - self._last_save >= 60 * config.save_every_minutes
            due = any_rank(due or late, self.context)
        if not due:
            return
        self.run.position = self._position(epoch, totals, epoch_started)
        self._save(improved=False)

    def _save(self, *, improved: bool, best_weights: dict | None = None) -> None:
        """``last/`` (and ``best/`` when ``improved``) of the run as it is now."""
        self.run.elapsed = self.clock()
        self.run.grad_scaler = None if self.scaler is None else self.scaler.state_dict()
        if self.checkpoints is not None:
            self.checkpoints.save(
                self.model, self.optimizer, self.run, self.config, improved=improved, best_weights=best_weights
            )
        self._last_save = time.monotonic()

    def _pause(
        self, epoch: int, totals: EpochTotals, summed: dict, epoch_started: float, valid_batches: Callable | None
    ) -> None:
        """The time budget ran out in the middle of epoch ``epoch``: validate the weights of this moment (kept when
        better than the best), and save ``last/`` at this position."""
        run = self.run
        run.position = self._position(epoch, totals, epoch_started)
        averaged = None
        if self.config.average_last > 1:
            averaged = average_weights(push_window(run.recent_weights, cpu_copy(self.model), self.config.average_last))
        metrics, improved = {}, True
        if valid_batches is not None:
            with holding(self.model, averaged):
                metrics = validate(self.objective, valid_batches(), self.config, self.context, self.device)
            improved = improves(metrics, run.best_metrics, self.config)
        if improved:
            if run.epoch_best is None:
                run.epoch_best = dict(run.best_metrics)
            run.best_epoch, run.best_value, run.best_metrics = epoch, metrics.get(self.config.select_metric), metrics
            run.best_weights, run.best_interim = (cpu_copy(self.model) if averaged is None else averaged), True
        self._save(improved=improved, best_weights=averaged)
        train_loss, seconds = summed["loss"] / summed["batches"], time.monotonic() - epoch_started
        self.paused = EpochRecord(epoch, train_loss, metrics, seconds, totals.steps, True)
        self.reporter.epoch_done(epoch, train_loss, metrics, seconds=seconds, best_epoch=run.best_epoch, partial=True)

    def _close(
        self,
        epoch: int,
        totals: EpochTotals,
        summed: dict,
        epoch_started: float,
        steps_before: int,
        valid_batches: Callable | None,
    ) -> None:
        """Validate epoch ``epoch`` (the average of the last ``average_last``), select, count patience, move the
        plateau schedule, and write ``best/`` and ``last/``."""
        run, config = self.run, self.config
        averaged = None
        if config.average_last > 1:  # checkpoint averaging: validate (and keep) the mean of the last epochs' weights
            run.recent_weights = push_window(run.recent_weights, cpu_copy(self.model), config.average_last)
            averaged = average_weights(run.recent_weights)
        if valid_batches is None:  # no validation split: the last epoch's weights (or average) are the ones kept
            metrics, keep, better_epoch = {}, True, True
        else:
            with holding(self.model, averaged):
                metrics = validate(self.objective, valid_batches(), config, self.context, self.device)
            keep = improves(metrics, run.best_metrics, config)
            better_epoch = improves(metrics, run.best_metrics if run.epoch_best is None else run.epoch_best, config)
        if keep:
            run.best_epoch, run.best_value, run.best_metrics = epoch, metrics.get(config.select_metric), metrics
            run.best_weights = cpu_copy(self.model) if averaged is None else averaged
            run.best_interim, run.epoch_best = False, None
        elif better_epoch:
            run.epoch_best = metrics
        warming_up = config.warmup_steps > 0 and steps_before + totals.steps < config.warmup_steps
        run.bad_epochs = 0 if better_epoch else run.bad_epochs + (0 if warming_up else 1)
        self.schedule.after_epoch(self.optimizer, improved=better_epoch)
        train_loss, seconds = summed["loss"] / summed["batches"], time.monotonic() - epoch_started
        run.epoch, run.position = epoch, None
        run.history.append(EpochRecord(epoch, train_loss, metrics, seconds, totals.steps, totals.partial))
        check_replicas_in_sync(self.model, self.context, where=f"end of epoch {epoch}")
        self._save(improved=keep, best_weights=averaged)
        self.reporter.epoch_done(
            epoch, train_loss, metrics, seconds=seconds, best_epoch=run.best_epoch, partial=totals.partial
        )
        if self.context.is_main:
            for note in selection_notes(run.history, config):
                warnings.warn(note, stacklevel=2)

    def _warn_about_warmup(self, batches: int | None) -> None:
        """Warn when the warm-up takes more than half the run's steps (it was sized for more data)."""
        config = self.config
        if not config.warmup_steps or batches is None or not self.context.is_main:
            return
        planned = config.epochs * math.ceil(batches / config.accumulate)
        planned = planned if config.max_steps is None else min(planned, config.max_steps)
        if config.warmup_steps > planned / 2:
            warnings.warn(
                f"warmup_steps={config.warmup_steps} is more than half of the run's {planned} steps "
                f"({math.ceil(batches / config.accumulate)} an epoch): the learning rate is at its peak for little of "
                f"the run; about a tenth of the steps ({max(1, planned // 10)}) suits this data size",
                stacklevel=3,
            )
