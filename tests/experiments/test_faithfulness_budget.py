"""The faithfulness experiment's 10-minute target per row: the measuring budget (a seeded random order, cut when
the minutes are spent), each row's minutes printed and recorded, and a 20ng row end to end on a tiny slice of its
long documents (a tiny pooled classifier stands in for the short run)."""

from __future__ import annotations

import csv
import json
import shutil
from types import SimpleNamespace

import pytest

from attnkit.cli import main
from attnkit.experiments import faithfulness
from attnkit.experiments.common import ExperimentPaths
from attnkit.experiments.faithfulness.measure import in_budget, minutes_line, target_minutes


def test_in_budget_measures_all_in_order_without_a_budget_and_a_seeded_shuffle_with_one():
    numbers = [3, 8, 12, 40, 41, 57]
    assert list(in_budget(numbers, None)) == numbers
    shuffled = list(in_budget(numbers, 60.0, seed=1))
    assert sorted(shuffled) == numbers and shuffled == list(in_budget(numbers, 60.0, seed=1))
    assert shuffled != list(in_budget(numbers, 60.0, seed=2))
    assert list(in_budget(numbers, 0.0, seed=1)) == shuffled[:1]  # a spent budget still measures one document
    assert list(in_budget([], 0.0)) == []


def _row(**minutes) -> dict:
    return {"label": "pooled", "documents": 37, "minutes": minutes}


def test_the_minutes_line_says_whether_a_row_met_the_target():
    row = _row(train=8.2, measure=8.0, accuracy=0.9)
    row["minutes"].update(target_minutes(row, 200, 8.0))
    assert row["minutes"]["counted"] == 8.9 and row["minutes"]["sampled"] == 200
    line = minutes_line(row)
    assert line.startswith("37 of 200 sampled documents (the 8-minute measuring budget), measuring 8.0 min")
    assert "8.9 min (target <= 10: met); training 8.2 min, reported apart" in line
    over = _row(measure=12.7)
    over["minutes"].update(target_minutes(over, 15, None))
    assert minutes_line(over) == "37 of 15 sampled documents, measuring 12.7 min: 12.7 min (target <= 10: NOT met)"


@pytest.fixture(scope="module")
def twenty_newsgroups(tmp_path_factory):
    """A slice of 20ng (three long test documents) and a tiny pooled classifier trained on 40 of its training
    documents (spread over its newsgroups), reading at most 256 tokens as the experiment's pooled recipes do."""
    from attnkit.data.classification import load_data_set
    from attnkit.data.reading import DataError

    try:
        data = load_data_set("20ng")
    except DataError as error:  # pragma: no cover - depends on the installation
        pytest.skip(f"20ng is not installed here: {error}")
    root = tmp_path_factory.mktemp("twenty")
    with (root / "train.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        pairs = list(zip(data.train_texts, data.train_labels, strict=True))
        for text, label in pairs[:: len(pairs) // 40][:40]:  # every group: the split is sorted by label
            writer.writerow([text, data.label_names[label]])
    argv = ["train", "classify", "--data", str(root / "train.csv"), "--model", "pooled", "--encoder", "none"]
    argv += ["--max-tokens", "256", "--embed-dim", "8", "--epochs", "1", "--vocab-size", "300", "--no-progress"]
    assert main([*argv, "--out", str(root / "run")]) == 0
    long = sorted(range(len(data.test_texts)), key=lambda i: -len(data.test_texts[i].split()))[:3]
    sliced = SimpleNamespace(
        test_texts=[data.test_texts[i] for i in long],
        test_labels=[data.test_labels[i] for i in long],
        punctuated=data.punctuated,
    )
    return root / "run", sliced


def test_a_20ng_row_measures_within_its_budget_and_records_its_minutes(
    tmp_path, monkeypatch, capsys, twenty_newsgroups
):
    from attnkit.data import classification as classification_data

    run, data = twenty_newsgroups
    assert min(len(text.split()) for text in data.test_texts) > 256  # long documents: the pooled model reads 256

    def fake_ensure_run(argv, out, threads=None, device="auto"):
        shutil.copytree(run, out, dirs_exist_ok=True)
        return {"test": {"accuracy": 0.1}, "train_seconds": 12.0}

    monkeypatch.setattr(faithfulness, "ensure_run", fake_ensure_run)
    monkeypatch.setattr(classification_data, "load_data_set", lambda name: data)
    paths = ExperimentPaths(runs=tmp_path / "runs", docs=tmp_path / "docs")
    faithfulness.run_faithfulness(["20ng"], paths, models=("pooled",), documents=3, minutes=0.0)
    summary = json.loads((paths.results / "faithfulness.json").read_text())
    row = summary["data"]["20ng"]["models"]["pooled"]
    assert row["documents"] == 1 and row["sampled"] == 3  # the budget was spent after the first document
    assert row["mean_tokens"] == 256  # what the model read
    minutes = row["minutes"]
    assert minutes["budget"] == 0.0 and minutes["target"] == 10.0
    assert minutes["counted"] == pytest.approx(minutes["measure"] + minutes["accuracy"], abs=0.11)
    assert summary["data"]["20ng"]["command"] == "attnkit experiment faithfulness --data 20ng"
    printed = capsys.readouterr().out
    assert "faithfulness 20ng x pooled: 1 of 3 sampled documents (the 0-minute measuring budget)" in printed
    assert "(target <= 10: met)" in printed

    faithfulness.run_faithfulness(["20ng"], paths, models=("pooled",), documents=2, minutes=None)
    summary = json.loads((paths.results / "faithfulness.json").read_text())
    row = summary["data"]["20ng"]["models"]["pooled"]
    assert row["documents"] == 2 and row["minutes"]["budget"] is None
    assert summary["data"]["20ng"]["command"] == "attnkit experiment faithfulness --data 20ng --documents 2"
