"""``attnkit train classify`` on a streamed file: the run it writes, --limit, --skip-bad-rows, one-line errors,
resume equal to an uninterrupted run, and two gloo ranks on rows that do not divide evenly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch.distributed as dist
from safetensors.torch import load_file

from _labelled_csv import write_csv
from attnkit.cli import main

FAST = ["--model", "pooled", "--encoder", "none", "--embed-dim", "8", "--batch-size", "8", "--threads", "1"]


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNKIT_CACHE", str(tmp_path / "cache"))


def train(data: Path, out: Path, *extra: str) -> dict:
    assert main(["train", "classify", "--data", str(data), "--out", str(out), *FAST, "--no-progress", *extra]) == 0
    return json.loads((out / "metrics.json").read_text())


def test_a_streamed_run_writes_its_counts_load_time_and_a_usable_checkpoint(tmp_path, capsys):
    data = write_csv(tmp_path / "train.csv", 301)
    test = write_csv(tmp_path / "test.csv", 40, seed=1)
    metrics = train(data, tmp_path / "run", "--streaming", "always", "--epochs", "2", "--test", str(test))
    details = metrics["details"]
    assert details["streamed"] and details["train_documents"] + details["held_out_rows"] == 301
    assert sum(details["label_counts"].values()) == details["train_documents"]
    assert details["steps_per_epoch"] == -(-details["train_documents"] // 8)
    assert details["load_seconds"] >= 0 and not details["scan_cached"]
    assert metrics["test"]["count"] == 40
    out = capsys.readouterr().out
    assert "labels: " in out and "training rows" in out
    assert main(["evaluate", "--checkpoint", str(tmp_path / "run"), "--data", str(test), "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["count"] == 40
    again = train(data, tmp_path / "again", "--streaming", "always", "--epochs", "1")
    assert again["details"]["scan_cached"]


def test_limit_reads_only_the_first_rows_both_ways(tmp_path):
    data = write_csv(tmp_path / "train.csv", 300)
    streamed = train(data, tmp_path / "s", "--streaming", "always", "--epochs", "1", "--limit", "100")
    assert streamed["details"]["train_documents"] + streamed["details"]["held_out_rows"] == 100
    memory = train(data, tmp_path / "m", "--streaming", "never", "--epochs", "1", "--limit", "100")
    assert memory["details"]["train_documents"] + memory["details"]["valid_documents"] == 100
    assert "load_seconds" in memory["details"]


def test_a_bad_row_deep_in_the_file_is_one_line_or_skipped_and_counted(tmp_path, capsys):
    data = write_csv(tmp_path / "train.csv", 300)
    with data.open("a", encoding="utf-8") as handle:
        handle.write("no label here\n")
    code = main(["train", "classify", "--data", str(data), "--out", str(tmp_path / "bad"), *FAST, "--streaming",
                 "always"])  # fmt: skip
    assert code == 2
    assert capsys.readouterr().err.strip() == f"attnkit: error: {data}:302: expected 2 fields as in the header, found 1"
    assert not (tmp_path / "bad").exists()
    metrics = train(data, tmp_path / "skip", "--skip-bad-rows", "--epochs", "1")
    assert metrics["details"]["bad_rows_skipped"] == 1


def test_resumed_streamed_run_equals_an_uninterrupted_one(tmp_path):
    data = write_csv(tmp_path / "train.csv", 203)
    train(data, tmp_path / "whole", "--streaming", "always", "--epochs", "3", "--patience", "9")
    train(data, tmp_path / "parts", "--streaming", "always", "--epochs", "2", "--patience", "9")
    resumed = train(data, tmp_path / "parts", "--streaming", "always", "--epochs", "3", "--patience", "9", "--resume")
    whole = json.loads((tmp_path / "whole" / "metrics.json").read_text())
    assert resumed["best_valid"] == whole["best_valid"]
    for name in ("last", "best"):
        expected = load_file(tmp_path / "whole" / name / "model.safetensors")
        actual = load_file(tmp_path / "parts" / name / "model.safetensors")
        assert all((expected[k] == actual[k]).all() for k in expected)


@pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs gloo")
def test_two_gloo_ranks_on_uneven_rows_run_equal_steps_and_finish(tmp_path):
    data = write_csv(tmp_path / "train.csv", 158)  # 141 training rows: one rank's stride is a row short
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ATTNKIT_CACHE": str(tmp_path / "cache")}
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m",
               "attnkit.cli", "train", "classify", "--data", str(data), "--out", str(tmp_path / "ddp"), *FAST,
               "--streaming", "always", "--epochs", "2", "--device", "cpu", "--no-progress"]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    metrics = json.loads((tmp_path / "ddp" / "metrics.json").read_text())
    train_rows = metrics["details"]["train_documents"]
    assert train_rows == 141  # odd, so the strides are 71 and 70 rows: the short one repeats its first row
    assert metrics["details"]["steps_per_epoch"] == 9  # ceil(71 / 8) on both ranks
    history = (tmp_path / "ddp" / "metrics.csv").read_text().splitlines()
    assert [int(row.split(",")[3]) for row in history[1:]] == [9, 9]  # the steps column: both epochs complete


def weights(run: Path) -> dict:
    return load_file(run / "last" / "model.safetensors")


def test_later_epochs_and_runs_read_ids_that_train_the_same_model_and_a_changed_file_is_read_again(
    tmp_path, monkeypatch
):
    data = write_csv(tmp_path / "train.csv", 150)
    first = train(data, tmp_path / "first", "--streaming", "always", "--epochs", "2", "--patience", "9")
    assert first["details"]["epochs_read_as_ids"] == 1  # epoch 1 read the text and kept its ids
    again = train(data, tmp_path / "again", "--streaming", "always", "--epochs", "2", "--patience", "9")
    assert again["details"]["epochs_read_as_ids"] == 2
    assert all((weights(tmp_path / "first")[k] == v).all() for k, v in weights(tmp_path / "again").items())
    changed = write_csv(data, 150, seed=7)  # the same path, other rows
    after = train(changed, tmp_path / "after", "--streaming", "always", "--epochs", "2", "--patience", "9")
    assert after["details"]["epochs_read_as_ids"] == 1  # the old ids were not used
    monkeypatch.setenv("ATTNKIT_CACHE", str(tmp_path / "fresh-cache"))
    fresh = train(changed, tmp_path / "fresh", "--streaming", "always", "--epochs", "2", "--patience", "9")
    assert all((weights(tmp_path / "fresh")[k] == v).all() for k, v in weights(tmp_path / "after").items())
    assert fresh["best_valid"] == after["best_valid"]


def test_held_out_rows_beyond_what_validation_keeps_are_said_to_be_unused(tmp_path, capsys, monkeypatch):
    """Streamed validation keeps at most max_valid_rows of the rows the hash holds out: the run says how many it
    reads and that the others are neither trained on nor validated on (#37)."""
    from attnkit.data.classify.text_stream import TextFileStream

    defaults = {**TextFileStream.__init__.__kwdefaults__, "max_valid_rows": 3}
    monkeypatch.setattr(TextFileStream.__init__, "__kwdefaults__", defaults)
    metrics = train(write_csv(tmp_path / "train.csv", 301), tmp_path / "run", "--streaming", "always", "--epochs", "1")
    held_out = metrics["details"]["held_out_rows"]
    assert held_out > 3
    out = capsys.readouterr().out
    assert f"validation reads 3 of the {held_out:,} held-out rows" in out and "neither trained on nor validated" in out
