"""The ``last/`` and ``best/`` checkpoints of a run: what :func:`attnkit.training.loop.fit` writes at an epoch's end,
at a step in the middle of an epoch, and when it stops (layer 5). The state they persist is described in
:mod:`attnkit.training._run_state`, which reads it back.

``best/`` is written before ``last/``; ``last/`` carries the best weights itself whenever they are not its own, and
is replaced atomically (:func:`~attnkit.checkpointing.save_checkpoint`), so a run killed at any instant
(``kill -9`` included) resumes from the previous ``last/`` or the new one, never from half of one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
from torch import nn

from attnkit.checkpointing import CheckpointError, read_metadata, save_checkpoint
from attnkit.training._run_state import BEST, LAST, STATE_VERSION, RunState, holding
from attnkit.training.distributed import DistributedContext, any_rank
from attnkit.training.fit_config import FitConfig

__all__ = ["RunCheckpoints", "trainer_state"]


def trainer_state(run: RunState, optimizer: torch.optim.Optimizer, config: FitConfig, world_size: int) -> dict:
    """What ``last/`` holds besides the weights (the new fields are optional for the reader: see ``_run_state``)."""
    # The best weights equal the checkpoint's own when the best epoch is this one, validated at its end, and no
    # averaging is on: not stored twice. Nor is the last of the averaged window at an epoch's end, which is the
    # checkpoint's own weights; in the middle of an epoch the whole window is stored.
    at_end = run.position is None
    own_best = run.best_epoch == run.epoch and config.average_last == 1 and at_end and not run.best_interim
    state = {
        "version": STATE_VERSION,
        "epoch": run.epoch,
        "best_epoch": run.best_epoch,
        "best_value": run.best_value,
        "best_metrics": run.best_metrics,
        "bad_epochs": run.bad_epochs,
        "elapsed_seconds": run.elapsed,
        "history": [asdict(record) for record in run.history],
        "fit_config": {item.name: getattr(config, item.name) for item in fields(config)},
        "world_size": world_size,
        "optimizer": optimizer.state_dict(),
        "schedule": asdict(run.schedule),
        "best_weights": None if own_best else run.best_weights,
        "recent_weights": run.recent_weights[:-1] if at_end else run.recent_weights,
        "grad_scaler": run.grad_scaler,
        "units": "percent",  # every rate in percent (accuracy was a fraction before; see _accuracy_in_percent)
    }
    if run.position is not None:
        state["position"] = run.position
    if run.best_interim:
        state["best_interim"] = True
    if run.epoch_best is not None:
        state["epoch_best"] = run.epoch_best
    return state


@dataclass
class RunCheckpoints:
    """Writes ``last/`` and ``best/`` under one directory: rank 0 writes, every rank waits, a failure stops all."""

    directory: Path
    model_config: dict | None
    extra_files: dict[str, str | Path] | None
    context: DistributedContext

    def save(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        run: RunState,
        config: FitConfig,
        *,
        improved: bool,
        best_weights: Mapping[str, torch.Tensor] | None = None,
    ) -> None:
        """``best/`` first (when the best changed: ``best_weights``, or the model's own when None), then ``last/``
        with the model's own weights and the trainer state: at an epoch's end, or at ``run.position`` in one."""
        metrics = run.history[-1].metrics if run.history else {}
        metadata = {"epoch": run.epoch, "metrics": metrics, "best_epoch": run.best_epoch}
        if run.position is not None:
            metadata["position"] = {"epoch": run.position["epoch"], "batches": run.position["batches"]}
        best = {"epoch": run.best_epoch, "metrics": run.best_metrics, "best_epoch": run.best_epoch}

        def write() -> None:
            if improved:
                with holding(model, best_weights):
                    self._save(BEST, model, best if run.position is not None else metadata)
            self._save(LAST, model, metadata, trainer_state(run, optimizer, config, self.context.world_size))

        self._on_main(write)

    def refresh_best(self, model: nn.Module, run: RunState) -> None:
        """Rewrite ``best/`` from ``model`` if it does not hold the best epoch (lost, or from a crashed epoch)."""

        def write() -> None:
            try:
                current = read_metadata(self.directory / BEST).get("metadata", {}).get("epoch")
            except CheckpointError:
                current = None
            if current != run.best_epoch:
                self._save(
                    BEST, model, {"epoch": run.best_epoch, "metrics": run.best_metrics, "best_epoch": run.best_epoch}
                )

        self._on_main(write)

    def _save(self, kind: str, model: nn.Module, metadata: dict, trainer_state: dict | None = None) -> None:
        save_checkpoint(
            self.directory / kind,
            model,
            model_config=self.model_config,
            extra_files=self.extra_files,
            trainer_state=trainer_state,
            metadata={"kind": kind, **metadata},
        )

    def _on_main(self, action: Callable[[], None]) -> None:
        failure: Exception | None = None
        if self.context.is_main:
            try:
                action()
            except Exception as error:
                failure = error
        if any_rank(failure is not None, self.context):  # also the barrier: nobody moves on before the files exist
            if failure is not None:
                raise failure
            raise RuntimeError("rank 0 failed to write a checkpoint; see its error")
