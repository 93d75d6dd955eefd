"""Files attnkit reads back, inputs it must cut or refuse, and options it must name (issue #27, cases 8-11;
exports and seq2seq configs: ``tests/tasks/seq2seq/test_export_read_back.py``),
through the real command line: exit 2, one ``attnkit: error:`` line naming the file, field or option, no
traceback, and nothing already there changed."""

from __future__ import annotations

import json
import shutil

import pytest

from _cli_helpers import ONE_EPOCH, assert_user_error, attnkit, tree_hash, write_reviews
from attnkit.cli import main


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    """``(root, run)``: a one-epoch pooled classifier trained on ``root/train.csv``."""
    root = tmp_path_factory.mktemp("readback")
    write_reviews(root / "train.csv")
    assert main(["train", "classify", "--data", str(root / "train.csv"), *ONE_EPOCH, "--out", str(root / "run")]) == 0
    return root, root / "run"


def test_a_checkpoint_kind_of_the_wrong_type_is_one_line(classifier, tmp_path):
    """Case 8: a ``kind`` that is a list."""
    _, run = classifier
    broken = tmp_path / "kind"
    shutil.copytree(run / "best", broken)
    config = json.loads((broken / "config.json").read_text())
    config["kind"] = ["classifier"]
    (broken / "config.json").write_text(json.dumps(config))
    assert_user_error(attnkit("predict", "--checkpoint", str(broken), "--text", "tea"), "config.json", "'kind'")


def test_results_json_read_by_experiment_report_is_checked(tmp_path):
    """Case 8: ``experiment report`` names the results file and the field, or the JSON error's line."""
    from pathlib import Path

    docs = tmp_path / "docs"
    shutil.copytree(Path(__file__).resolve().parents[2] / "docs" / "results", docs / "results")
    table = json.loads((docs / "results" / "classification.json").read_text())
    del next(iter(table.values()))["target"]
    (docs / "results" / "classification.json").write_text(json.dumps(table, indent=1))
    before = tree_hash(docs)
    result = attnkit("experiment", "report", "--docs", str(docs))
    assert_user_error(result, str(docs / "results" / "classification.json"), "target", "is missing")
    (docs / "results" / "classification.json").write_text('{"r8": {"command": "x",\n  oops}')
    result = attnkit("experiment", "report", "--docs", str(docs))
    assert_user_error(result, f"{docs / 'results' / 'classification.json'}:2:3", "malformed JSON")
    assert tree_hash(docs).keys() == before.keys()


def test_a_huge_field_is_cut_when_read(classifier, tmp_path):
    """Case 9: a 20 MB document is cut to what the classifier reads before tokenising (it evaluates at once)."""
    from attnkit.data.classify.files import read_rows

    _, run = classifier
    big = tmp_path / "big.csv"
    write_reviews(big)
    with big.open("a") as handle:
        handle.write('"' + "great tea " * 2_000_000 + '",pos\n')
    rows = read_rows(big, max_chars=100)
    assert [len(text) for text in rows.texts[-2:]] == [len(rows.texts[-2]), 100] and rows.texts[-1].startswith("great")
    result = attnkit("evaluate", "--checkpoint", str(run), "--data", str(big))
    assert result.returncode == 0, result.stderr
    assert "on 37 documents" in result.stdout


def test_one_label_rule_and_what_it_refuses(tmp_path):
    """Case 10: 1, "1" and 1.0 are one label; 1.5 and null are refused with file:line, nothing written."""
    from attnkit.data.classify.files import load_files

    rows = [{"text": "good tea", "label": label} for label in (1, "1", 1.0)]
    rows += [{"text": "bad tea", "label": label} for label in (0, "0 ", 0.0)]
    (tmp_path / "same.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    data = load_files(tmp_path / "same.jsonl")
    assert data.label_names == ["0", "1"] and data.train_labels == [1, 1, 1, 0, 0, 0]
    for bad, shown in ((1.5, "1.5"), (None, "null"), (True, "true")):
        path = tmp_path / "bad.jsonl"
        path.write_text("".join(json.dumps(row) + "\n" for row in [*rows[:2], {"text": "tea", "label": bad}]))
        if bad is None:  # one run through the command line; the rule itself is the reader's
            result = attnkit("train", "classify", "--data", str(path), *ONE_EPOCH, "--out", str(tmp_path / "r"))
            assert_user_error(result, f"{path}:3", "text or a whole number", shown)
            assert not (tmp_path / "r").exists()
        else:
            with pytest.raises(ValueError, match=rf"bad\.jsonl:3: the label in 'label' must be .*{shown}"):
                load_files(path)


def test_zero_seeds_and_a_zero_batch_are_refused_by_name(tmp_path):
    """Case 11."""
    result = attnkit("experiment", "classification", "--seeds", "0", "--docs", str(tmp_path))
    assert_user_error(result, "--seeds", "must be >= 1, got 0")
    result = attnkit("translate", "--checkpoint", str(tmp_path), "--batch-size", "0", "--text", "x")
    assert_user_error(result, "--batch-size", "must be >= 1, got 0")
