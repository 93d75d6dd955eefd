"""A training run killed with SIGKILL mid-run resumes from its last checkpoint to exactly the uninterrupted result."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

HERE = Path(__file__).resolve().parent
LAUNCHER = f"import sys\nsys.path.insert(0, {str(HERE)!r})\nfrom _toy_training import main\nmain()\n"
EPOCHS = 6

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")


def launch(script: Path, directory: Path, *extra: str) -> subprocess.Popen:
    """Train the toy objective in a fresh interpreter, one thread (so that every run does identical arithmetic)."""
    command = [sys.executable, str(script), "--checkpoint-dir", str(directory), "--out", f"{directory}.json"]
    command += ["--epochs", str(EPOCHS), *extra]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("WORLD_SIZE", None)
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen) -> None:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, f"training failed:\n{out}\n{err}"


def comparable(path: Path) -> dict:
    result = json.loads(path.read_text())
    for record in result["history"]:
        record.pop("seconds")
    return {key: result[key] for key in ("best_epoch", "best_metrics", "history", "stop_reason")}


def test_a_run_killed_with_sigkill_resumes_to_the_uninterrupted_result(tmp_path):
    script = tmp_path / "train_toy.py"
    script.write_text(LAUNCHER)
    straight_dir, victim_dir = tmp_path / "straight", tmp_path / "victim"
    straight = launch(script, straight_dir)
    victim = launch(script, victim_dir, "--sleep", "0.03")  # >= 0.36 s per epoch: the kill lands mid-run

    first_checkpoint = victim_dir / "last" / "config.json"  # appears only complete (atomic rename)
    deadline = time.monotonic() + 90
    while not first_checkpoint.exists():
        assert victim.poll() is None, f"the run ended before its first checkpoint: {victim.communicate()}"
        assert time.monotonic() < deadline, "no checkpoint within 90 s"
        time.sleep(0.005)
    victim.send_signal(signal.SIGKILL)
    victim.communicate(timeout=30)
    assert victim.returncode == -signal.SIGKILL
    assert not Path(f"{victim_dir}.json").exists(), "the run had finished before the kill"

    resumed = launch(script, victim_dir, "--resume")
    finish(resumed)
    finish(straight)

    result = json.loads(Path(f"{victim_dir}.json").read_text())
    assert 1 <= result["resumed_from"] < EPOCHS, "the kill did not land mid-run"
    assert comparable(Path(f"{victim_dir}.json")) == comparable(Path(f"{straight_dir}.json"))
    assert len(result["history"]) == EPOCHS
    for name in ("last", "best"):
        for file in ("model.safetensors",) + (("trainer_state.safetensors",) if name == "last" else ()):
            expected, actual = load_file(straight_dir / name / file), load_file(victim_dir / name / file)
            assert expected.keys() == actual.keys()
            for key in expected:
                assert torch.equal(expected[key], actual[key]), f"{name}/{file}: {key} differs"
    assert sorted(p.name for p in victim_dir.iterdir()) == ["best", "last"]  # no temporaries left behind


def test_a_run_killed_with_sigkill_between_step_checkpoints_resumes_mid_epoch_to_the_same_weights(tmp_path):
    # last/ every step: the kill lands in the middle of an epoch, and the resumed run starts there (the batches
    # done skipped, every generator put back), ending byte for byte where a run never stopped ends.
    script = tmp_path / "train_toy.py"
    script.write_text(LAUNCHER)
    straight_dir, victim_dir = tmp_path / "straight", tmp_path / "victim"
    straight = launch(script, straight_dir)
    victim = launch(script, victim_dir, "--sleep", "0.03", "--save-every", "1")
    first_checkpoint = victim_dir / "last" / "config.json"
    deadline = time.monotonic() + 90
    while not first_checkpoint.exists():
        assert victim.poll() is None, f"the run ended before its first checkpoint: {victim.communicate()}"
        assert time.monotonic() < deadline, "no checkpoint within 90 s"
        time.sleep(0.005)
    time.sleep(0.1)  # a few steps more: the kill lands between two step checkpoints, or during one
    victim.send_signal(signal.SIGKILL)
    victim.communicate(timeout=30)
    assert victim.returncode == -signal.SIGKILL
    position = json.loads(first_checkpoint.read_text())["attnkit"]["metadata"].get("position")
    assert position is not None and 1 <= position["batches"] < 12, "the kill did not land mid-epoch"

    resumed = launch(script, victim_dir, "--resume", "--save-every", "1")
    finish(resumed)
    finish(straight)
    assert comparable(Path(f"{victim_dir}.json")) == comparable(Path(f"{straight_dir}.json"))
    for name in ("last", "best"):
        expected = load_file(straight_dir / name / "model.safetensors")
        actual = load_file(victim_dir / name / "model.safetensors")
        assert expected.keys() == actual.keys()
        assert all(torch.equal(expected[key], actual[key]) for key in expected), f"{name}: the weights differ"
    assert sorted(p.name for p in victim_dir.iterdir()) == ["best", "last"]


def test_a_streamed_run_killed_with_sigkill_mid_epoch_resumes_to_the_same_weights_and_clears_the_cache(tmp_path):
    # The target of issue #37: kill -9 in the middle of an epoch of a streamed file, then --resume: the weights of
    # a run never stopped, and no temporary folder left in the cache (the folder a killed id-cache writer leaves
    # while the shuffle pool fills, on files larger than the pool, is tested in tests/data/test_id_cache.py).
    import random

    generator, lines = random.Random(0), ["text,label"]
    for _ in range(1500):  # about 170 steps: the kill lands in the epoch, after its first step checkpoint
        label = generator.choice(["pos", "neg"])
        cue = {"pos": "good great", "neg": "bad awful"}[label].split()
        lines.append(
            " ".join(generator.choices([*cue, "the", "film", "was"], k=generator.randint(2, 10))) + "," + label
        )
    data = tmp_path / "train.csv"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ATTNKIT_CACHE": str(tmp_path / "cache")}
    env.pop("WORLD_SIZE", None)

    def train(out: Path, *extra: str) -> subprocess.Popen:
        command = [sys.executable, "-m", "attnkit.cli", "train", "classify", "--data", str(data), "--out", str(out),
                   "--model", "pooled", "--encoder", "none", "--embed-dim", "8", "--batch-size", "8", "--threads", "1",
                   "--streaming", "always", "--epochs", "1", "--save-every", "20", "--no-progress", *extra]  # fmt: skip
        return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    victim = train(tmp_path / "victim")
    first_checkpoint = tmp_path / "victim" / "last" / "config.json"
    deadline = time.monotonic() + 240
    while not first_checkpoint.exists():
        assert victim.poll() is None, f"the run ended before its first checkpoint: {victim.communicate()}"
        assert time.monotonic() < deadline, "no checkpoint within 240 s"
        time.sleep(0.005)
    victim.send_signal(signal.SIGKILL)
    victim.communicate(timeout=30)
    assert victim.returncode == -signal.SIGKILL
    assert json.loads(first_checkpoint.read_text())["attnkit"]["metadata"]["position"]["epoch"] == 1

    finish(train(tmp_path / "victim", "--resume"))
    finish(train(tmp_path / "straight"))
    assert list((tmp_path / "cache").rglob("*.tmp")) == []
    for name in ("last", "best"):
        expected = load_file(tmp_path / "straight" / name / "model.safetensors")
        actual = load_file(tmp_path / "victim" / name / "model.safetensors")
        assert all(torch.equal(expected[key], actual[key]) for key in expected), f"{name}: the weights differ"
