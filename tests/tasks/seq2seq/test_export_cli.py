"""``attnkit export`` and ``attnkit translate --backend ctranslate2`` through the command line: the exported model
decodes as attnkit does (float32 greedy and beam), RNN checkpoints are refused in one line."""

from __future__ import annotations

import pytest

from attnkit.cli import main

pytest.importorskip("ctranslate2", reason="ctranslate2 (the deploy extra) is not installed")

TINY = ["--epochs", "2", "--batch-size", "32", "--no-progress", "--no-test", "--limit", "400"]


def test_export_then_translate_with_ctranslate2_gives_attnkit_s_tokens(dates_transformer, capsys):
    root = dates_transformer  # tests/tasks/seq2seq/conftest.py
    capsys.readouterr()
    assert main(["export", "--checkpoint", str(root / "run"), "--out", str(root / "ct2")]) == 0
    assert "float32 weights" in capsys.readouterr().out
    texts = ["--text", "4 March 1997", "--text", "03/04/1997", "--text", "July 1st, 2001"]
    for beam in ("1", "4"):
        assert main(["translate", "--checkpoint", str(root / "run"), "--beam", beam, *texts]) == 0
        native = capsys.readouterr().out
        assert (
            main(["translate", "--backend", "ctranslate2", "--checkpoint", str(root / "ct2"), "--beam", beam, *texts])
            == 0
        )
        assert capsys.readouterr().out == native
    assert main(["export", "--checkpoint", str(root / "run"), "--out", str(root / "ct2")]) == 2  # taken, no --overwrite
    capsys.readouterr()


def test_rnn_checkpoints_are_refused_in_one_line(tmp_path, capsys):
    argv = ["train", "seq2seq", "--data", "dates", "--model", "rnn", "--embed-dim", "8", "--hidden", "16", *TINY]
    assert main([*argv, "--epochs", "1", "--out", str(tmp_path / "rnn")]) == 0
    capsys.readouterr()
    assert main(["export", "--checkpoint", str(tmp_path / "rnn"), "--out", str(tmp_path / "ct2")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Transformer" in err
    assert not (tmp_path / "ct2").exists()
