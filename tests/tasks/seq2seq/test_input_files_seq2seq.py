"""Files read the same everywhere, seq2seq side (#37, item 4): ``translate``/``predict --file`` read a pair file's
source column (never its target, never its header), ``.txt`` stays one text per line, a pair file whose first
line looks like a header naming other columns is read as data with a warning; ``translate([])`` is ``[]`` and
``evaluate(sources, targets)`` takes the shape of ``Classifier.evaluate(texts, labels)``."""

from __future__ import annotations

import json
import warnings

import pytest

import attnkit
from attnkit.cli import main
from attnkit.data.seq2seq.files import read_pairs

SOURCES = ["4 March 1997", "12/25/2001"]
TARGETS = ["1997-03-04", "2001-12-25"]


def _files(directory):
    (directory / "header.tsv").write_text(
        "target\tsource\n" + "".join(f"{t}\t{s}\n" for s, t in zip(SOURCES, TARGETS, strict=True))
    )
    (directory / "bare.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in zip(SOURCES, TARGETS, strict=True)))
    (directory / "pairs.csv").write_text(
        "source,target\n" + "".join(f'"{s}",{t}\n' for s, t in zip(SOURCES, TARGETS, strict=True))
    )
    rows = [json.dumps({"target": t, "source": s}) + "\n" for s, t in zip(SOURCES, TARGETS, strict=True)]
    (directory / "pairs.jsonl").write_text("".join(rows))
    return [directory / name for name in ("header.tsv", "bare.tsv", "pairs.csv", "pairs.jsonl")]


def test_translate_and_predict_file_read_the_sources_of_a_pair_file(dates_transformer, tmp_path, capsys):
    run = str(dates_transformer / "run")
    assert main(["translate", "--checkpoint", run, "--text", SOURCES[0], "--text", SOURCES[1]]) == 0
    expected = capsys.readouterr().out
    for pairs in _files(tmp_path):
        for command in ("translate", "predict"):
            assert main([command, "--checkpoint", run, "--file", str(pairs)]) == 0
            assert capsys.readouterr().out == expected, (command, pairs.name)
    (tmp_path / "x.txt").write_text(f"{SOURCES[0]}\n\n{SOURCES[1]}\n")  # plain text: one per line, blanks kept
    assert main(["translate", "--checkpoint", run, "--file", str(tmp_path / "x.txt")]) == 0
    assert capsys.readouterr().out.splitlines() == [expected.splitlines()[0], "", expected.splitlines()[1]]
    (tmp_path / "named.tsv").write_text(f"src\ttgt\n{SOURCES[0]}\t{TARGETS[0]}\n")
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = lambda message, *args, **kwargs: print(warnings.formatwarning(message, *args), end="")
        assert main(["translate", "--checkpoint", run, "--file", str(tmp_path / "named.tsv")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and out[0].startswith("attnkit: warning: ") and "named.tsv:1:" in out[0]


def test_a_first_line_that_looks_like_another_header_is_read_as_data_with_a_warning(tmp_path):
    (tmp_path / "named.tsv").write_text("src\ttgt\n4 March 1997\t1997-03-04\n")
    with pytest.warns(UserWarning, match=r"named.tsv:1: the first line 'src\\ttgt' looks like a header"):
        assert read_pairs(tmp_path / "named.tsv")[0] == ("src", "tgt")
    for quiet in ("source\ttarget\ncat\tK AE T\n", "cat\tK AE T\nhello\tbonjour\n", "4 March 1997\t1997-03-04\n"):
        (tmp_path / "quiet.tsv").write_text(quiet)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            read_pairs(tmp_path / "quiet.tsv")


def test_translate_of_nothing_is_nothing_and_evaluate_takes_sources_and_targets(dates_transformer):
    loaded = attnkit.load(dates_transformer / "run", device="cpu")
    assert loaded.translate([]) == []
    with pytest.raises(TypeError, match="got NoneType"):
        loaded.translate(None)
    with pytest.raises(TypeError, match="at index 1 is int"):
        loaded.translate(["4 March 1997", 5])
    translations = [t.text for t in loaded.translate(SOURCES)]
    scores = loaded.evaluate(SOURCES, translations)
    assert scores["exact_match"] == 100.0 and scores["count"] == 2
    both = loaded.evaluate(SOURCES, [["nope", translations[0]], translations[1]])  # every acceptable target
    assert both["exact_match"] == 100.0
    with pytest.raises(ValueError, match="sources has 2 items but targets has 1"):
        loaded.evaluate(SOURCES, TARGETS[:1])
