"""The training loop: learning, best-model selection, early stopping, time budget, exact resume, clear errors."""

from __future__ import annotations

import math
import re
import shutil
from collections.abc import Iterable

import pytest
import torch
from _toy_training import ToyModel, ToyObjective, batch_functions, make_data, run
from safetensors.torch import load_file
from torch import nn

from attnkit.checkpointing import load_model_weights, read_metadata, read_trainer_state
from attnkit.training.loop import FitConfig, FitResult, fit

QUIET = {"progress": False, "seed": 7, "lr": 0.01, "patience": None}


def outcome(result: FitResult) -> dict:
    """Everything in a result that must repeat exactly (not the timings)."""
    return {
        "best_epoch": result.best_epoch,
        "best_metrics": result.best_metrics,
        "stop_reason": result.stop_reason,
        "history": [(r.epoch, r.train_loss, r.metrics, r.steps, r.partial) for r in result.history],
    }


def weights(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: value.clone() for name, value in model.state_dict().items()}


def assert_same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name


def test_fit_learns_selects_the_best_epoch_and_returns_its_weights(tmp_path):
    result, model = run(FitConfig(epochs=6, **QUIET), checkpoint_dir=tmp_path)
    accuracies = [record.metrics["accuracy"] for record in result.history]
    assert len(result.history) == 6 and [r.epoch for r in result.history] == [1, 2, 3, 4, 5, 6]
    # the best accuracy; among epochs that tie on it, the lowest validation loss
    ranked = [(r.metrics["accuracy"], -r.metrics["loss"], r.epoch) for r in result.history]
    assert result.best_epoch == max(ranked)[2]
    assert result.best_metrics["accuracy"] == max(accuracies) > 85
    assert result.history[-1].train_loss < result.history[0].train_loss
    assert result.stop_reason == "epochs" and not result.stopped_early and result.resumed_from is None
    # The model holds the best epoch's weights, which are also best/'s; evaluating them gives the best metrics.
    _, valid = make_data()
    _, valid_batches = batch_functions(valid, valid, 16)
    model.eval()
    with torch.no_grad():
        assert ToyObjective(model).evaluate(valid_batches()) == result.best_metrics
    best = ToyModel()
    load_model_weights(best, tmp_path / "best")
    assert_same_weights(weights(best), weights(model))
    assert read_metadata(tmp_path / "best")["metadata"]["epoch"] == result.best_epoch
    assert read_metadata(tmp_path / "last")["metadata"]["epoch"] == 6


def test_the_same_seed_repeats_a_run_and_another_seed_does_not():
    first, model_a = run(FitConfig(epochs=2, **QUIET))
    second, model_b = run(FitConfig(epochs=2, **QUIET))
    other, _ = run(FitConfig(epochs=2, **{**QUIET, "seed": 8}))
    assert outcome(first) == outcome(second)
    assert_same_weights(weights(model_a), weights(model_b))
    assert outcome(first) != outcome(other)


def test_a_resumed_run_repeats_an_uninterrupted_run_bit_for_bit(tmp_path):
    # Dropout and a DataLoader-style shuffle through the global generator: both must come back identical.
    straight, straight_model = run(FitConfig(epochs=5, **QUIET), checkpoint_dir=tmp_path / "a")
    run(FitConfig(epochs=2, **QUIET), checkpoint_dir=tmp_path / "b")
    resumed, resumed_model = run(FitConfig(epochs=5, **QUIET), checkpoint_dir=tmp_path / "b", resume=True)
    assert resumed.resumed_from == 2
    assert outcome(resumed) == outcome(straight)
    assert_same_weights(weights(resumed_model), weights(straight_model))
    for name in ("last", "best"):
        assert_same_weights(
            load_file(tmp_path / "a" / name / "model.safetensors"),
            load_file(tmp_path / "b" / name / "model.safetensors"),
        )
    assert resumed.wall_time > 0


def test_resuming_a_finished_run_trains_nothing_and_restores_the_best_weights(tmp_path):
    first, first_model = run(FitConfig(epochs=3, **QUIET), checkpoint_dir=tmp_path)
    again, again_model = run(FitConfig(epochs=3, **QUIET), checkpoint_dir=tmp_path, resume=True)
    assert again.resumed_from == 3 and outcome(again) == outcome(first)
    assert_same_weights(weights(again_model), weights(first_model))


