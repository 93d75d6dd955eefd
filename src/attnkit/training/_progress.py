"""Progress output of the training loop: a tqdm bar per epoch on a terminal; otherwise (nohup, Slurm, CI) a
progress line every ``FitConfig.progress_seconds``; one line per epoch in both cases; and (with a TensorBoard
directory) the same figures as TensorBoard scalars. Everything goes to stderr, from rank 0 only; nothing is printed
with ``progress=False`` (TensorBoard still gets its scalars).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
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


def _clock_text(seconds: float) -> str:
    """``3725`` -> ``"1:02:05"``, ``65`` -> ``"1:05"``."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@dataclass
class ProgressLines:
    """The progress lines of one epoch off a terminal: one at most every ``every`` seconds, saying where the epoch
    is (``done`` batches of ``total`` when known), rows per second and the mean loss since the last line, the run's
    elapsed time (``clock``, cumulative over resumed parts) and the epoch's ETA at this sitting's pace."""

    epoch: str  # "2/10"
    total: int | None
    done: int
    every: float
    clock: Callable[[], float]
    started: float = field(default_factory=time.monotonic)
    _last: float = field(default_factory=time.monotonic)
    _batches: int = 0
    _rows: int = 0
    _loss: float = 0.0
    _window: int = 0

    def step(self, loss: float, rows: int | None) -> None:
        """One batch done, with training loss ``loss`` over ``rows`` rows (None: unknown)."""
        self.done += 1
        self._batches += 1
        self._rows += rows or 0
        self._loss += loss
        self._window += 1
        now = time.monotonic()
        if now - self._last < self.every:
            return
        seconds = max(now - self.started, 1e-9)
        pace = f"{self._rows / seconds:,.1f} rows/s" if self._rows else f"{self._batches / seconds:.2f} batches/s"
        where = f"batch {self.done:,}" + ("" if self.total is None else f"/{self.total:,}")
        eta = ""
        if self.total is not None:
            eta = f"  ETA {_clock_text((self.total - self.done) * seconds / self._batches)} (epoch)"
        loss_text = f"loss {self._loss / self._window:.4f}"
        line = f"epoch {self.epoch}  {where}  {pace}  {loss_text}  elapsed {_clock_text(self.clock())}{eta}"
        tqdm.write(line, file=sys.stderr)
        self._last, self._loss, self._window = now, 0.0, 0


class EpochBar:
    """The bar of one epoch (a no-op when disabled); shows the mean loss of the last ``refresh_every`` steps. Off a
    terminal it prints :class:`ProgressLines` instead, when given them."""

    def __init__(self, bar: tqdm | None, refresh_every: int, lines: ProgressLines | None = None):
        self._bar = bar
        self._lines = lines
        self._refresh_every = refresh_every
        self._window_loss = 0.0
        self._window_steps = 0

    def step(self, loss: float, rows: int | None = None) -> None:
        """Advance by one batch that had training loss ``loss`` (over ``rows`` rows, when known)."""
        if self._lines is not None:
            self._lines.step(loss, rows)
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

    def __init__(
        self,
        *,
        enabled: bool,
        epochs: int,
        refresh_every: int,
        tensorboard_dir: str | None = None,
        line_seconds: float = 30.0,
        clock: Callable[[], float] | None = None,
    ):
        self.enabled = enabled
        self.bars = enabled and sys.stderr.isatty()
        self._epochs = epochs
        self._refresh_every = refresh_every
        self._tensorboard_dir = tensorboard_dir
        self._line_seconds = line_seconds
        self._clock = clock or time.monotonic
        self._writer = None

    def epoch_bar(self, epoch: int, total: int | None, *, done: int = 0) -> EpochBar:
        """A bar for the batches of ``epoch`` (``total`` when the batches have a length; ``done`` of them before a
        resumed run started), or, off a terminal, its progress lines."""
        if not self.bars:
            lines = None
            if self.enabled:
                lines = ProgressLines(f"{epoch}/{self._epochs}", total, done, self._line_seconds, self._clock)
            return EpochBar(None, self._refresh_every, lines)
        bar = tqdm(
            total=total, initial=done, desc=f"epoch {epoch}/{self._epochs}", unit="batch", leave=False, file=sys.stderr
        )
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

    def finish(
        self,
        reason: str,
        epoch: int,
        best_epoch: int | None,
        best_metrics: Mapping[str, float],
        *,
        paused: tuple[int, int] | None = None,
    ) -> None:
        """The run's one stop line (``paused``: ``(epoch, batches)`` when it stopped in the middle of an epoch),
        and the TensorBoard files flushed and closed."""
        if not best_epoch:
            best = "no epoch validated"
        elif best_metrics:
            best = f"best epoch {best_epoch}: valid {format_metrics(best_metrics)}"
        else:
            best = f"kept epoch {best_epoch}'s weights (no validation)"
        where = f"after epoch {epoch}"
        if paused is not None:
            where = f"in epoch {paused[0]} after its batch {paused[1]:,} (--resume goes on from the next)"
        self.message(f"stopped {where} ({STOP_REASONS.get(reason, reason)}); {best}")
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
