"""The training recipe of ``fit``: schedules (rate at every step, by hand, across resumes), gradient accumulation
(equal to one big batch), checkpoint averaging (by hand), and the settings a resumed run must keep."""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable

import pytest
import torch
from _toy_training import run
from safetensors.torch import load_file
from torch import nn

from attnkit.checkpointing import load_model_weights, read_metadata, read_trainer_state
from attnkit.tasks.options import add_runtime_options, add_training_options, fit_config_from_args
from attnkit.training import loop
from attnkit.training.averaging import average_weights, push_window
from attnkit.training.loop import FitConfig, fit
from attnkit.training.schedule import LearningRateSchedule, cosine_rate, inverse_sqrt_rate

Batch = dict[str, torch.Tensor]


class Crash(Exception):
    """Raised by a batch function to interrupt a run after some epochs, as a killed process would."""


class LineObjective:
    """``Linear(2, 1)`` fitted to 1; validation returns ``scripted`` losses in turn (then the last one) and keeps
    a copy of the weights it was shown; training losses are recorded; ``clock`` (if any) advances one second per
    training batch."""

    def __init__(self, scripted: list[float] | None = None, clock: FakeTime | None = None):
        torch.manual_seed(0)
        self.model = nn.Linear(2, 1)
        self.scripted = scripted or [1.0]
        self.clock = clock
        self.shown: list[dict[str, torch.Tensor]] = []
        self.losses: list[float] = []

    def loss(self, batch: Batch) -> torch.Tensor:
        if self.clock is not None:
            self.clock.now += 1.0
        loss = (self.model(batch["x"]) - 1).pow(2).mean()
        self.losses.append(loss.item())
        return loss

    def evaluate(self, batches: Iterable[Batch]) -> dict[str, float]:
        self.shown.append(snapshot(self.model))
        return {"loss": self.scripted[min(len(self.shown), len(self.scripted)) - 1]}


class FakeTime:
    """Stands in for the ``time`` module of the loop: the clock only moves when a objective moves it."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


def snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: value.detach().clone() for name, value in model.state_dict().items()}


def batches_of(steps: int, *, crash_at: int | None = None):
    """``train_batches(epoch)``: a list (it has a length) of ``steps`` different batches; raises at ``crash_at``."""

    def train_batches(epoch: int) -> list[Batch]:
        if epoch == crash_at:
            raise Crash(f"epoch {epoch}")
        return [{"x": torch.full((4, 2), 0.1 * (epoch + step))} for step in range(steps)]

    return train_batches


@pytest.fixture
def rates(monkeypatch) -> list[float]:
    """The learning rate of every optimiser step taken during the test (all parameter groups agree)."""
    seen: list[float] = []
    step = torch.optim.AdamW.step

    def recording_step(self, *args, **kwargs):
        assert len({group["lr"] for group in self.param_groups}) == 1
        seen.append(self.param_groups[0]["lr"])
        return step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.AdamW, "step", recording_step)
    return seen


def config(**options) -> FitConfig:
    defaults = {"patience": None, "select_metric": "loss", "select_mode": "min", "progress": False, "lr": 0.1}
    return FitConfig(**{**defaults, **options})


def fit_crashing_then_resumed(tmp_path, make_task, settings: FitConfig, steps: int, crash_at: int):
    """Run until ``train_batches(crash_at)`` raises, then resume to the end; return the resumed call's result."""
    with pytest.raises(Crash):
        fit(make_task(), batches_of(steps, crash_at=crash_at), lambda: [], settings, checkpoint_dir=tmp_path)
    return fit(make_task(), batches_of(steps), lambda: [], settings, checkpoint_dir=tmp_path, resume=True)


# ------------------------------------------------------------------------------------------------ schedules


