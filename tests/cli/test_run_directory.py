"""Run directories that never lose work (issue #27), through the real command line: every refusal is exit 2, one
``attnkit: error:`` line naming the option, path or field, no traceback, and the run already there byte-for-byte
intact (hashed before and after) — checked before anything is written, one writer at a time, resume means resume."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from _cli_helpers import ONE_EPOCH, assert_user_error, attnkit, dead_pid, tree_hash, write_reviews
from attnkit.cli import main


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """``(root, run)``: a finished one-epoch pooled classifier run on ``root/train.csv``."""
    root = tmp_path_factory.mktemp("rundir")
    write_reviews(root / "train.csv")
    assert main(["train", "classify", "--data", str(root / "train.csv"), *ONE_EPOCH, "--out", str(root / "run")]) == 0
    return root, root / "run"


@pytest.fixture
def run(finished, tmp_path):
    """A copy of the finished run, and the training file, for one test to try to spoil."""
    root, source = finished
    shutil.copytree(source, tmp_path / "run")
    return tmp_path / "run", root / "train.csv"


def train(data, out, *extra: str) -> subprocess.CompletedProcess:
    return attnkit("train", "classify", "--data", str(data), *ONE_EPOCH, "--out", str(out), *extra)


def test_the_run_records_what_it_wrote_and_its_inputs(run):
    out, data = run
    manifest = json.loads((out / "attnkit_run.json").read_text())
    assert manifest["command"] == "train classify" and manifest["settings"]["model"] == "pooled"
    assert set(manifest["written"]) == {"best", "last", "metrics.json", "metrics.csv", "tokenizer"}
    assert manifest["inputs"]["data"]["path"] == str(data.resolve())
    assert (
        manifest["inputs"]["data"]["bytes"] == data.stat().st_size and len(manifest["inputs"]["data"]["sha256"]) == 64
    )
    assert not (out / ".attnkit.lock").exists()  # released at the end


def test_a_refused_overwrite_deletes_nothing(run, tmp_path):
    """Case 1: vectors whose size is not --embed-dim are refused before the old run is touched."""
    out, data = run
    vectors = tmp_path / "bad.vec"
    vectors.write_text("2 5\ngreat 0.1 0.2 0.3 0.4 0.5\nawful 0.5 0.4 0.3 0.2 0.1\n")
    before = tree_hash(out)
    assert_user_error(train(data, out, "--overwrite", "--embeddings", str(vectors)), "5-dimensional", "--embed-dim 5")
    assert tree_hash(out) == before


def test_resume_never_starts_afresh(run, tmp_path):
    """Case 2: --resume without last/ is refused, naming it (in a finished run and in an empty directory)."""
    out, data = run
    shutil.rmtree(out / "last")
    before = tree_hash(out)
    assert_user_error(train(data, out, "--resume"), f"{out / 'last'} does not exist", "nothing to resume")
    assert tree_hash(out) == before
    assert_user_error(train(data, tmp_path / "empty", "--resume"), "nothing to resume", "drop --resume")
    assert not (tmp_path / "empty").exists()


def test_resume_names_every_difference_data_included(run, tmp_path):
    """Case 3: other data, another model or a changed file are refused, each difference named."""
    out, data = run
    other = write_reviews(tmp_path / "other.csv", suffix=" !")
    before = tree_hash(out)
    line = assert_user_error(train(other, out, "--resume", "--model", "han", "--lr", "0.01"), "--resume")
    assert "model: pooled then, han now" in line and "lr: 0.002 then, 0.01 now" in line
    assert f"data: {data.resolve()} then, {other.resolve()} now" in line
    changed = tmp_path / "copy.csv"
    shutil.copy(data, changed)
    manifest = json.loads((out / "attnkit_run.json").read_text())
    manifest["inputs"]["data"]["path"] = str(changed.resolve())  # the same path, whose content has since changed
    (out / "attnkit_run.json").write_text(json.dumps(manifest))
    with changed.open("a") as handle:
        handle.write('"one more review",pos\n')
    before = tree_hash(out)
    assert_user_error(train(changed, out, "--resume"), "has changed since the run started", "sha256")
    assert tree_hash(out) == before


def test_overwrite_removes_only_what_the_run_wrote_and_takes_over_a_stale_lock(run):
    """Case 4 (a report the user wrote into RUN/ survives) and case 5's stale lock (its owner is dead)."""
    out, data = run
    (out / "report.html").write_text("<p>my explain report</p>")
    (out / "notes.txt").write_text("why I ran this")
    (out / ".attnkit.lock").write_text(json.dumps({"pid": dead_pid(), "host": os.uname().nodename}))
    result = train(data, out, "--overwrite")
    assert result.returncode == 0, result.stderr
    assert (out / "report.html").read_text() == "<p>my explain report</p>"
    assert (out / "notes.txt").read_text() == "why I ran this"
    assert not (out / ".attnkit.lock").exists() and not list(out.glob(".attnkit-replaced-*"))
    assert json.loads((out / "metrics.json").read_text())["epochs_run"] == 1


