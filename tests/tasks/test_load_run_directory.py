"""Every task's loader follows the one checkpoint rule: a run directory means its ``best/``, a name a shipped model."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from attnkit.checkpointing import CheckpointError
from attnkit.pretrained import shipped_path
from attnkit.tasks.classify.inference import load_classifier
from attnkit.tasks.vision.inference import load_vision


def _as_run_directory(name: str, tmp_path: Path) -> Path:
    """A run directory whose ``best/`` is a copy of the shipped model ``name``."""
    run = tmp_path / "run"
    shutil.copytree(shipped_path(name), run / "best")
    return run


def test_classifier_loads_from_a_run_directory_and_a_shipped_name(tmp_path: Path) -> None:
    run = _as_run_directory("r8", tmp_path)
    text = "oil prices rose sharply as opec cut output"
    from_run = load_classifier(run, device="cpu").predict([text])[0]
    from_name = load_classifier("r8", device="cpu").predict([text])[0]
    assert from_run.label == from_name.label
    assert from_run.probabilities == pytest.approx(from_name.probabilities)


def test_vision_model_loads_from_a_run_directory(tmp_path: Path) -> None:
    run = _as_run_directory("digits", tmp_path)
    from_run = load_vision(run, device="cpu")
    from_name = load_vision("digits", device="cpu")
    for ours, theirs in zip(from_run.model.state_dict().values(), from_name.model.state_dict().values(), strict=True):
        assert torch.equal(ours, theirs)


def test_a_directory_that_is_neither_kind_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="not a checkpoint or run directory"):
        load_classifier(tmp_path, device="cpu")
