"""Progress output of the training loop: a tqdm bar per epoch on a terminal, one line per epoch otherwise.

Everything goes to stderr, so that a command's stdout carries only its results. Only rank 0 reports, and nothing
is printed with ``progress=False``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from types import TracebackType

from tqdm import tqdm

__all__ = ["EpochBar", "Reporter"]


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

    def __init__(self, *, enabled: bool, epochs: int, refresh_every: int):
        self.enabled = enabled
        self.bars = enabled and sys.stderr.isatty()
        self._epochs = epochs
        self._refresh_every = refresh_every

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
        """One line: the epoch's training loss, its validation metrics, the best epoch so far and the time."""
        if not self.enabled:
            return
        shown = "  ".join(f"{name} {value:.4f}" for name, value in metrics.items())
        note = " (stopped early: time budget)" if partial else ""
        best = f"  best epoch {best_epoch}" if best_epoch is not None else ""
        line = f"epoch {epoch}/{self._epochs}{note}  train loss {train_loss:.4f}  valid {shown}{best}  {seconds:.1f}s"
        tqdm.write(line, file=sys.stderr)

    def message(self, text: str) -> None:
        """A free-form line (resuming, stopping)."""
        if self.enabled:
            tqdm.write(text, file=sys.stderr)
