"""Selection that works on small data: ties on the validation metric go to the lower validation loss (and count as
progress for patience), no patience is spent during the warm-up, and a small or unmoving validation split is
warned about."""

from __future__ import annotations

import warnings
from collections.abc import Iterable

import pytest
import torch
from torch import nn

from attnkit.training.loop import FitConfig, fit


class Scripted:
    """Validation metrics that follow a script: ``(wer, loss)`` per epoch, on ``count`` examples."""

    def __init__(self, script: list[tuple[float, float]], count: float = 300.0):
        torch.manual_seed(0)
        self.model = nn.Linear(2, 1)
        self.script, self.count, self.seen = list(script), count, 0

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return (self.model(batch["x"]) - 1).pow(2).mean()

    def evaluate(self, batches: Iterable) -> dict[str, float]:
        wer, loss = self.script[self.seen]
        self.seen += 1
        return {"wer": wer, "loss": loss, "count": self.count}


def batches(steps: int = 2):
    return lambda epoch: [{"x": torch.ones(4, 2)}] * steps


WER = {"select_metric": "wer", "select_mode": "min", "progress": False}


def test_a_metric_stuck_at_its_worst_keeps_the_epoch_of_lowest_validation_loss_and_trains_on():
    # The 300-pair Transformer of issue #37: WER 100 for epochs while the validation loss falls 8.47 -> 3.90.
    script = [(100.0, 8.47), (100.0, 6.10), (100.0, 4.80), (100.0, 3.90), (100.0, 4.20), (100.0, 4.50)]
    with pytest.warns(UserWarning, match="the validation wer has stayed at 100 for 3 epochs"):
        result = fit(Scripted(script), batches(), lambda: [], FitConfig(epochs=6, patience=2, **WER))
    assert result.best_epoch == 4 and result.best_metrics["loss"] == 3.90
    assert len(result.history) == 6 and result.stop_reason == "epochs"  # falling loss is progress: no early stop


def test_a_better_metric_wins_over_a_lower_loss_and_an_equal_loss_is_no_improvement():
    script = [(50.0, 2.0), (40.0, 3.0), (40.0, 3.0), (45.0, 1.0)]
    result = fit(Scripted(script), batches(), lambda: [], FitConfig(epochs=4, patience=None, **WER))
    assert result.best_epoch == 2


def test_no_patience_is_spent_while_the_warm_up_lasts():
    script = [(50.0, 2.0), (60.0, 2.0), (60.0, 2.0), (60.0, 2.0), (60.0, 2.0)]
    # 2 steps an epoch, a warm-up of 7 steps: epochs 2 (step 4) and 3 (step 6) end inside it and spend nothing
    config = FitConfig(epochs=5, patience=1, warmup_steps=7, **WER)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the warm-up is long for 10 steps: said, and meant here
        result = fit(Scripted(script), batches(), lambda: [], config)
    assert [r.epoch for r in result.history] == [1, 2, 3, 4] and result.stop_reason == "early_stopping"
    without = fit(Scripted(script), batches(), lambda: [], FitConfig(epochs=5, patience=1, **WER))
    assert len(without.history) == 2 and without.stop_reason == "early_stopping"


def test_a_small_validation_split_is_warned_about_once():
    script = [(50.0, 2.0), (40.0, 1.0), (30.0, 0.5)]
    with pytest.warns(UserWarning, match="the validation split has only 40 examples") as caught:
        fit(Scripted(script, count=40.0), batches(), lambda: [], FitConfig(epochs=3, **WER))
    assert sum("validation split has only" in str(w.message) for w in caught) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 300 examples and a moving metric: nothing to say
        fit(Scripted(script), batches(), lambda: [], FitConfig(epochs=3, **WER))


def test_a_warm_up_longer_than_half_the_run_is_warned_about_with_a_size_that_fits():
    with pytest.warns(UserWarning, match=r"warmup_steps=4000 is more than half of the run's 20 steps .* \(2\)"):
        fit(Scripted([(1.0, 1.0)] * 10), batches(), lambda: [], FitConfig(epochs=10, warmup_steps=4000, **WER))
