"""What every task's training run shares after :func:`~attnkit.training.loop.fit` (layer 5): which DDP replica
this process is, the report a run returns, and the ``metrics.json`` it writes — one schema for every task.

``metrics.json`` (rank 0 only):

| key | value |
|---|---|
| ``task`` | the checkpoint kind (``classifier``, ``seq2seq``, ``vision``, ...) |
| ``data`` | the dataset or file the run trained on |
| ``config`` | the task config (the checkpoint's ``config.json`` without ``kind``) |
| ``seed``, ``batch_size``, ``lr`` | the run's main settings |
| ``device`` | where the model trained (``cpu``, ``cuda:0``, ``mps``; each process's own under torchrun: rank 0's) |
| ``precision`` | ``fp32``, ``bf16`` or ``fp16`` (autocast in training, validation and the test evaluation) |
| ``best_epoch``, ``best_valid`` | the selected epoch and its validation metrics |
| ``test`` | the best weights' test metrics (null without a test split) |
| ``stop_reason``, ``epochs_run`` | why and after how many epochs training ended |
| ``paused_epoch`` | when a time budget stopped in the middle of an epoch: its steps, loss and interim validation |
| ``world_size`` | the processes that trained (torchrun's ``WORLD_SIZE``) |
| ``train_seconds`` | training time of the whole run, resumed parts included |
| ``num_parameters`` | trainable and frozen parameters of the model |
| ``details`` | task-specific facts (split sizes, augmentation, ...) |
| ``units`` | ``"percent"``: every rate (``accuracy``, ``token_accuracy``, ``bleu``, ``wer``, ...) is in percent, as the
  command line prints it and Python's ``evaluate`` returns it; only ``loss`` and ``count`` are not rates. A file
  without it (written before attnkit 0.x's one-unit rule) holds ``accuracy`` as a fraction: :func:`in_percent` |

``metrics.csv`` beside it has one row per epoch (resumed epochs included): ``epoch``, ``train_loss``, ``seconds``,
``steps``, ``partial`` (an epoch cut short by the time budget) and every validation metric as ``valid_NAME``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from torch import nn

from attnkit.runtime.torchrun_env import torchrun_env
from attnkit.training.loop import FitConfig, FitResult

__all__ = ["HISTORY_FILE", "METRICS_FILE", "TrainReport", "count_parameters", "in_percent", "replica", "write_metrics"]

METRICS_FILE = "metrics.json"
HISTORY_FILE = "metrics.csv"


def replica() -> tuple[int, int]:
    """``(rank, world_size)`` from torchrun's environment (``(0, 1)`` outside it)."""
    env = torchrun_env()
    return env.rank, env.world_size


@dataclass
class TrainReport:
    """What a training run produced: the loop's result, the best weights' test metrics (None without a test split),
    ``OUT/best``, the task config the checkpoint stores and task-specific ``details`` for ``metrics.json``."""

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
    """Write ``OUT/metrics.json`` and ``OUT/metrics.csv`` (the module docstring) on rank 0; return the JSON's path."""
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
        "device": report.fit.device,
        "world_size": replica()[1],
        "precision": fit_config.precision,
        "best_epoch": report.fit.best_epoch,
        "best_valid": report.fit.best_metrics,
        "test": report.test_metrics,
        "stop_reason": report.fit.stop_reason,
        "epochs_run": len(report.fit.history),
        "train_seconds": round(report.train_seconds, 1),
        "num_parameters": report.num_parameters,
        "details": report.details,
        "units": "percent",
    }
    if report.fit.paused_epoch is not None:  # the time budget stopped in this epoch; --resume does the rest
        summary = {**summary, "paused_epoch": asdict(report.fit.paused_epoch)}
    path.write_text(json.dumps(summary, indent=2) + "\n")
    write_history(Path(out_dir) / HISTORY_FILE, report.fit)
    if fit_config.tensorboard_dir is not None:
        log_run_to_tensorboard(fit_config.tensorboard_dir, summary)
    return path


def log_run_to_tensorboard(directory: str | Path, summary: Mapping[str, Any]) -> None:
    """Add the run's end to its TensorBoard log: the test metrics (``test/NAME``, at the best epoch) and the
    hyperparameters with the best validation and test metrics (TensorBoard's HParams tab)."""
    from torch.utils.tensorboard import SummaryWriter  # needs the tensorboard package (extra: tensorboard)

    step = summary["best_epoch"] or 0
    test = {name: value for name, value in (summary["test"] or {}).items() if name != "count"}
    valid = {name: value for name, value in (summary["best_valid"] or {}).items() if name != "count"}
    settings = {name: summary[name] for name in ("seed", "batch_size", "lr", "precision")}
    for name, value in (summary["config"] or {}).items():
        if isinstance(value, (bool, int, float, str)):
            settings[name] = value
    writer = SummaryWriter(log_dir=str(directory))
    try:
        for name, value in test.items():
            writer.add_scalar(f"test/{name}", value, global_step=step)
        metrics = {f"hparam/valid_{k}": v for k, v in valid.items()} | {f"hparam/test_{k}": v for k, v in test.items()}
        writer.add_hparams(settings, metrics, run_name="hparams")
    finally:
        writer.close()


def in_percent(metrics: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A ``metrics.json`` as read, with ``accuracy`` in percent: files without ``"units": "percent"`` (written
    before every rate was a percentage) hold it as a fraction, and are converted; other files come back as they are.
    """
    if metrics is None or metrics.get("units") == "percent":
        return None if metrics is None else dict(metrics)
    converted = dict(metrics)
    for split in ("best_valid", "test"):
        if isinstance(converted.get(split), dict) and "accuracy" in converted[split]:
            converted[split] = {**converted[split], "accuracy": 100.0 * converted[split]["accuracy"]}
    converted["units"] = "percent"
    return converted


def write_history(path: Path, result: FitResult) -> None:
    """One CSV row per epoch of ``result.history`` (columns in the module docstring), and a last one (``partial``
    1) for the epoch a time budget paused, if it did."""
    records = [*result.history, *([] if result.paused_epoch is None else [result.paused_epoch])]
    names = sorted({name for record in records for name in record.metrics})
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["epoch", "train_loss", "seconds", "steps", "partial", *(f"valid_{n}" for n in names)])
        for record in records:
            values = [record.metrics.get(name, "") for name in names]
            writer.writerow(
                [record.epoch, f"{record.train_loss:.6g}", f"{record.seconds:.1f}", record.steps, int(record.partial)]
                + [f"{value:.6g}" if isinstance(value, float) else value for value in values]
            )
