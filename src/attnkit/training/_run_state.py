"""The loop's state between steps: its counters, and how a run starts from a ``last/`` checkpoint (written by
:mod:`attnkit.training._run_checkpoints`).

A ``last/`` checkpoint holds, besides the weights, everything :func:`attnkit.training.loop.fit` needs to go on as if
never interrupted: AdamW's state, the :class:`RunState` counters, the fp16 scaler's state and the settings that must
not change. One written in the middle of an epoch adds its ``position`` (batches and steps done, their summed loss,
the seconds spent and every rank's random generators); one without resumes at the next epoch.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from attnkit.checkpointing import (
    CheckpointError,
    load_model_weights,
    read_config,
    read_trainer_state,
    recover_checkpoint,
)
from attnkit.training._progress import Reporter
from attnkit.training.distributed import DistributedContext, barrier
from attnkit.training.fit_config import FitConfig
from attnkit.training.schedule import ScheduleState

__all__ = ["BEST", "LAST", "STATE_VERSION", "EpochRecord", "RunState", "cpu_copy", "holding", "start_run"]

LAST, BEST = "last", "best"
# Settings added after checkpoints were first written: their value in a checkpoint that predates them.
_SETTING_DEFAULTS = {
    "lr_decay": 1.0,
    "warmup_steps": 0,
    "schedule": "plateau",
    "min_lr": 0.0,
    "accumulate": 1,
    "average_last": 1,
    "precision": "fp32",
    "max_steps": None,
}
STATE_VERSION = 1
# Settings that change the numbers: a run may only be resumed with the values it was started with.
_RESULT_SETTINGS = (
    "seed",
    "lr",
    "schedule",
    "lr_decay",
    "min_lr",
    "warmup_steps",
    "weight_decay",
    "grad_clip",
    "accumulate",
    "average_last",
    "precision",
    "select_metric",
    "select_mode",
)


@dataclass
class EpochRecord:
    """What one epoch did: its mean training loss (over batches), its validation metrics (of the averaged weights
    when ``FitConfig.average_last > 1``), its time and its optimiser steps (batches / ``accumulate``, rounded up).

    ``partial`` marks an epoch cut short by the time budget.
    """

    epoch: int
    train_loss: float
    metrics: dict[str, float]
    seconds: float
    steps: int
    partial: bool = False


@dataclass
class RunState:
    """The loop's counters: everything, besides weights and optimiser, that a resumed run must get back."""

    epoch: int = 0
    best_epoch: int | None = None
    best_value: float | None = None
    best_metrics: dict[str, float] = field(default_factory=dict)
    bad_epochs: int = 0
    history: list[EpochRecord] = field(default_factory=list)
    elapsed: float = 0.0
    best_weights: dict[str, torch.Tensor] | None = None
    schedule: ScheduleState = field(default_factory=ScheduleState)
    # average_last > 1: the weights at the end of the last (up to) average_last epochs, this epoch's last.
    recent_weights: list[dict[str, torch.Tensor]] = field(default_factory=list)
    # precision="fp16": the GradScaler's state_dict (its scale and growth tracker), None otherwise.
    grad_scaler: dict | None = None
    # In the middle of epoch `epoch + 1`: {"epoch", "batches", "steps", "loss_sum", "seconds", "random": [per rank]}.
    position: dict | None = None
    # The best weights were validated in the middle of an epoch (a time budget's stop), not at its end.
    best_interim: bool = False
    # The metrics of the best *completed* epoch, which patience and the plateau schedule compare with, when the
    # best weights are interim ones (None: the best is an epoch's; {}: no epoch completed yet).
    epoch_best: dict[str, float] | None = None

    @property
    def steps(self) -> int:
        """Optimiser steps done in the run: its completed epochs' and the current epoch's so far."""
        done = sum(record.steps for record in self.history)
        return done + (0 if self.position is None else int(self.position["steps"]))


