"""What ``attnkit export`` leaves and reads back (issue #27, cases 7 and 8), through the real command line: stale
partial exports of dead processes are cleaned, an existing export names ``--overwrite``, and a tampered manifest
or a hand-edited seq2seq config is one ``attnkit: error:`` line naming the file and the field."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from _cli_helpers import assert_user_error, attnkit, dead_pid, tree_hash
from attnkit.cli import main

pytest.importorskip("ctranslate2", reason="ctranslate2 (the deploy extra) is not installed")


def test_export_cleans_stale_partials_restores_a_moved_export_and_names_overwrite(dates_transformer, tmp_path):
    """Case 7: an export killed mid-write leaves ``.NAME.partial-PID``; the next export deletes it (a live
    process's is left alone), and an existing export is refused naming --overwrite."""
    run = dates_transformer / "run"
    out = tmp_path / "exp"
    stale = tmp_path / f".exp.partial-{dead_pid()}"
    stale.mkdir()
    (stale / "model.bin").write_bytes(b"\0" * 4096)
    live = tmp_path / f".exp.partial-{os.getpid()}"
    live.mkdir()
    result = attnkit("export", "--checkpoint", str(run), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert not stale.exists() and live.exists()
    before = tree_hash(out)
    line = assert_user_error(attnkit("export", "--checkpoint", str(run), "--out", str(out)), "--overwrite")
    assert "--force" not in line and tree_hash(out) == before
    # killed between its two renames: the earlier export waits in .NAME.old-PID while NAME is missing
    moved = tmp_path / f".exp.old-{dead_pid()}"
    out.rename(moved)
    assert_user_error(attnkit("export", "--checkpoint", str(run), "--out", str(out)), "holds an export already")
    assert tree_hash(out) == before and not moved.exists()


@pytest.mark.parametrize(
    "edit, fragments",
    [
        (lambda m: m["files"]["model.bin"].update(sha256=3), ["files['model.bin'].sha256", "must be a string"]),
        (lambda m: m.pop("tokenizers"), ["'tokenizers' is missing"]),
        (lambda m: m.update(quantization=8), ["'quantization' must be one of"]),
    ],
    ids=["wrong-type", "missing", "bad-value"],
)
def test_a_tampered_export_manifest_is_one_line(dates_transformer, tmp_path, edit, fragments):
    """Case 8: the export manifest is read through its schema."""
    out = tmp_path / "exp"
    if not out.exists():
        assert main(["export", "--checkpoint", str(dates_transformer / "run"), "--out", str(out)]) == 0
    manifest = json.loads((out / "attnkit_export.json").read_text())
    edit(manifest)
    (out / "attnkit_export.json").write_text(json.dumps(manifest))
    result = attnkit("translate", "--backend", "ctranslate2", "--checkpoint", str(out), "--text", "2001-03-04")
    assert_user_error(result, str(out / "attnkit_export.json"), *fragments)


def test_a_seq2seq_dim_given_as_a_string_is_one_line(dates_transformer, tmp_path):
    """Case 8: a seq2seq ``dim`` given as a string names the file and the field."""
    dim = tmp_path / "dim"
    shutil.copytree(dates_transformer / "run" / "best", dim)
    config = json.loads((dim / "config.json").read_text())
    config["model"]["dim"] = str(config["model"]["dim"])
    (dim / "config.json").write_text(json.dumps(config))
    result = attnkit("translate", "--checkpoint", str(dim), "--text", "2001-03-04")
    assert_user_error(result, str(dim / "config.json"), "'model.dim' must be an integer", "(str)")