def test_one_writer_at_a_time(run, tmp_path):
    """Case 5: while a live process holds the run, a second training (new, --resume or --overwrite) is refused at
    start, naming the owner's pid; the first's files are untouched."""
    out, data = run
    code = (
        "import sys, time\nfrom attnkit.tasks.run.lock import acquire\n"
        f"acquire({str(out)!r}, command='train classify')\nprint('locked', flush=True)\ntime.sleep(900)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = tree_hash(out)
        for extra in (("--resume",), ("--overwrite",)):
            assert_user_error(train(data, out, *extra), f"attnkit process {holder.pid}", "is writing this run")
        assert tree_hash(out) == before
    finally:
        holder.kill()
        holder.wait()


def test_tensorboard_is_checked_with_the_other_paths(run, tmp_path):
    """Case 6: a file where the log directory goes is refused before anything is written (old run or new one)."""
    out, data = run
    (out / "tensorboard").write_text("not a directory")
    before = tree_hash(out)
    assert_user_error(train(data, out, "--overwrite", "--tensorboard"), f"--tensorboard: {out / 'tensorboard'}")
    assert tree_hash(out) == before
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "tensorboard").write_text("not a directory")
    assert_user_error(train(data, fresh, "--tensorboard"), "exists and is not a directory")
    assert tree_hash(fresh) == {"tensorboard": tree_hash(out)["tensorboard"]}


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere: permissions cannot refuse it")
def test_an_unwritable_tensorboard_directory_is_refused_first(run):
    out, data = run
    (out / "tensorboard").mkdir()
    (out / "tensorboard").chmod(0o500)
    try:
        before = tree_hash(out)
        assert_user_error(train(data, out, "--overwrite", "--tensorboard"), "no permission to write")
        assert tree_hash(out) == before
    finally:
        (out / "tensorboard").chmod(0o700)


def test_a_failure_before_the_first_checkpoint_puts_the_old_run_back(run, tmp_path):
    """Beyond the list: --overwrite whose training fails after every check passed (a vector file whose header is
    right and whose body is not) leaves the old run exactly as it was, and nothing of the new one."""
    out, data = run
    vectors = tmp_path / "half.vec"
    vectors.write_text("2 8\ngreat 0.1 0.2\n")
    before = tree_hash(out)
    assert_user_error(train(data, out, "--overwrite", "--embeddings", str(vectors)), str(vectors))
    assert tree_hash(out) == before


def test_the_run_directory_and_its_manifest_cannot_be_confused(run, tmp_path):
    """Beyond the list: --out naming a checkpoint (RUN/best) is refused; a hand-edited manifest is one line."""
    out, data = run
    before = tree_hash(out)
    assert_user_error(train(data, out / "best", "--overwrite"), f"{out / 'best'}: is a checkpoint directory")
    manifest = json.loads((out / "attnkit_run.json").read_text())
    manifest["written"] = "best"
    (out / "attnkit_run.json").write_text(json.dumps(manifest))
    before = tree_hash(out)
    for extra in ("--resume", "--overwrite"):
        assert_user_error(train(data, out, extra), f"{out / 'attnkit_run.json'}", "'written' must be a list")
    assert tree_hash(out) == before