def test_resuming_without_a_checkpoint_starts_afresh_and_other_settings_are_refused(tmp_path):
    fresh, _ = run(FitConfig(epochs=1, **QUIET), checkpoint_dir=tmp_path, resume=True)
    assert fresh.resumed_from is None and len(fresh.history) == 1
    with pytest.raises(ValueError, match=r"cannot resume .*last with different settings \(lr=0.01 then, 0.02 now\)"):
        run(FitConfig(epochs=2, **{**QUIET, "lr": 0.02}), checkpoint_dir=tmp_path, resume=True)
    with pytest.raises(ValueError, match="resume=True needs a checkpoint_dir"):
        run(FitConfig(epochs=1, **QUIET), resume=True)
    with pytest.warns(UserWarning, match="exists and resume=False: starting afresh"):
        run(FitConfig(epochs=1, **QUIET), checkpoint_dir=tmp_path)


def test_a_stale_best_checkpoint_is_rewritten(tmp_path):
    first, _ = run(FitConfig(epochs=2, **QUIET), checkpoint_dir=tmp_path)
    best = ToyModel()
    load_model_weights(best, tmp_path / "best")
    shutil.rmtree(tmp_path / "best")  # as if the process died between writing best/ and last/ ... and best/ was lost
    run(FitConfig(epochs=2, **QUIET), checkpoint_dir=tmp_path, resume=True)
    restored = ToyModel()
    load_model_weights(restored, tmp_path / "best")
    assert_same_weights(weights(restored), weights(best))
    assert read_metadata(tmp_path / "best")["metadata"]["epoch"] == first.best_epoch


class ScriptedObjective:
    """A objective whose validation metric follows a script; it snapshots the weights at every evaluation."""

    def __init__(self, losses: list[float]):
        torch.manual_seed(0)
        self.model = nn.Linear(2, 1)
        self.losses = list(losses)
        self.snapshots: list[dict[str, torch.Tensor]] = []

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return (self.model(batch["x"]) - 1).pow(2).mean()

    def evaluate(self, batches: Iterable[dict[str, torch.Tensor]]) -> dict[str, float]:
        assert not self.model.training and not torch.is_grad_enabled()
        self.snapshots.append(weights(self.model))
        return {"loss": self.losses[len(self.snapshots) - 1], "other": 1.0}


def constant_batches(steps: int = 3):
    return lambda epoch: [{"x": torch.ones(4, 2) * epoch}] * steps


def test_early_stopping_after_patience_epochs_without_improvement():
    objective = ScriptedObjective([1.0, 0.8, 0.9, 0.8, 0.7, 0.1])
    config = FitConfig(epochs=6, patience=2, select_metric="loss", select_mode="min", progress=False)
    result = fit(objective, constant_batches(), lambda: [], config)
    assert [r.epoch for r in result.history] == [1, 2, 3, 4]  # 0.9 and 0.8 do not beat 0.8
    assert result.best_epoch == 2 and result.best_metrics == {"loss": 0.8, "other": 1.0}
    assert result.stopped_early and result.stop_reason == "early_stopping"
    assert_same_weights(weights(objective.model), objective.snapshots[1])
    assert objective.model.training  # the mode it came in with


def test_lr_decay_multiplies_the_rate_after_each_epoch_without_improvement_and_survives_a_resume(tmp_path):
    scripted = [1.0, 1.1, 0.9, 1.2, 1.3]  # epochs 2, 4 and 5 do not improve
    config = FitConfig(epochs=5, lr=0.1, lr_decay=0.5, patience=None, select_metric="loss", select_mode="min")
    config.progress = False
    lrs = []
    for epochs in range(1, 6):  # one epoch per call, resumed each time: the rate must come back from the checkpoint
        objective = ScriptedObjective(scripted[epochs - 1 :])
        config.epochs = epochs
        fit(objective, constant_batches(), lambda: [], config, checkpoint_dir=tmp_path, resume=True)
        lrs.append(read_trainer_state(tmp_path / "last")["optimizer"]["param_groups"][0]["lr"])
    assert lrs == pytest.approx([0.1, 0.05, 0.05, 0.025, 0.0125])
    with pytest.raises(ValueError, match=r"lr_decay must be in \(0, 1\], got 1.5"):
        FitConfig(lr_decay=1.5)


