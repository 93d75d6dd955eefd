"""Files read the same everywhere (#37, item 4): ``predict``, ``explain`` (and ``faithfulness``, through the same
:func:`attnkit.tasks.options.read_file_texts`) read a CSV/TSV/JSONL file's text column as ``evaluate`` does — the
header is no text and the gold label is no part of one — while a ``.txt`` file stays one text per line;
``--json`` writes UTF-8; ``predict([])`` is ``[]``."""

from __future__ import annotations

import json
import re

import pytest

import attnkit
from _cli_helpers import ONE_EPOCH, write_reviews
from attnkit.cli import main

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = ["great taste and lovely smell", "stale tea , awful price"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("input_files")
    write_reviews(root / "train.csv")
    assert main(["train", "classify", "--data", str(root / "train.csv"), *ONE_EPOCH, "--out", str(root / "run")]) == 0
    return root / "run"


def _tables(directory):
    """The same two labelled texts as CSV (a comma inside a quoted text), TSV and JSONL."""
    (directory / "x.csv").write_text('text,label\n"great taste and lovely smell",pos\n"stale tea , awful price",neg\n')
    (directory / "x.tsv").write_text("label\ttext\npos\tgreat taste and lovely smell\nneg\tstale tea , awful price\n")
    rows = [{"label": label, "text": text} for text, label in zip(TEXTS, ["pos", "neg"], strict=True)]
    (directory / "x.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return [directory / name for name in ("x.csv", "x.tsv", "x.jsonl")]


def test_predict_file_reads_the_text_column_of_a_table_as_evaluate_does(run, tmp_path, capsys):
    for table in _tables(tmp_path):
        assert main(["predict", "--checkpoint", str(run), "--file", str(table)]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert [line.split("\t")[2] for line in lines] == TEXTS, table  # no header, no label in the text


def test_a_txt_file_stays_one_text_per_line_and_column_chooses_another(run, tmp_path, capsys):
    (tmp_path / "x.txt").write_text("text,label\ngreat taste,pos\n")
    assert main(["predict", "--checkpoint", str(run), "--file", str(tmp_path / "x.txt")]) == 0
    assert [line.split("\t")[2] for line in capsys.readouterr().out.splitlines()] == ["text,label", "great taste,pos"]
    (tmp_path / "y.csv").write_text("id,review\n1,lovely tea\n")
    assert main(["predict", "--checkpoint", str(run), "--file", str(tmp_path / "y.csv"), "--column", "review"]) == 0
    assert capsys.readouterr().out.split("\t")[2].strip() == "lovely tea"
    assert main(["predict", "--checkpoint", str(run), "--file", str(tmp_path / "y.csv")]) == 2
    assert "no column 'text' in the header (columns: id, review)" in capsys.readouterr().err


def test_explain_file_reads_the_text_column_too(run, tmp_path):
    csv = _tables(tmp_path)[0]
    out = tmp_path / "report.html"
    assert main(["explain", "--checkpoint", str(run), "--file", str(csv), "--out", str(out)]) == 0
    html = out.read_text()
    words = re.findall(r">([^<>]+)</span>", html)
    assert words[-5:] == ["stale", "tea", ",", "awful", "price"]  # the gold label is not a word of the text
    assert "label" not in words and words.count("great") == 1  # the header is no document; each text once


def test_faithfulness_reads_files_through_the_same_reader(run, tmp_path):
    import argparse

    from attnkit.tasks.options import read_texts

    for table in _tables(tmp_path):
        assert read_texts(argparse.Namespace(file=str(table), checkpoint=str(run), text=None)) == TEXTS


def test_json_is_written_as_utf8_and_an_empty_batch_is_no_error(run, capsys):
    assert main(["predict", "--checkpoint", str(run), "--text", "アテンション tea", "--json"]) == 0
    out = capsys.readouterr().out
    assert "アテンション" in out and "\\u30a2" not in out
    classifier = attnkit.load(run, device="cpu")
    assert classifier.predict([]) == []
    with pytest.raises(TypeError, match="got NoneType"):
        classifier.predict(None)
    with pytest.raises(TypeError, match="at index 0 is int"):
        classifier.predict([3])


def test_without_a_checkpoint_a_table_gives_its_text_column(tmp_path):
    """``attnkit faithfulness --hf-model DIR --file x.csv`` has no attnkit checkpoint: the ``text`` column."""
    import argparse

    from attnkit.tasks.options import read_texts

    (table,) = _tables(tmp_path)[:1]
    assert read_texts(argparse.Namespace(file=str(table), checkpoint=None, hf_model="m", text=None)) == TEXTS


def test_faithfulness_takes_its_texts_as_predict_does(run):
    classifier = attnkit.load(run, device="cpu")
    options = {"methods": ["attention"], "steps": 2}
    (one,) = classifier.faithfulness(TEXTS[0], **options)  # a str is one text, not its characters
    assert one.text == TEXTS[0] and classifier.faithfulness([TEXTS[0]], **options)[0].tokens == one.tokens
    assert classifier.faithfulness([], **options) == classifier.predict([]) == []
    for bad, error, match in [(None, TypeError, "got NoneType"), ([3], TypeError, "at index 0 is int"),
                              (["tea", " "], ValueError, "at index 1 is empty")]:  # fmt: skip
        with pytest.raises(error, match=match):
            classifier.predict(bad)
        with pytest.raises(error, match=match):
            classifier.faithfulness(bad, **options)


def test_every_faithfulness_entry_point_reads_its_texts_alike():
    """The seq2seq and Hugging Face functions check their texts before touching the model (None here)."""
    from attnkit.explain.faithfulness import huggingface
    from attnkit.tasks.seq2seq.faithfulness import seq2seq_faithfulness

    for function in (
        lambda texts: seq2seq_faithfulness(None, texts),
        lambda t: huggingface.faithfulness(None, None, t),
    ):
        assert function([]) == []
        with pytest.raises(TypeError, match="at index 1 is bytes"):
            function(["tea", b"tea"])
        with pytest.raises(TypeError, match="got NoneType"):
            function(None)
