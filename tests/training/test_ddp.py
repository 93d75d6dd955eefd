"""Two DDP processes on the CPU (gloo) train, evaluate and resume like one process with the same global batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from safetensors.torch import load_file

HERE = Path(__file__).resolve().parent
LAUNCHER = f"import sys\nsys.path.insert(0, {str(HERE)!r})\nfrom _toy_training import main\nmain()\n"
# No dropout (each rank draws its own masks); an epoch-seeded shuffle, the same on both ranks, as samplers do.
ARGS = ["--global-batch", "16", "--dropout", "0", "--epoch-shuffle"]

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs gloo")

ONE_ITEM = 100 / 95 + 1e-9  # accuracy points of one of the 95 validation items


def launch(command: list[str], directory: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    command = [*command, "--checkpoint-dir", str(directory), "--out", f"{directory}.json", *ARGS, *extra]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(name: str, process: subprocess.Popen) -> None:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, f"{name} run failed:\n{out}\n{err}"


def test_two_processes_match_one_process_with_the_same_global_batch(tmp_path):
    script = tmp_path / "train_toy.py"
    script.write_text(LAUNCHER)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script)]
    single = launch([sys.executable, str(script)], tmp_path / "single", "--epochs", "3")
    # The DDP run stops after 2 epochs and is resumed for the third, by both ranks from rank 0's checkpoint.
    finish("ddp", launch(torchrun, tmp_path / "ddp", "--epochs", "2"))
    finish("ddp resumed", launch(torchrun, tmp_path / "ddp", "--epochs", "3", "--resume"))
    finish("single", single)

    single = json.loads((tmp_path / "single.json").read_text())
    ddp = json.loads((tmp_path / "ddp.json").read_text())
    assert ddp["resumed_from"] == 2
    assert ddp["best_epoch"] == single["best_epoch"]
    assert len(ddp["history"]) == len(single["history"]) == 3
    for one, two in zip(single["history"], ddp["history"], strict=True):
        assert two["steps"] == one["steps"] == 12  # each rank: 12 steps of 8 items; the single process: of 16
        assert two["train_loss"] == pytest.approx(one["train_loss"], rel=1e-6, abs=1e-7)
        # Validation: the ranks score 48 and 47 items; correct counts and loss sums are added, not averaged. The
        # weights agree to ~1e-7, not bit for bit: one item at a near tie may go the other way on another CPU.
        assert abs(two["metrics"]["accuracy"] - one["metrics"]["accuracy"]) <= ONE_ITEM
        assert two["metrics"]["loss"] == pytest.approx(one["metrics"]["loss"], rel=1e-6, abs=1e-7)
    for name in ("last", "best"):
        expected = load_file(tmp_path / "single" / name / "model.safetensors")
        actual = load_file(tmp_path / "ddp" / name / "model.safetensors")
        assert expected.keys() == actual.keys()
        for key in expected:
            torch.testing.assert_close(actual[key], expected[key], rtol=0, atol=1e-5)
    # Rank 0 alone wrote the checkpoints: two directories, no leftovers of a concurrent write.
    assert sorted(p.name for p in (tmp_path / "ddp").iterdir()) == ["best", "last"]


def test_two_processes_accumulating_half_batches_match_one_process_on_whole_batches(tmp_path):
    # Each rank accumulates 2 batches of 4 items per step (DDP reduces only on the second): 16 items per step,
    # the same items as the single process's batches of 16.
    script = tmp_path / "train_toy.py"
    script.write_text(LAUNCHER)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script)]
    single = launch([sys.executable, str(script)], tmp_path / "single", "--epochs", "2")
    finish("ddp", launch(torchrun, tmp_path / "ddp", "--epochs", "2", "--global-batch", "8", "--accumulate", "2"))
    finish("single", single)
    single = json.loads((tmp_path / "single.json").read_text())
    ddp = json.loads((tmp_path / "ddp.json").read_text())
    for one, two in zip(single["history"], ddp["history"], strict=True):
        assert two["steps"] == one["steps"] == 12
        assert two["train_loss"] == pytest.approx(one["train_loss"], rel=1e-6, abs=1e-7)
        assert abs(two["metrics"]["accuracy"] - one["metrics"]["accuracy"]) <= ONE_ITEM  # a near tie, as above
    expected = load_file(tmp_path / "single" / "last" / "model.safetensors")
    actual = load_file(tmp_path / "ddp" / "last" / "model.safetensors")
    for key in expected:
        torch.testing.assert_close(actual[key], expected[key], rtol=0, atol=1e-5)


def test_two_processes_paused_by_the_time_budget_mid_epoch_resume_to_the_weights_of_a_run_never_paused(tmp_path):
    # Dropout on: each rank's generators are saved with the pause and put back by the resumed run.
    script = tmp_path / "train_toy.py"
    script.write_text(LAUNCHER)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script)]
    run = ("--epochs", "2", "--dropout", "0.1")
    finish("paused", launch(torchrun, tmp_path / "paused", *run, "--sleep", "0.05", "--max-minutes", "0.005"))
    paused = json.loads((tmp_path / "paused.json").read_text())
    assert paused["stop_reason"] == "time_budget" and paused["history"] == []  # 0.3 s: in epoch 1 (12 steps of 50 ms)
    assert paused["world_size"] == 2 and 1 <= paused["paused_epoch"]["steps"] < 12
    finish("resumed", launch(torchrun, tmp_path / "paused", *run, "--resume"))
    finish("straight", launch(torchrun, tmp_path / "straight", *run))
    resumed = json.loads((tmp_path / "paused.json").read_text())
    straight = json.loads((tmp_path / "straight.json").read_text())
    assert [r["steps"] for r in resumed["history"]] == [r["steps"] for r in straight["history"]] == [12, 12]
    # last/: trained exactly alike (best/ may hold the pause's validated weights, when they were the best seen)
    expected = load_file(tmp_path / "straight" / "last" / "model.safetensors")
    actual = load_file(tmp_path / "paused" / "last" / "model.safetensors")
    assert all(torch.equal(expected[key], actual[key]) for key in expected), "the weights differ"


LEAVER = """
import atexit
import torch.distributed as dist
from attnkit.training.distributed import init_distributed
context = init_distributed("gloo")
assert dist.is_initialized() and context.world_size == 2
atexit._run_exitfuncs()  # what the interpreter runs first at exit, while it is still whole
print("left" if not dist.is_initialized() else "still in the group")
"""


def test_a_group_the_library_joins_is_left_before_the_interpreter_shuts_down(tmp_path):
    """A gloo group left to interpreter finalisation can abort a rank that finished its work ("terminate called
    without an active exception"), so ``init_distributed`` leaves the group it created at exit."""
    script = tmp_path / "leave.py"
    script.write_text(LEAVER)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("left") == 2 and "still" not in done.stdout  # the ranks' lines may interleave