def test_warmup_raises_the_rate_linearly_over_the_first_steps_across_a_plateau_and_a_resume(tmp_path, monkeypatch):
    rates = []
    step = torch.optim.AdamW.step

    def recording_step(self, *args, **kwargs):
        rates.append(self.param_groups[0]["lr"])
        return step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.AdamW, "step", recording_step)
    scripted = [1.0, 1.1, 0.9]  # epoch 2 does not improve: the plateau halves the rate the warm-up climbs to
    config = FitConfig(epochs=3, lr=0.1, lr_decay=0.5, warmup_steps=7, patience=None, select_metric="loss")
    config.select_mode, config.progress = "min", False
    for epochs in range(1, 4):  # one epoch per call, resumed each time: the warm-up carries on from the checkpoint
        config.epochs = epochs
        fit(
            ScriptedObjective(scripted[epochs - 1 :]),
            constant_batches(),
            lambda: [],
            config,
            checkpoint_dir=tmp_path,
            resume=True,
        )
    # Steps 1-6 climb by 0.1 / 7; epoch 2's plateau halves the target, so step 7 reaches 0.05 and stays there.
    assert rates == pytest.approx([0.1 * k / 7 for k in range(1, 7)] + [0.05] * 3)
    assert "scheduled_lr" not in read_trainer_state(tmp_path / "last")["optimizer"]["param_groups"][0]
    with pytest.raises(ValueError, match="warmup_steps must be >= 0, got -1"):
        FitConfig(warmup_steps=-1)


def test_a_nan_metric_never_counts_as_an_improvement():
    objective = ScriptedObjective([math.nan, 0.5, math.nan])
    result = fit(
        objective,
        constant_batches(),
        lambda: [],
        FitConfig(epochs=3, select_metric="loss", select_mode="min", progress=False),
    )
    assert result.best_epoch == 2


def test_the_time_budget_pauses_mid_epoch_validates_saves_there_and_resume_does_the_rest(tmp_path):
    budget_seconds = 0.4
    config = FitConfig(epochs=2, max_minutes=budget_seconds / 60, **QUIET)
    result, _ = run(config, checkpoint_dir=tmp_path / "paused", sleep=0.05)  # 12 steps of >= 50 ms: > 0.6 s an epoch
    assert result.stop_reason == "time_budget" and result.stopped_early
    paused = result.paused_epoch
    assert result.history == [] and paused.epoch == 1 and paused.partial and 1 <= paused.steps < 12
    assert budget_seconds <= result.wall_time  # no upper bound: a loaded machine is slow; the steps bound it above
    assert result.best_epoch == 1 and result.best_metrics == paused.metrics  # the weights of that moment, validated
    metadata = read_metadata(tmp_path / "paused" / "last")["metadata"]
    assert metadata["epoch"] == 0 and metadata["position"] == {"epoch": 1, "batches": paused.steps}

    # Resumed (the budget is cumulative; none now): the rest of epoch 1, then epoch 2, as a run never paused.
    resumed, _ = run(FitConfig(epochs=2, **QUIET), checkpoint_dir=tmp_path / "paused", resume=True)
    straight, _ = run(FitConfig(epochs=2, **QUIET), checkpoint_dir=tmp_path / "straight")
    assert resumed.stop_reason == "epochs" and resumed.resumed_from == 0
    assert [(r.epoch, r.steps, r.partial) for r in resumed.history] == [(1, 12, False), (2, 12, False)]
    assert outcome(resumed)["history"] == outcome(straight)["history"]
    # last/ trained exactly alike; best/ may hold the pause's validated weights, when they were the best seen
    assert_same_weights(
        load_file(tmp_path / "paused" / "last" / "model.safetensors"),
        load_file(tmp_path / "straight" / "last" / "model.safetensors"),
    )
    best = max((r.metrics["accuracy"], -r.metrics["loss"]) for r in [*straight.history, paused])
    assert (resumed.best_metrics["accuracy"], -resumed.best_metrics["loss"]) == best


def test_a_task_without_sums_is_evaluated_with_evaluate():
    class Plain:
        def __init__(self, inner: ToyObjective):
            self.model, self.inner = inner.model, inner

        def loss(self, batch):
            return self.inner.loss(batch)

        def evaluate(self, batches):
            return self.inner.evaluate(batches)

    torch.manual_seed(7)
    model = ToyModel()
    train, valid = make_data()
    train_batches, valid_batches = batch_functions(train, valid, 16)
    result = fit(Plain(ToyObjective(model)), train_batches, valid_batches, FitConfig(epochs=2, **QUIET))
    assert result.best_metrics["accuracy"] > 50