def start_run(
    directory: Path,
    resume: bool,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    config: FitConfig,
    model_config: dict | None,
    context: DistributedContext,
    reporter: Reporter,
) -> tuple[RunState, int | None]:
    """Resume from ``directory/last`` when asked and it exists; otherwise a fresh run (warning before overwriting)."""
    last = directory / LAST
    if context.is_main:
        recover_checkpoint(last)
    barrier(context)  # rank 0 has finished repairing before anyone looks
    if resume and last.exists():
        run = _restore(last, model, optimizer, config, model_config, context)
        where = f"after epoch {run.epoch}"
        if run.position is not None:
            where = f"in epoch {run.epoch + 1}, after its batch {run.position['batches']} (step {run.steps} of the run)"
        reporter.message(f"resuming from {last} {where}")
        if config.max_minutes is not None:
            spent, budget = run.elapsed / 60, config.max_minutes
            reporter.message(
                f"--max-minutes {budget:g} is cumulative over the run: {spent:.1f} spent before, "
                f"{max(budget - spent, 0.0):.1f} left"
            )
        return run, run.epoch
    if resume and (directory / BEST).exists():
        raise CheckpointError(
            f"{last}: does not exist, so there is nothing to resume; refusing to start afresh over the finished run "
            f"in {directory} (its {BEST}/ would be replaced)"
        )
    if resume:
        reporter.message(f"no checkpoint at {last}: starting afresh")
    elif last.exists() and context.is_main:
        warnings.warn(f"{last} exists and resume=False: starting afresh and overwriting it", stacklevel=3)
    return RunState(), None


def _restore(
    path: Path,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    config: FitConfig,
    model_config: dict | None,
    context: DistributedContext,
) -> RunState:
    """Load weights, optimiser state and counters from a ``last/`` checkpoint."""
    state = read_trainer_state(path)
    if state.get("version") != STATE_VERSION:
        raise CheckpointError(f"{path}: trainer state version {state.get('version')!r}, expected {STATE_VERSION}")
    state = _accuracy_in_percent(state, config.select_metric)
    _check_same_run(path, state, config, model_config, context)
    load_model_weights(model, path)
    try:
        optimizer.load_state_dict(state["optimizer"])
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"{path}: the optimiser state does not fit this model: {error}") from error
    try:
        run = RunState(
            epoch=int(state["epoch"]),
            best_epoch=state["best_epoch"],
            best_value=state["best_value"],
            best_metrics=dict(state["best_metrics"]),
            bad_epochs=int(state["bad_epochs"]),
            history=[EpochRecord(**record) for record in state["history"]],
            elapsed=float(state["elapsed_seconds"]),
            schedule=ScheduleState(**state.get("schedule", {})),
            grad_scaler=state.get("grad_scaler"),
            position=_position(state.get("position"), int(state["epoch"])),
            best_interim=bool(state.get("best_interim", False)),
            epoch_best=state.get("epoch_best"),
        )
        saved_best = state["best_weights"]
        saved_recent = list(state.get("recent_weights", []))
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"{path}: malformed trainer state ({type(error).__name__}: {error})") from error
    run.best_weights = _restored_best_weights(path, saved_best, model, run)
    if config.average_last > 1 and run.epoch > 0:  # at an epoch's end, the checkpoint's own weights close the window
        run.recent_weights = [_fitting(path, weights, model, "averaged") for weights in saved_recent]
        if run.position is None:
            run.recent_weights.append(cpu_copy(model))
    return run


def _position(saved: object, epoch: int) -> dict | None:
    """A trainer state's position in the middle of epoch ``epoch + 1`` (None: at the end of ``epoch``)."""
    if saved is None:
        return None
    keys = {"epoch", "batches", "steps", "loss_sum", "seconds", "random"}
    if not isinstance(saved, dict) or not keys <= set(saved) or saved["epoch"] != epoch + 1:
        raise ValueError(f"a position in epoch {epoch + 1} with {sorted(keys)}, got {saved!r}")
    return saved


def _accuracy_in_percent(state: dict, select_metric: str) -> dict:
    """A trainer state written before every rate was a percentage (no ``"units"``) with its ``accuracy`` values
    (history, best metrics, and the best value when accuracy selects) converted from fractions to percent, so
    that a resumed run compares like with like."""
    if state.get("units") == "percent":
        return state

    def convert(metrics: dict) -> dict:
        return {**metrics, "accuracy": 100.0 * metrics["accuracy"]} if "accuracy" in metrics else metrics

    state = dict(state)
    state["history"] = [{**r, "metrics": convert(dict(r.get("metrics", {})))} for r in state.get("history", [])]
    state["best_metrics"] = convert(dict(state.get("best_metrics", {})))
    if select_metric == "accuracy" and isinstance(state.get("best_value"), (int, float)):
        state["best_value"] = 100.0 * state["best_value"]
    return state


