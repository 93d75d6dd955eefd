"""Progress output of the training loop: a tqdm bar per epoch on a terminal, one line per epoch otherwise, and
(with a TensorBoard directory) the same figures as TensorBoard scalars.

Everything printed goes to stderr, so that a command's stdout carries only its results. Only rank 0 reports,
and nothing is printed with ``progress=False`` (TensorBoard still gets its scalars). Metrics are shown as people
read them: accuracies in percent, losses to four places, rates such as WER or BLEU to two; counts are not shown.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from types import TracebackType

from tqdm import tqdm

__all__ = ["STOP_REASONS", "EpochBar", "Reporter", "format_metrics"]

# FitResult.stop_reason -> the words a person reads
STOP_REASONS = {
    "epochs": "the last epoch",
    "early_stopping": "early stopping",
    "time_budget": "the time budget",
    "max_steps": "the step budget",
}


def format_metrics(metrics: Mapping[str, float]) -> str:
    """``{"accuracy": 81.25, "loss": 0.41, "count": 400}`` -> ``"accuracy 81.25%  loss 0.4100"`` (accuracy is in
    percent, as every attnkit rate)."""
    shown = []
    for name, value in metrics.items():
        if name == "count":
            continue
        if name == "accuracy":
            shown.append(f"accuracy {value:.2f}%")
        elif name.endswith("loss"):
            shown.append(f"{name} {value:.4f}")
        else:
            shown.append(f"{name.replace('_', ' ')} {value:.2f}")
    return "  ".join(shown)


class EpochBar:
    """The bar of one epoch (a no-op when disabled); shows the mean loss of the last ``refresh_every`` steps."""

    def __init__(self, bar: tqdm | None, refresh_every: int):
        self._bar = bar
        self._refresh_every = refresh_every
        self._window_loss = 0.0
        self._window_steps = 0

    def step(self, loss: float) -> None:
        """Advance by one optimiser step that had training loss ``loss``."""
        if self._bar is None:
            return
        self._window_loss += loss
        self._window_steps += 1
        if self._window_steps == self._refresh_every:
            self._bar.set_postfix(loss=f"{self._window_loss / self._window_steps:.4f}", refresh=False)
            self._window_loss, self._window_steps = 0.0, 0
        self._bar.update(1)

    def __enter__(self) -> EpochBar:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None):
        if self._bar is not None:
            self._bar.close()


class Reporter:
    """Decides what to show: a bar when stderr is a terminal, an epoch line whenever reporting is on."""

    def __init__(self, *, enabled: bool, epochs: int, refresh_every: int, tensorboard_dir: str | None = None):
        self.enabled = enabled
        self.bars = enabled and sys.stderr.isatty()
        self._epochs = epochs
        self._refresh_every = refresh_every
        self._tensorboard_dir = tensorboard_dir
        self._writer = None

    def epoch_bar(self, epoch: int, total: int | None) -> EpochBar:
        """A bar for the training steps of ``epoch`` (``total`` steps when the batches have a length)."""
        if not self.bars:
            return EpochBar(None, self._refresh_every)
        bar = tqdm(total=total, desc=f"epoch {epoch}/{self._epochs}", unit="batch", leave=False, file=sys.stderr)
        return EpochBar(bar, self._refresh_every)

    def epoch_done(
        self,
        epoch: int,
        train_loss: float,
        metrics: Mapping[str, float],
        *,
        seconds: float,
        best_epoch: int | None,
        partial: bool,
    ) -> None:
        """One line: the epoch's training loss, its validation metrics, the best epoch so far and the time; and the
        same figures as TensorBoard scalars (``train/loss``, ``valid/NAME``, ``time/epoch_seconds``) by epoch; the
        per-step ``train/step_loss`` and ``train/lr`` are by step (:meth:`step`)."""
        self._scalars(epoch, {"train/loss": train_loss, "time/epoch_seconds": seconds})
        self._scalars(epoch, {f"valid/{name}": value for name, value in metrics.items() if name != "count"})
        if not self.enabled:
            return
        note = " (partial)" if partial else ""
        best = f"  best epoch {best_epoch}" if best_epoch is not None else ""
        valid = f"valid {format_metrics(metrics)}" if metrics else "no validation"
        line = f"epoch {epoch}/{self._epochs}{note}  train loss {train_loss:.4f}  {valid}{best}  {seconds:.1f}s"
        tqdm.write(line, file=sys.stderr)

    def step(self, step: int, loss: float, lr: float) -> None:
        """After optimiser step ``step`` (counted over the run): its loss (the step's last batch) and learning rate
        as TensorBoard scalars ``train/step_loss`` and ``train/lr``."""
        if self._tensorboard_dir is not None:
            self._scalars(step, {"train/step_loss": loss, "train/lr": lr})

    def message(self, text: str) -> None:
        """A free-form line (resuming)."""
        if self.enabled:
            tqdm.write(text, file=sys.stderr)

    def finish(self, reason: str, epoch: int, best_epoch: int | None, best_metrics: Mapping[str, float]) -> None:
        """The run's one stop line, and the TensorBoard files flushed and closed."""
        if not best_epoch:
            best = "no epoch validated"
        elif best_metrics:
            best = f"best epoch {best_epoch}: valid {format_metrics(best_metrics)}"
        else:
            best = f"kept epoch {best_epoch}'s weights (no validation)"
        self.message(f"stopped after epoch {epoch} ({STOP_REASONS.get(reason, reason)}); {best}")
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _scalars(self, epoch: int, values: Mapping[str, float]) -> None:
        if self._tensorboard_dir is None:
            return
        if self._writer is None:
            from torch.utils.tensorboard import SummaryWriter  # needs the tensorboard package (extra: tensorboard)

            self._writer = SummaryWriter(log_dir=self._tensorboard_dir)
        for tag, value in values.items():
            self._writer.add_scalar(tag, value, global_step=epoch)
