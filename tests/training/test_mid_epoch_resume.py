"""``attnkit train`` killed in the middle of an epoch resumes there (``--save-every``), and a time budget pauses an
epoch there: a streamed file and an in-memory one end with the weights of a run never stopped, byte for byte, and
the cache keeps no temporary folder (the kill -9 of a process is in test_resume_after_sigkill.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _toy_training import run
from safetensors.torch import load_file

import attnkit.training._epoch as epoch_module
from _labelled_csv import write_csv
from attnkit.checkpointing import read_metadata
from attnkit.cli import main
from attnkit.training.loop import FitConfig

FAST = ["--model", "pooled", "--encoder", "none", "--embed-dim", "8", "--batch-size", "8", "--threads", "1"]


class Killed(BaseException):
    """Stands for a kill: nothing in attnkit catches it, so the run stops where it was."""


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNKIT_CACHE", str(tmp_path / "cache"))


def train(data: Path, out: Path, *extra: str, progress: bool = False) -> dict:
    quiet = [] if progress else ["--no-progress"]
    assert main(["train", "classify", "--data", str(data), "--out", str(out), *FAST, *quiet, *extra]) == 0
    return json.loads((out / "metrics.json").read_text())


def kill_at_step(monkeypatch, step: int) -> None:
    """The run dies in its optimiser step ``step`` (counted from 1 over the process), before taking it."""
    original, calls = epoch_module._step, [0]

    def dying(*args, **kwargs):
        calls[0] += 1
        if calls[0] == step:
            raise Killed
        return original(*args, **kwargs)

    monkeypatch.setattr(epoch_module, "_step", dying)


def assert_same_weights(one: Path, other: Path, names: tuple[str, ...] = ("last", "best")) -> None:
    for name in names:
        expected, actual = load_file(one / name / "model.safetensors"), load_file(other / name / "model.safetensors")
        assert expected.keys() == actual.keys()
        assert all((expected[key] == actual[key]).all() for key in expected), f"{name}: the weights differ"


@pytest.mark.parametrize("streaming", ["always", "never"])
def test_a_run_killed_mid_epoch_resumes_at_its_last_step_checkpoint_to_the_same_weights(
    tmp_path, monkeypatch, streaming
):
    data = write_csv(tmp_path / "train.csv", 500)  # about 57 steps an epoch (streamed), 57 in memory
    settings = ["--streaming", streaming, "--epochs", "2", "--patience", "9", "--save-every", "5"]
    whole = train(data, tmp_path / "whole", *settings)
    steps = whole["details"].get("steps_per_epoch") or 57
    with monkeypatch.context() as patch:
        kill_at_step(patch, steps + 23)  # in epoch 2, three steps after the step checkpoint of step steps + 20
        with pytest.raises(Killed):
            train(data, tmp_path / "killed", *settings)
    position = json.loads((tmp_path / "killed" / "last" / "config.json").read_text())["attnkit"]["metadata"]
    assert position["epoch"] == 1 and 1 <= position["position"]["batches"] < steps
    resumed = train(data, tmp_path / "killed", *settings, "--resume")
    assert resumed["best_valid"] == whole["best_valid"] and resumed["epochs_run"] == whole["epochs_run"] == 2
    assert_same_weights(tmp_path / "whole", tmp_path / "killed")
    leftovers = [path.name for path in (tmp_path / "cache").rglob("*.tmp")] if streaming == "always" else []
    assert leftovers == []


def test_the_time_budget_pauses_a_streamed_epoch_and_resume_reads_the_rest_of_it(tmp_path, capsys):
    data = write_csv(tmp_path / "train.csv", 500)
    settings = ["--streaming", "always", "--epochs", "1"]
    whole = train(data, tmp_path / "whole", *settings)
    steps = whole["details"]["steps_per_epoch"]
    capsys.readouterr()
    paused = train(data, tmp_path / "paused", *settings, "--max-minutes", "0.0001", progress=True)  # 6 ms: a step
    assert paused["stop_reason"] == "time_budget" and paused["epochs_run"] == 0
    assert paused["paused_epoch"]["epoch"] == 1 and paused["paused_epoch"]["partial"]
    err = capsys.readouterr().err
    assert "stopped in epoch 1 after its batch" in err and "(the time budget)" in err
    position = json.loads((tmp_path / "paused" / "last" / "config.json").read_text())["attnkit"]["metadata"]
    assert position["epoch"] == 0 and 1 <= position["position"]["batches"] < steps
    rows = (tmp_path / "paused" / "metrics.csv").read_text().splitlines()[1:]
    assert len(rows) == 1 and rows[0].split(",")[4] == "1"  # the paused epoch's row, partial
    resumed = train(data, tmp_path / "paused", *settings, "--resume", "--max-minutes", "60", progress=True)
    assert "is cumulative over the run" in capsys.readouterr().err
    assert resumed["stop_reason"] == "epochs" and resumed["world_size"] == 1
    history = (tmp_path / "paused" / "metrics.csv").read_text().splitlines()
    assert [int(row.split(",")[3]) for row in history[1:]] == [steps]  # every batch of the epoch, none twice
    # last/ trained exactly alike; best/ may hold the pause's validated weights, were they the best seen
    assert_same_weights(tmp_path / "whole", tmp_path / "paused", ("last",))


def test_save_every_minutes_writes_last_at_the_first_step_past_the_interval_and_resume_goes_on_there(
    tmp_path, monkeypatch
):
    config = FitConfig(epochs=2, seed=7, lr=0.01, patience=None, progress=False, save_every_minutes=1e-9)
    with monkeypatch.context() as patch:
        kill_at_step(patch, 17)  # the toy has 12 steps an epoch: dies in step 5 of epoch 2
        with pytest.raises(Killed):
            run(config, checkpoint_dir=tmp_path / "killed")
    metadata = read_metadata(tmp_path / "killed" / "last")["metadata"]
    assert metadata["epoch"] == 1 and metadata["position"] == {"epoch": 2, "batches": 4}  # saved after every step
    resumed, _ = run(config, checkpoint_dir=tmp_path / "killed", resume=True)
    straight, _ = run(config, checkpoint_dir=tmp_path / "straight")
    assert resumed.resumed_from == 1 and [r.steps for r in resumed.history] == [12, 12]
    assert [(r.train_loss, r.metrics) for r in resumed.history] == [(r.train_loss, r.metrics) for r in straight.history]
    assert_same_weights(tmp_path / "straight", tmp_path / "killed")