def test_inverse_sqrt_rate_at_every_step_across_resumes(tmp_path, rates):
    settings = config(epochs=1, schedule="inverse-sqrt", warmup_steps=4)
    for epochs in (1, 2, 3):  # one epoch per call, resumed each time: the step count comes back from last/
        settings.epochs = epochs
        fit(LineObjective([1.0, 2.0, 3.0]), batches_of(3), lambda: [], settings, checkpoint_dir=tmp_path, resume=True)
    # Steps 1-4 climb by 0.1 / 4; then 0.1 * sqrt(4 / s), counted over the whole run.
    expected = [0.025, 0.05, 0.075, 0.1, 0.1 * math.sqrt(4 / 5), 0.1 * math.sqrt(4 / 6)]
    expected += [0.1 * math.sqrt(4 / s) for s in (7, 8, 9)]
    assert rates == pytest.approx(expected, rel=1e-12)
    assert read_trainer_state(tmp_path / "last")["optimizer"]["param_groups"][0]["lr"] == pytest.approx(expected[-1])


def test_cosine_over_epochs_of_steps_at_every_step_across_a_crash(tmp_path, rates):
    settings = config(epochs=3, schedule="cosine", warmup_steps=2, min_lr=0.01)
    fit_crashing_then_resumed(tmp_path, LineObjective, settings, steps=3, crash_at=3)
    # Horizon S = 3 epochs x 3 steps = 9; after the 2 warm-up steps p = (s - 2) / 7.
    expected = [0.05, 0.1] + [0.01 + 0.09 * (1 + math.cos(math.pi * (s - 2) / 7)) / 2 for s in range(3, 10)]
    assert rates == pytest.approx(expected, rel=1e-12)
    assert rates[-1] == pytest.approx(0.01)
    assert read_trainer_state(tmp_path / "last")["schedule"]["horizon_steps"] == 9
    longer = config(**{**vars(settings), "epochs": 4})
    with pytest.raises(ValueError, match=r"different settings \(epochs=3 then, 4 now\)"):
        fit(LineObjective(), batches_of(3), lambda: [], longer, checkpoint_dir=tmp_path, resume=True)


def test_cosine_over_the_time_budget_at_every_step_across_a_crash(tmp_path, rates, monkeypatch):
    clock = FakeTime()
    monkeypatch.setattr(loop, "time", clock)
    settings = config(epochs=100, schedule="cosine", warmup_steps=2, max_minutes=10 / 60)  # a 10 s budget
    result = fit_crashing_then_resumed(tmp_path, lambda: LineObjective(clock=clock), settings, steps=3, crash_at=3)
    # Step s is taken s seconds into training (each batch takes 1 s); the warm-up ends at t = 2 s, so
    # p = (s - 2) / (10 - 2), and the step that spends the budget (s = 10) runs at min_lr = 0.
    expected = [0.05, 0.1] + [0.05 * (1 + math.cos(math.pi * (s - 2) / 8)) for s in range(3, 11)]
    assert rates == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert result.stop_reason == "time_budget" and [r.steps for r in result.history] == [3, 3, 3]
    assert result.paused_epoch.steps == 1  # the budget ran out after the first step of epoch 4: paused there
    assert read_trainer_state(tmp_path / "last")["schedule"]["warmup_end_seconds"] == 2.0


def test_the_default_plateau_schedule_is_unchanged_and_refuses_other_schedules_options():
    schedule = LearningRateSchedule("plateau", lr=0.1, lr_decay=0.5)
    optimizer = torch.optim.SGD(nn.Linear(1, 1).parameters(), lr=0.1)
    schedule.before_step(optimizer, 1, 0.0)
    schedule.after_epoch(optimizer, improved=True)
    assert optimizer.param_groups[0]["lr"] == 0.1
    schedule.after_epoch(optimizer, improved=False)
    assert optimizer.param_groups[0]["lr"] == 0.05
    assert FitConfig().schedule == "plateau"
    assert inverse_sqrt_rate(1.0, 4, 0) == 0.5 and inverse_sqrt_rate(1.0, 2, 4) == 0.5
    assert cosine_rate(1.0, 0.2, 0.5) == pytest.approx(0.6) and cosine_rate(1.0, 0.2, 7.0) == pytest.approx(0.2)
    with pytest.raises(ValueError, match=r"lr_decay applies to schedule='plateau' only, got 0.5 with 'cosine'"):
        FitConfig(schedule="cosine", lr_decay=0.5)
    with pytest.raises(ValueError, match=r"min_lr applies to schedule='cosine' only, got 0.001 with 'plateau'"):
        FitConfig(min_lr=1e-3)
    with pytest.raises(ValueError, match=r"min_lr must be in \[0, lr=0.001\], got 0.1"):
        FitConfig(schedule="cosine", min_lr=0.1)
    with pytest.raises(ValueError, match=r"schedule must be one of 'plateau', 'inverse-sqrt', 'cosine', got 'step'"):
        FitConfig(schedule="step")
    with pytest.raises(ValueError, match="accumulate must be >= 1, got 0; average_last must be >= 1, got 0"):
        FitConfig(accumulate=0, average_last=0)


