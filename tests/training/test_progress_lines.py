"""Off a terminal (nohup, Slurm, CI) a run prints progress lines between its epoch lines, not only at epoch ends."""

from __future__ import annotations

import re

import torch
from _toy_training import ToyModel, ToyObjective, batch_functions, make_data, run

from attnkit.training.loop import FitConfig, fit


def test_progress_lines_off_a_terminal_say_where_the_epoch_is_its_pace_loss_elapsed_time_and_eta(capsys):
    torch.manual_seed(7)
    train, valid = make_data()
    train_batches, valid_batches = batch_functions(train, valid, 16)
    # progress_seconds ~0: a line after every batch (the default is one every 30 s); sized batches: an ETA
    config = FitConfig(epochs=1, seed=7, lr=0.01, patience=None, progress=True, progress_seconds=1e-9)
    fit(ToyObjective(ToyModel()), lambda epoch: list(train_batches(epoch)), valid_batches, config)
    lines = capsys.readouterr().err.strip().splitlines()
    progress = [line for line in lines if " batch " in line]
    pattern = r"epoch 1/1  batch (\d+)/12  [\d,.]+ rows/s  loss \d+\.\d{4}  elapsed \d+:\d\d  ETA \d+:\d\d \(epoch\)"
    assert [int(re.fullmatch(pattern, line).group(1)) for line in progress] == list(range(1, 13))
    assert lines[-2].startswith("epoch 1/1  train loss") and lines[-1].startswith("stopped after epoch 1")


def test_batches_without_a_length_get_lines_without_an_eta(capsys):
    run(FitConfig(epochs=1, seed=7, lr=0.01, patience=None, progress=True, progress_seconds=1e-9))
    progress = [line for line in capsys.readouterr().err.splitlines() if " batch " in line]
    assert len(progress) == 12 and "ETA" not in progress[0] and progress[0].startswith("epoch 1/1  batch 1  ")


def test_no_progress_lines_at_the_default_pace_of_a_short_run(capsys):
    run(FitConfig(epochs=1, seed=7, lr=0.01, patience=None, progress=True))
    assert " batch " not in capsys.readouterr().err
