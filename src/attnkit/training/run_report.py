"""What every task's training run shares after :func:`~attnkit.training.loop.fit` (layer 5): which DDP replica
this process is, the report a run returns, and the ``metrics.json`` it writes — one schema for every task.

``metrics.json`` (rank 0 only):

| key | value |
|---|---|
| ``task`` | the checkpoint kind (``classifier``, ``seq2seq``, ``vision``, ...) |
| ``data`` | the dataset or file the run trained on |
| ``config`` | the task config (the checkpoint's ``config.json`` without ``kind``) |
| ``seed``, ``batch_size``, ``lr`` | the run's main settings |
| ``best_epoch``, ``best_valid`` | the selected epoch and its validation metrics |
| ``test`` | the best weights' test metrics (null without a test split) |
| ``stop_reason``, ``epochs_run`` | why and after how many epochs training ended |
| ``train_seconds`` | training time of the whole run, resumed parts included |
| ``num_parameters`` | trainable and frozen parameters of the model |
| ``details`` | task-specific facts (split sizes, augmentation, ...) |
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch import nn

from attnkit.training.loop import FitConfig, FitResult

__all__ = ["METRICS_FILE", "TrainReport", "count_parameters", "replica", "write_metrics"]

METRICS_FILE = "metrics.json"


def replica() -> tuple[int, int]:
    """``(rank, world_size)`` from torchrun's environment (``(0, 1)`` outside it)."""
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


@dataclass
class TrainReport:
    """What a training run produced.

    Attributes:
        fit: the loop's result (history, best epoch and metrics, stop reason, wall time).
        test_metrics: the best weights' metrics on the test split, or None without one.
        checkpoint: ``OUT/best``.
        num_parameters: of the model.
        config: the task config the checkpoint stores.
        details: task-specific facts for ``metrics.json``.
    """

    fit: FitResult
    test_metrics: dict[str, float] | None
    checkpoint: Path
    num_parameters: int
    config: Any
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def train_seconds(self) -> float:
        """Training time of the whole run, resumed parts included (fit's clock)."""
        return self.fit.wall_time


def count_parameters(model: nn.Module) -> int:
    """Every parameter of ``model``, trainable or not."""
    return sum(parameter.numel() for parameter in model.parameters())


def write_metrics(
    out_dir: str | Path, report: TrainReport, *, task: str, data: str, fit_config: FitConfig, batch_size: int
) -> Path:
    """Write ``OUT/metrics.json`` (the schema in the module docstring) on rank 0; return its path."""
    path = Path(out_dir) / METRICS_FILE
    if replica()[0] != 0:
        return path
    config = report.config.to_dict() if hasattr(report.config, "to_dict") else report.config
    summary: Mapping[str, Any] = {
        "task": task,
        "data": data,
        "config": config,
        "seed": fit_config.seed,
        "batch_size": batch_size,
        "lr": fit_config.lr,
        "best_epoch": report.fit.best_epoch,
        "best_valid": report.fit.best_metrics,
        "test": report.test_metrics,
        "stop_reason": report.fit.stop_reason,
        "epochs_run": len(report.fit.history),
        "train_seconds": round(report.train_seconds, 1),
        "num_parameters": report.num_parameters,
        "details": report.details,
    }
    path.write_text(json.dumps(summary, indent=2) + "\n")
    return path