def test_a_step_counted_cosine_needs_batches_with_a_length():
    def generator(epoch: int):
        yield {"x": torch.ones(4, 2)}

    with pytest.raises(ValueError, match=r"must have a len\(\), or set max_minutes"):
        fit(LineObjective(), generator, lambda: [], config(epochs=2, schedule="cosine"))


@pytest.mark.parametrize(
    ("option", "then", "now"),
    [("schedule", "plateau", "inverse-sqrt"), ("accumulate", 1, 2), ("average_last", 1, 3)],
)
def test_a_resumed_run_keeps_the_recipe_it_started_with(tmp_path, option, then, now):
    fit(LineObjective(), batches_of(2), lambda: [], config(epochs=1, **{option: then}), checkpoint_dir=tmp_path)
    other = config(epochs=2, **{option: now})
    with pytest.raises(ValueError, match=rf"cannot resume .* \({option}={then!r} then, {now!r} now\)"):
        fit(LineObjective(), batches_of(2), lambda: [], other, checkpoint_dir=tmp_path, resume=True)


# ------------------------------------------------------------------------------------------- accumulation


def test_accumulated_steps_equal_steps_on_the_concatenated_batches(monkeypatch):
    grads: list[list[torch.Tensor]] = []
    step = torch.optim.AdamW.step

    def recording_step(self, *args, **kwargs):
        grads.append([p.grad.clone() for group in self.param_groups for p in group["params"]])
        return step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.AdamW, "step", recording_step)
    generator = torch.Generator().manual_seed(3)
    small = [{"x": torch.randn(4, 2, generator=generator)} for _ in range(5)]  # steps: (1, 2), (3, 4), (5)
    big = [{"x": torch.cat([small[0]["x"], small[1]["x"]])}, {"x": torch.cat([small[2]["x"], small[3]["x"]])}]
    big.append(small[4])
    results, tasks = [], []
    for batches, accumulate in ((small, 2), (big, 1)):
        tasks.append(LineObjective())
        settings = config(epochs=2, accumulate=accumulate, grad_clip=None)  # clipping would hide a scale error
        results.append(fit(tasks[-1], lambda epoch, b=batches: b, lambda: [], settings))
    assert len(grads) == 12  # 2 epochs of 3 steps in each run
    for accumulated, concatenated in zip(grads[:6], grads[6:], strict=True):
        for a, b in zip(accumulated, concatenated, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
    assert [r.steps for r in results[0].history] == [r.steps for r in results[1].history] == [3, 3]
    for a, b in zip(tasks[0].model.parameters(), tasks[1].model.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
    # The training loss is the mean of the batches' losses, not of the steps'.
    assert results[0].history[0].train_loss == pytest.approx(sum(tasks[0].losses[:5]) / 5, rel=1e-12)


# --------------------------------------------------------------------------------------------- averaging


def test_average_weights_by_hand():
    a = {"w": torch.tensor([1.0, 2.0]), "n": torch.tensor(1)}
    b = {"w": torch.tensor([3.0, 5.0]), "n": torch.tensor(2)}
    c = {"w": torch.tensor([2.0, 8.0]), "n": torch.tensor(3)}
    mean = average_weights([a, b, c])
    assert torch.equal(mean["w"], torch.tensor([2.0, 5.0])) and mean["n"].item() == 3  # counters: the last one's
    assert mean["w"].dtype == torch.float32
    assert [w["n"].item() for w in push_window(push_window([a], b, 2), c, 2)] == [2, 3]
    with pytest.raises(ValueError, match=r"snapshots\[0\] does not have the names and shapes"):
        average_weights([{"w": torch.zeros(3)}, a])


def test_the_model_validated_kept_and_shipped_is_the_average_of_the_last_k_epochs(tmp_path):
    raw: dict[int, dict[str, torch.Tensor]] = {}
    objective = LineObjective([1.0, 0.5, 0.7, 0.9])  # epoch 2's average is the best

    def train_batches(epoch: int) -> list[Batch]:
        raw[epoch - 1] = snapshot(objective.model)  # the weights training ended epoch - 1 with
        return batches_of(3)(epoch)

    settings = config(epochs=4, average_last=3)
    result = fit(objective, train_batches, lambda: [], settings, checkpoint_dir=tmp_path)
    raw[4] = load_file(tmp_path / "last" / "model.safetensors")  # last/ holds the epoch's own weights
    for epoch, window in ((1, [1]), (2, [1, 2]), (3, [1, 2, 3]), (4, [2, 3, 4])):
        for name, shown in objective.shown[epoch - 1].items():
            by_hand = sum(raw[e][name] for e in window) / len(window)
            torch.testing.assert_close(shown, by_hand, rtol=1e-6, atol=1e-7)
    assert result.best_epoch == 2 and result.best_metrics == {"loss": 0.5}
    assert [r.metrics["loss"] for r in result.history] == [1.0, 0.5, 0.7, 0.9]
    best = nn.Linear(2, 1)
    load_model_weights(best, tmp_path / "best")
    for name, value in best.state_dict().items():
        assert torch.equal(value, objective.shown[1][name]) and torch.equal(objective.model.state_dict()[name], value)
    assert read_metadata(tmp_path / "best")["metadata"]["metrics"] == {"loss": 0.5}
    state = read_trainer_state(tmp_path / "last")
    assert len(state["recent_weights"]) == 2 and torch.equal(state["recent_weights"][0]["weight"], raw[2]["weight"])


def test_the_whole_recipe_resumes_bit_for_bit(tmp_path):
    options = {"progress": False, "seed": 7, "lr": 0.01, "patience": None, "schedule": "inverse-sqrt"}
    options.update(warmup_steps=5, accumulate=2, average_last=3)
    straight, straight_model = run(FitConfig(epochs=5, **options), checkpoint_dir=tmp_path / "a")
    run(FitConfig(epochs=2, **options), checkpoint_dir=tmp_path / "b")
    resumed, resumed_model = run(FitConfig(epochs=5, **options), checkpoint_dir=tmp_path / "b", resume=True)
    assert resumed.resumed_from == 2 and [r.steps for r in straight.history] == [6] * 5  # 12 batches, 2 per step
    keep = ("best_epoch", "best_metrics", "stop_reason")
    assert {k: getattr(resumed, k) for k in keep} == {k: getattr(straight, k) for k in keep}
    assert [(r.train_loss, r.metrics) for r in resumed.history] == [(r.train_loss, r.metrics) for r in straight.history]
    for a, b in zip(straight_model.state_dict().values(), resumed_model.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    for name in ("last", "best"):
        a = load_file(tmp_path / "a" / name / "model.safetensors")
        b = load_file(tmp_path / "b" / name / "model.safetensors")
        assert all(torch.equal(a[key], b[key]) for key in a)


# --------------------------------------------------------------------------------------------------- CLI


def test_the_cli_flags_reach_fit_config():
    parser = argparse.ArgumentParser()
    add_runtime_options(parser)
    add_training_options(parser, epochs=3, batch_size=8, lr=1e-3)
    flags = ["--schedule", "cosine", "--min-lr", "1e-5", "--warmup-steps", "40", "--accumulate", "4"]
    args = parser.parse_args(["--out", "o", *flags, "--average-last", "5"])
    settings = fit_config_from_args(args)
    assert (settings.schedule, settings.min_lr, settings.warmup_steps) == ("cosine", 1e-5, 40)
    assert (settings.accumulate, settings.average_last, settings.lr_decay) == (4, 5, 1.0)
    defaults = fit_config_from_args(parser.parse_args(["--out", "o"]))
    assert (defaults.schedule, defaults.accumulate, defaults.average_last, defaults.min_lr) == ("plateau", 1, 1, 0.0)
    with pytest.raises(SystemExit):
        parser.parse_args(["--out", "o", "--schedule", "linear"])
