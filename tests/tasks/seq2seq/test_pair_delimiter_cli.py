"""``--delimiter`` for seq2seq pair files on the real command line (issue #26): ``train seq2seq`` (in memory and
streamed) and ``evaluate`` read a ``;``-separated file; a bad separator, or one for JSONL or a built-in task, is
one ``attnkit: error:`` line (exit 2) with nothing written."""

from __future__ import annotations

import json
import os

import pytest

from _cli_helpers import assert_user_error, attnkit

TINY = ["--model", "rnn", "--embed-dim", "8", "--hidden", "16", "--epochs", "1", "--batch-size", "16"]
TINY += ["--no-progress", "--no-test", "--threads", "1"]


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    """120 lower -> upper case pairs separated by ';' in a .txt file (which would otherwise be read as TSV)."""
    root = tmp_path_factory.mktemp("delimiter")
    words = [f"{a}{b}{c}" for a in "abcde" for b in "fghij" for c in "klmnopqrstuvwx"][:120]
    lines = ["source;target", '"a;b";"A;B"'] + [f"{w};{w.upper()}" for w in words]
    (root / "pairs.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setitem(os.environ, "ATTNKIT_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("streaming", ["never", "always"])
def test_train_and_evaluate_read_a_semicolon_file(pairs, tmp_path, streaming):
    data = str(pairs / "pairs.txt")
    out = tmp_path / "run"
    trained = attnkit("train", "seq2seq", "--data", data, "--delimiter", ";", "--streaming", streaming, *TINY,
                      "--out", str(out))  # fmt: skip
    assert trained.returncode == 0, trained.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["details"].get("streamed", False) is (streaming == "always")
    evaluated = attnkit("evaluate", "--checkpoint", str(out), "--data", data, "--delimiter", ";", "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)["count"] == 121  # every distinct source, the quoted "a;b" one too
    if streaming == "never":
        without = attnkit("evaluate", "--checkpoint", str(out), "--data", data)
        assert without.returncode == 2 and "pairs.txt:1: expected 2 tab-separated fields" in without.stderr


def test_a_bad_delimiter_is_one_line_and_writes_nothing(pairs, tmp_path):
    argv = ["train", "seq2seq", "--data", str(pairs / "pairs.txt"), *TINY]
    bad = attnkit(*argv, "--delimiter", ";;", "--out", str(tmp_path / "bad"))
    assert_user_error(bad, "--delimiter", "one character")
    assert not (tmp_path / "bad").exists()
    (tmp_path / "pairs.jsonl").write_text('{"source": "a", "target": "A"}\n' * 30, encoding="utf-8")
    argv[3] = str(tmp_path / "pairs.jsonl")
    for streaming in ("never", "always"):
        jsonl = attnkit(*argv, "--streaming", streaming, "--delimiter", ";", "--out", str(tmp_path / "jsonl"))
        assert_user_error(jsonl, "pairs.jsonl", "--delimiter is for CSV-like files")
        assert not (tmp_path / "jsonl").exists()


def test_a_delimiter_for_a_built_in_task_is_refused(tmp_path):
    result = attnkit("train", "seq2seq", "--data", "dates", "--delimiter", ";", *TINY, "--out", str(tmp_path / "r"))
    assert_user_error(result, "--delimiter is for pair files", "'dates'")
    assert not (tmp_path / "r").exists()


def test_help_names_the_delimiter():
    for command in (["train", "seq2seq"], ["evaluate"]):
        shown = attnkit(*command, "--help")
        assert shown.returncode == 0 and "--delimiter DELIMITER" in shown.stdout and "'tab'" in shown.stdout
