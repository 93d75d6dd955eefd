"""``--init-from NAME|PATH``: a run starts from trained weights with a fresh optimiser, and the minutes behind
them are carried into the new run's record (and so into the card of a model shipped from it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from torch import nn

import attnkit.pretrained as pretrained
from attnkit.checkpointing import CheckpointError, save_checkpoint
from attnkit.pretrained import CARD_FILE
from attnkit.tasks import run_training
from attnkit.training.init_from import earlier_minutes, resolve_init_from
from attnkit.training.loop import FitConfig, fit

VISION = ["--data", "digits", "--limit", "40", "--no-progress", "--threads", "1"]


class Line:
    """``Linear(2, 1)`` fitted to 1 (a Objective for fit)."""

    def __init__(self, seed: int):
        torch.manual_seed(seed)
        self.model = nn.Linear(2, 1)

    def loss(self, batch):
        return (self.model(batch) - 1).pow(2).mean()

    def evaluate(self, batches):
        return {"loss": sum(self.loss(batch).item() for batch in batches)}


def test_fit_starts_a_new_run_from_the_given_weights_and_a_resumed_run_from_its_own(tmp_path):
    trained = Line(seed=1)
    save_checkpoint(tmp_path / "from", trained.model)
    start = {name: value.clone() for name, value in trained.model.state_dict().items()}
    settings = FitConfig(epochs=1, lr=1e-9, patience=None, select_metric="loss", select_mode="min", progress=False)
    objective = Line(seed=2)
    batches = [torch.ones(4, 2)]
    fit(
        objective,
        lambda epoch: batches,
        lambda: batches,
        settings,
        checkpoint_dir=tmp_path / "run",
        init_from=tmp_path / "from",
    )
    for name, value in objective.model.state_dict().items():
        torch.testing.assert_close(value, start[name], atol=1e-7, rtol=0)  # one step of 1e-9 away
    settings.epochs = 2  # resuming: the run's last/ wins over the init weights
    save_checkpoint(tmp_path / "from", Line(seed=3).model)
    again = Line(seed=4)
    fit(
        again,
        lambda epoch: batches,
        lambda: batches,
        settings,
        checkpoint_dir=tmp_path / "run",
        resume=True,
        init_from=tmp_path / "from",
    )
    for name, value in again.model.state_dict().items():
        torch.testing.assert_close(value, start[name], atol=1e-7, rtol=0)


@pytest.fixture(scope="module")
def first_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("init") / "first"
    threads = torch.get_num_threads()
    try:
        run_training("vision", [*VISION, "--epochs", "1", "--out", str(out)])
    finally:
        torch.set_num_threads(threads)
    return out


def test_a_vision_run_continues_from_a_run_with_its_minutes_counted(first_run, tmp_path):
    out = tmp_path / "second"
    threads = torch.get_num_threads()
    try:  # another architecture on the command line: the checkpoint's is used
        run_training(
            "vision",
            [
                *VISION,
                "--epochs",
                "5",
                "--max-steps",
                "1",
                "--lr",
                "1e-9",
                "--heads",
                "2",
                "--init-from",
                str(first_run),
                "--out",
                str(out),
            ],
        )
    finally:
        torch.set_num_threads(threads)
    before = load_file(first_run / "best" / "model.safetensors")
    after = load_file(out / "best" / "model.safetensors")
    assert before.keys() == after.keys()
    learned = [key for key in before if before[key].is_floating_point() and "running_" not in key]
    moved = max((after[key] - before[key]).abs().max().item() for key in learned)
    assert moved < 1e-6  # one step at lr 1e-9 from the first run's weights (batch norm's statistics move on)
    first = json.loads((first_run / "metrics.json").read_text())
    second = json.loads((out / "metrics.json").read_text())
    assert second["stop_reason"] == "max_steps" and second["epochs_run"] == 1
    assert second["details"]["init_from"]["training_minutes"] == round(first["train_seconds"] / 60, 2)
    assert earlier_minutes(out / "best") == pytest.approx(
        second["train_seconds"] / 60 + round(first["train_seconds"] / 60, 2)
    )


def test_init_from_a_shipped_name_counts_its_card_and_refuses_another_kind(first_run, tmp_path, monkeypatch):
    shelf = tmp_path / "shelf"
    (shelf / "seed-model").mkdir(parents=True)
    for path in (first_run / "best").iterdir():
        (shelf / "seed-model" / path.name).write_bytes(path.read_bytes())
    (shelf / "seed-model" / CARD_FILE).write_text(json.dumps({"training_minutes": 12.5}))
    monkeypatch.setattr(pretrained, "SHELF", shelf)
    init = resolve_init_from("seed-model", "vision")
    assert init.checkpoint == shelf / "seed-model" and init.minutes == 12.5 and init.config["heads"] == 4
    assert init.record()["checkpoint"] == "seed-model"
    with pytest.raises(CheckpointError, match=r"not a classifier checkpoint \(kind='vision'\)"):
        resolve_init_from("seed-model", "classifier")
    with pytest.raises(CheckpointError, match=r"not a shipped model's name \(shipped models: seed-model\)"):
        resolve_init_from("seed-modle", "vision")