def _check_same_run(
    path: Path, state: dict, config: FitConfig, model_config: dict | None, context: DistributedContext
) -> None:
    """Refuse to resume with settings that change the numbers; warn when the number of processes changed."""
    saved = state.get("fit_config")
    if not isinstance(saved, dict):
        raise CheckpointError(f"{path}: malformed trainer state (no fit_config)")
    differences = [
        f"{name}={saved.get(name, _SETTING_DEFAULTS.get(name))!r} then, {getattr(config, name)!r} now"
        for name in _result_settings(config)
        if saved.get(name, _SETTING_DEFAULTS.get(name)) != getattr(config, name)
    ]
    if differences:
        raise ValueError(
            f"cannot resume {path} with different settings ({'; '.join(differences)}): "
            "resume with the settings the run started with, or start a new run"
        )
    if model_config is not None:
        now, then = json.loads(json.dumps(model_config)), read_config(path)
        changed = [
            f"{key}: {_shown(then.get(key))} then, {_shown(now.get(key))} now"
            for key in sorted(set(now) | set(then))
            if now.get(key) != then.get(key)
        ]
        if changed:
            raise ValueError(
                f"cannot resume {path}: the model differs from the one saved in its config.json ({'; '.join(changed)})"
            )
    if state.get("world_size") != context.world_size:
        warnings.warn(
            f"resuming {path}, trained on {state.get('world_size')} process(es), on {context.world_size}: "
            "the remaining epochs will not repeat the original run exactly",
            stacklevel=5,
        )


def _shown(value: object) -> str:
    """A config value in a message: JSON, cut to 60 characters; ``none`` when the key is absent."""
    text = "none" if value is None else value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= 60 else text[:60] + "..."


def _result_settings(config: FitConfig) -> tuple[str, ...]:
    """The settings a resumed run must keep: those that change the numbers, and the cosine schedule's horizon."""
    if config.schedule != "cosine":
        return _RESULT_SETTINGS
    if config.max_steps is not None:
        return (*_RESULT_SETTINGS, "max_steps")
    return (*_RESULT_SETTINGS, "max_minutes", *(("epochs",) if config.max_minutes is None else ()))


def _restored_best_weights(
    path: Path, saved: dict[str, torch.Tensor] | None, model: nn.Module, run: RunState
) -> dict[str, torch.Tensor] | None:
    """The best epoch's weights: those saved apart, or the checkpoint's own when the best epoch is its epoch."""
    if run.best_epoch is None:
        return None
    if saved is None:
        if run.best_epoch != run.epoch or run.position is not None or run.best_interim:
            raise CheckpointError(f"{path}: best epoch {run.best_epoch} but no best weights saved")
        return cpu_copy(model)
    return _fitting(path, saved, model, "best")


def _fitting(path: Path, saved: object, model: nn.Module, what: str) -> dict[str, torch.Tensor]:
    """``saved`` if it is a state dict with the model's names and shapes; else a CheckpointError."""
    expected = {name: tuple(value.shape) for name, value in model.state_dict().items()}
    if not isinstance(saved, Mapping) or not all(isinstance(value, torch.Tensor) for value in saved.values()):
        raise CheckpointError(f"{path}: malformed saved {what} weights")
    found = {name: tuple(value.shape) for name, value in saved.items()}
    if found != expected:
        raise CheckpointError(f"{path}: the saved {what} weights do not fit {type(model).__name__}")
    return dict(saved)


def cpu_copy(model: nn.Module) -> dict[str, torch.Tensor]:
    """A copy of the model's state dict on the CPU."""
    return {name: value.detach().to("cpu", copy=True) for name, value in model.state_dict().items()}


@contextmanager
def holding(model: nn.Module, weights: Mapping[str, torch.Tensor] | None) -> Iterator[None]:
    """Load ``weights`` into ``model`` for the duration, then put its own weights back exactly (None: no change)."""
    if weights is None:
        yield
        return
    own = cpu_copy(model)
    model.load_state_dict(weights)
    try:
        yield
    finally:
        model.load_state_dict(own)
