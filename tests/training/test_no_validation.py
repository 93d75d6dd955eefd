"""``fit`` without validation (``valid_batches=None``): a recipe chosen on a validation split, refitted on all the
data. Every epoch counts as the best, so the model kept is the last epoch's weights (or the average of the last
``average_last``); the plateau schedule, which watches validation, is refused; a resumed run repeats a straight one."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file
from test_training_recipe import Crash, LineObjective, batches_of, snapshot
from torch import nn

from attnkit.checkpointing import load_model_weights
from attnkit.training.loop import FitConfig, fit


def settings(**overrides) -> FitConfig:
    options = {"progress": False, "seed": 0, "lr": 0.05, "schedule": "cosine", "patience": 1, "epochs": 4}
    return FitConfig(**{**options, **overrides})


def test_the_last_epoch_is_kept_and_nothing_is_validated(tmp_path):
    objective = LineObjective()
    result = fit(objective, batches_of(3), None, settings(), checkpoint_dir=tmp_path)
    assert objective.shown == []  # evaluate was never called
    assert result.best_epoch == 4 and result.best_metrics == {} and result.stop_reason == "epochs"
    assert [record.metrics for record in result.history] == [{}] * 4  # patience 1 never stops a run without validation
    last = load_file(tmp_path / "last" / "model.safetensors")
    best = nn.Linear(2, 1)
    load_model_weights(best, tmp_path / "best")
    for name, value in objective.model.state_dict().items():
        assert torch.equal(value, last[name]) and torch.equal(value, best.state_dict()[name])


def test_with_averaging_the_model_kept_is_the_mean_of_the_last_k_epochs(tmp_path):
    raw: dict[int, dict[str, torch.Tensor]] = {}
    objective = LineObjective()

    def train_batches(epoch: int):
        raw[epoch - 1] = snapshot(objective.model)  # the weights training ended epoch - 1 with
        return batches_of(3)(epoch)

    result = fit(objective, train_batches, None, settings(average_last=3), checkpoint_dir=tmp_path)
    raw[4] = load_file(tmp_path / "last" / "model.safetensors")  # last/ holds the epoch's own weights
    assert result.best_epoch == 4
    for name, kept in objective.model.state_dict().items():
        by_hand = (raw[2][name] + raw[3][name] + raw[4][name]) / 3
        torch.testing.assert_close(kept, by_hand, rtol=1e-6, atol=1e-7)
        assert not torch.equal(kept, raw[4][name])  # not the last epoch alone


def test_the_plateau_schedule_is_refused_without_validation():
    with pytest.raises(ValueError, match="plateau schedule lowers the learning rate when validation stops improving"):
        fit(LineObjective(), batches_of(2), None, settings(schedule="plateau"))


def test_a_resumed_run_without_validation_repeats_a_straight_one(tmp_path):
    straight = LineObjective()
    fit(straight, batches_of(3), None, settings(average_last=2), checkpoint_dir=tmp_path / "a")
    with pytest.raises(Crash):  # killed in epoch 3, after last/ of epoch 2
        fit(LineObjective(), batches_of(3, crash_at=3), None, settings(average_last=2), checkpoint_dir=tmp_path / "b")
    resumed = LineObjective()
    result = fit(resumed, batches_of(3), None, settings(average_last=2), checkpoint_dir=tmp_path / "b", resume=True)
    assert result.resumed_from == 2 and result.best_epoch == 4
    for a, b in zip(straight.model.state_dict().values(), resumed.model.state_dict().values(), strict=True):
        assert torch.equal(a, b)