def test_progress_prints_one_line_per_epoch_off_a_terminal(capsys):
    run(FitConfig(epochs=2, **{**QUIET, "progress": True}))
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert [line.split("  ")[0] for line in lines[:2]] == ["epoch 1/2", "epoch 2/2"]
    assert "train loss" in lines[0] and "valid accuracy" in lines[0]
    assert lines[-1].startswith("stopped after epoch 2 (the last epoch); best epoch")
    # metrics as people read them: accuracy in percent, no example count, no raw dict; one stop reason per run
    assert re.search(r"valid accuracy \d+\.\d\d%  loss \d\.\d{4}", lines[0]), lines[0]
    assert "count" not in captured.err and "{" not in captured.err
    assert sum("stopped" in line for line in lines) == 1
    run(FitConfig(epochs=1, **QUIET))
    assert capsys.readouterr() == ("", "")


def test_tensorboard_gets_the_epoch_scalars(tmp_path):
    pytest.importorskip("tensorboard", reason="tensorboard (the tensorboard extra) is not installed")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    result, _ = run(FitConfig(epochs=2, **{**QUIET, "tensorboard_dir": str(tmp_path / "tb")}))
    events = EventAccumulator(str(tmp_path / "tb"))
    events.Reload()
    assert {"train/loss", "valid/accuracy", "valid/loss", "time/epoch_seconds"} <= set(events.Tags()["scalars"])
    accuracy = [(event.step, event.value) for event in events.Scalars("valid/accuracy")]
    history = [(record.epoch, record.metrics["accuracy"]) for record in result.history]
    assert [step for step, _ in accuracy] == [1, 2]
    assert [value for _, value in accuracy] == pytest.approx([value for _, value in history])
    # per optimiser step: the loss and the learning rate, steps counted over the run
    steps = sum(record.steps for record in result.history)
    assert [event.step for event in events.Scalars("train/step_loss")] == list(range(1, steps + 1))
    assert [event.step for event in events.Scalars("train/lr")] == list(range(1, steps + 1))
    assert all(event.value > 0 for event in events.Scalars("train/lr"))


def test_weight_decay_spares_biases():
    from attnkit.training.optim import make_optimizer

    optimizer = make_optimizer(ToyModel(), lr=1e-3, weight_decay=0.1)
    decays = {group["weight_decay"]: [p.dim() for p in group["params"]] for group in optimizer.param_groups}
    assert decays == {0.1: [2, 2], 0.0: [1, 1]}


def test_the_optimizer_is_fused_adamw_and_steps_like_the_default_implementation():
    from attnkit.training.optim import make_optimizer

    torch.manual_seed(0)
    fused_model, reference_model = ToyModel(dropout=0.0), ToyModel(dropout=0.0)
    reference_model.load_state_dict(fused_model.state_dict())
    fused = make_optimizer(fused_model, lr=0.01, weight_decay=0.1)
    assert fused.defaults["fused"] is True
    decay = [p for p in reference_model.parameters() if p.dim() >= 2]
    no_decay = [p for p in reference_model.parameters() if p.dim() < 2]
    reference = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}], lr=0.01, foreach=False
    )
    x = torch.randn(4, 8)
    for _ in range(5):
        for model, optimizer in ((fused_model, fused), (reference_model, reference)):
            optimizer.zero_grad()
            model(x).pow(2).mean().backward()
            optimizer.step()
    for got, want in zip(fused_model.parameters(), reference_model.parameters(), strict=True):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)


def test_clear_errors():
    objective = ScriptedObjective([1.0])
    with pytest.raises(ValueError, match=r"metrics \['loss', 'other'\] have no 'accuracy'"):
        fit(objective, constant_batches(), lambda: [], FitConfig(epochs=1, progress=False))

    class Vector(ScriptedObjective):
        def loss(self, batch):
            return self.model(batch["x"]).squeeze(-1)

    with pytest.raises(ValueError, match=r"must return a scalar tensor .* got \[4\]"):
        fit(Vector([1.0]), constant_batches(), lambda: [], FitConfig(epochs=1, select_metric="loss", progress=False))

    class Diverging(ScriptedObjective):
        def loss(self, batch):
            return self.model(batch["x"]).mean() * math.inf

    with pytest.raises(FloatingPointError, match="epoch 1, step 1: gradient norm"):
        fit(Diverging([1.0]), constant_batches(), lambda: [], FitConfig(epochs=1, select_metric="loss", progress=False))

    with pytest.raises(ValueError, match="gave no batches"):
        fit(
            ScriptedObjective([1.0]),
            lambda epoch: [],
            lambda: [],
            FitConfig(epochs=1, select_metric="loss", progress=False),
        )

    with pytest.raises(ValueError, match=r"FitConfig: lr must be > 0, got 0; select_mode must be 'max' or 'min'"):
        FitConfig(lr=0, select_mode="best")
