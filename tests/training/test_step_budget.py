"""``FitConfig.max_steps`` (``--max-steps``): a budget of optimiser steps that stops a run at the same step on any
machine, validates the partial epoch, survives a crash and a resume, and is the cosine schedule's horizon."""

from __future__ import annotations

import math
from collections.abc import Iterable

import pytest
import torch
from torch import nn

from attnkit.training.loop import FitConfig, fit

Batch = dict[str, torch.Tensor]


class Crash(Exception):
    """Raised by a batch function to interrupt a run, as a killed process would."""


class LineObjective:
    """``Linear(2, 1)`` fitted to 1; validation reports the training loss of the last batch seen."""

    def __init__(self) -> None:
        torch.manual_seed(0)
        self.model = nn.Linear(2, 1)
        self.last = 1.0

    def loss(self, batch: Batch) -> torch.Tensor:
        loss = (self.model(batch["x"]) - 1).pow(2).mean()
        self.last = loss.item()
        return loss

    def evaluate(self, batches: Iterable[Batch]) -> dict[str, float]:
        return {"loss": self.last}


def batches_of(steps: int, *, crash_at: int | None = None):
    def train_batches(epoch: int) -> list[Batch]:
        if epoch == crash_at:
            raise Crash(f"epoch {epoch}")
        return [{"x": torch.full((4, 2), 0.1 * (epoch + step))} for step in range(steps)]

    return train_batches


@pytest.fixture
def rates(monkeypatch) -> list[float]:
    """The learning rate of every optimiser step taken during the test."""
    seen: list[float] = []
    step = torch.optim.AdamW.step

    def recording_step(self, *args, **kwargs):
        seen.append(self.param_groups[0]["lr"])
        return step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.AdamW, "step", recording_step)
    return seen


def config(**options) -> FitConfig:
    defaults = {"patience": None, "select_metric": "loss", "select_mode": "min", "progress": False, "lr": 0.1}
    return FitConfig(**{**defaults, **options})


def test_the_step_budget_stops_mid_epoch_and_is_the_cosine_horizon_across_a_crash(tmp_path, rates):
    settings = config(epochs=100, schedule="cosine", warmup_steps=2, min_lr=0.01, max_steps=7)
    with pytest.raises(Crash):
        fit(LineObjective(), batches_of(3, crash_at=2), lambda: [], settings, checkpoint_dir=tmp_path)
    result = fit(LineObjective(), batches_of(3), lambda: [], settings, checkpoint_dir=tmp_path, resume=True)
    # 2 warm-up steps, then p = (s - 2) / (7 - 2) up to the budget's last step, whatever the clock says
    expected = [0.05, 0.1] + [0.01 + 0.09 * (1 + math.cos(math.pi * (s - 2) / 5)) / 2 for s in range(3, 8)]
    assert rates == pytest.approx(expected, rel=1e-12)
    assert rates[-1] == pytest.approx(0.01)
    assert result.stop_reason == "max_steps" and result.stopped_early
    assert [record.steps for record in result.history] == [3, 3, 1]
    assert [record.partial for record in result.history] == [False, False, True]
    again = fit(LineObjective(), batches_of(3), lambda: [], settings, checkpoint_dir=tmp_path, resume=True)
    assert len(again.history) == 3 and again.stop_reason == "max_steps"  # nothing left to train
    longer = config(**{**vars(settings), "max_steps": 9})
    with pytest.raises(ValueError, match=r"different settings \(max_steps=7 then, 9 now\)"):
        fit(LineObjective(), batches_of(3), lambda: [], longer, checkpoint_dir=tmp_path, resume=True)


def test_the_same_step_budget_gives_the_same_weights_and_stops_other_schedules_too(rates):
    first, second = LineObjective(), LineObjective()
    for objective in (first, second):
        result = fit(objective, batches_of(4), lambda: [], config(epochs=10, max_steps=6))
        assert result.stop_reason == "max_steps" and sum(record.steps for record in result.history) == 6
    assert rates == [0.1] * 12  # plateau with lr_decay 1: the budget only stops the run
    for a, b in zip(first.model.parameters(), second.model.parameters(), strict=True):
        assert torch.equal(a, b)


def test_a_step_budget_must_be_positive():
    with pytest.raises(ValueError, match=r"max_steps must be >= 1 or None, got 0"):
        FitConfig(max_steps=0)
