"""A new user's second hour (issue #26): the Python API reads a ``str`` as one text and refuses what the command
line refuses; ``predict --file`` keeps blank lines aligned; numbers in one unit; richer logs and reports. The
command line runs in a subprocess (exit 2, one ``attnkit: error:`` line, nothing written)."""

from __future__ import annotations

import json
import re

import pytest

import attnkit
from _cli_helpers import NEGATIVE, POSITIVE, SMALL, assert_user_error, write_reviews
from _cli_helpers import attnkit as run_cli
from attnkit.cli import main


@pytest.fixture(scope="module")
def classifier_run(tmp_path_factory):
    """A finished tiny pooled classifier on a CSV with columns text,label."""
    root = tmp_path_factory.mktemp("second_hour")
    write_reviews(root / "train.csv")
    out = root / "run"
    argv = ["train", "classify", "--data", str(root / "train.csv"), *SMALL, "--epochs", "6", "--lr", "0.05"]
    assert main([*argv, "--batch-size", "4", "--out", str(out)]) == 0
    return root, out


# ------------------------------------------------------------------------------- 2. one text, checked inputs
def test_predict_reads_a_str_as_one_text_and_refuses_what_the_cli_refuses(classifier_run):
    _, out = classifier_run
    classifier = attnkit.load(out, device="cpu")
    one = classifier.predict("great taste and lovely smell")
    assert len(one) == 1 and one[0].text == "great taste and lovely smell" and one[0].label == "pos"
    assert [p.label for p in classifier.predict(("awful taste", "lovely tea"))] == ["neg", "pos"]
    with pytest.raises(ValueError, match=r"^text at index 1 is empty: give a text to read$"):
        classifier.predict(["great tea", "  "])
    with pytest.raises(ValueError, match="at index 0 is empty"):
        classifier.predict("")
    for bad, name in ((None, "NoneType"), (5, "int"), (b"tea", "bytes")):
        with pytest.raises(TypeError, match=rf"^text at index 1 is {name}, not str$"):
            classifier.predict(["great tea", bad])
    with pytest.raises(TypeError, match="must be a str or a sequence of str, got NoneType"):
        classifier.predict(None)
    assert classifier.predict([]) == []  # an empty batch is not an error (#37)
    with pytest.raises(ValueError, match="nothing to evaluate"):
        classifier.evaluate([], [])
    with pytest.raises(TypeError, match="at index 0 is int"):
        classifier.evaluate([3], ["pos"])


# -------------------------------------------------------------------------- 3. predict --file keeps blanks
def test_predict_file_keeps_blank_lines_aligned(classifier_run, tmp_path):
    _, out = classifier_run
    texts = tmp_path / "texts.txt"
    texts.write_text("great taste and lovely smell\n\nawful coffee , never again\n   \nlovely tea\n")
    result = run_cli("predict", "--checkpoint", str(out), "--file", str(texts))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")[:-1]
    assert len(lines) == 5 and lines[1] == "" and lines[3] == ""
    assert [line.split("\t")[2] for line in lines if line] == [
        "great taste and lovely smell",
        "awful coffee , never again",
        "lovely tea",
    ]
    blank_only = tmp_path / "blank.txt"
    blank_only.write_text("\n  \n")
    assert_user_error(run_cli("predict", "--checkpoint", str(out), "--file", str(blank_only)), "no text given")


# ------------------------------------------------------------------------------------ 5. one unit, one table
def test_accuracy_is_a_percentage_everywhere_and_python_evaluate_returns_the_cli_table(classifier_run):
    root, out = classifier_run
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["units"] == "percent" and metrics["best_valid"]["accuracy"] == 100.0
    texts = POSITIVE + NEGATIVE
    labels = ["pos"] * 3 + ["neg"] * 3
    report = attnkit.load(out, device="cpu").evaluate(texts, labels)
    assert report["accuracy"] == 100.0 and report["count"] == 6 and report["loss"] >= 0  # may round to 0.0
    assert report["per_class"]["pos"] == {"precision": 100.0, "recall": 100.0, "f1": 100.0, "support": 3}
    assert report["labels"] == ["neg", "pos"] and report["confusion"] == [[3, 0], [0, 3]]
    cli = run_cli("evaluate", "--checkpoint", str(out), "--data", str(root / "train.csv"), "--json")
    assert cli.returncode == 0, cli.stderr
    as_json = json.loads(cli.stdout)
    assert as_json["accuracy"] == 100.0 and as_json["per_class"]["neg"]["support"] == 18
    assert set(report) <= set(as_json)  # the CLI prints what Python returns (plus data and checkpoint)


def test_old_metrics_files_and_trainer_states_are_read_in_percent():
    from attnkit.training._run_state import _accuracy_in_percent
    from attnkit.training.run_report import in_percent

    old = {"best_valid": {"accuracy": 0.9, "loss": 0.3}, "test": {"accuracy": 0.8}}
    assert (
        in_percent(old)["best_valid"] == {"accuracy": 90.0, "loss": 0.3} and in_percent(old)["test"]["accuracy"] == 80
    )
    new = {"units": "percent", "best_valid": {"accuracy": 90.0}, "test": None}
    assert in_percent(new) == new
    state = {"history": [{"epoch": 1, "metrics": {"accuracy": 0.5}}], "best_metrics": {"accuracy": 0.5}}
    state["best_value"] = 0.5
    converted = _accuracy_in_percent(state, "accuracy")
    assert converted["best_value"] == 50.0 and converted["history"][0]["metrics"]["accuracy"] == 50.0
    assert _accuracy_in_percent({**state, "units": "percent"}, "accuracy")["best_value"] == 0.5


def test_confusion_headers_are_whole_names():
    from attnkit.tasks.classify.report import classification_report, format_report

    names = ["business", "entertainment", "tech"]
    table = format_report(classification_report([0, 1, 2, 1], [0, 1, 2, 2], names))
    header = table.splitlines()[table.splitlines().index(next(l for l in table.splitlines() if "confusion" in l)) + 1]
    assert header.split() == names


def test_classify_training_prints_a_data_summary(tmp_path):
    rows = [(t, "pos") for t in POSITIVE] * 4 + [(t, "neg") for t in NEGATIVE] * 2
    (tmp_path / "train.csv").write_text("text,label\n" + "".join(f'"{text}",{label}\n' for text, label in rows))
    argv = ["train", "classify", "--data", str(tmp_path / "train.csv"), *SMALL, "--epochs", "1"]
    result = run_cli(*argv, "--label-smoothing", "0.1", "--out", str(tmp_path / "run"))
    assert result.returncode == 0, result.stderr
    assert (
        "train.csv: 18 training (10% carved for validation), 0 test documents; 2 classes (training): neg 6, pos 12"
        in (result.stdout)
    )
    assert "label smoothing 0.1: the training loss reads higher than the validation loss" in result.stdout


# --------------------------------------------------------------------------------------------- 6. tensorboard
def test_tensorboard_logs_learning_rate_step_loss_test_metrics_and_hparams(tmp_path):
    pytest.importorskip("tensorboard", reason="tensorboard (the tensorboard extra) is not installed")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    rows = [(t, "pos") for t in POSITIVE] * 4 + [(t, "neg") for t in NEGATIVE] * 4
    for name in ("train.csv", "test.csv"):
        (tmp_path / name).write_text("text,label\n" + "".join(f'"{text}",{label}\n' for text, label in rows))
    argv = ["train", "classify", "--data", str(tmp_path / "train.csv"), "--test", str(tmp_path / "test.csv")]
    assert main([*argv, *SMALL, "--epochs", "2", "--tensorboard", "--out", str(tmp_path / "run")]) == 0
    events = EventAccumulator(str(tmp_path / "run" / "tensorboard"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"train/lr", "train/step_loss", "test/accuracy", "test/loss", "valid/accuracy"} <= tags
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert events.Scalars("test/accuracy")[-1].value == pytest.approx(metrics["test"]["accuracy"])
    hparams = EventAccumulator(str(tmp_path / "run" / "tensorboard" / "hparams"))
    hparams.Reload()
    assert "hparam/test_accuracy" in hparams.Tags()["scalars"]
    assert (tmp_path / "run" / "tensorboard" / "hparams").is_dir()


# ------------------------------------------------------------------------------------- 9. small conveniences
def test_rollout_takes_bool_masks_as_the_rest_of_attnkit_and_says_how_to_convert_hugging_faces():
    """#26 let rollout take Hugging Face's 0/1 integer mask; #37 made it refuse one as every other attnkit mask
    argument does (one polarity, one dtype), with the conversion in the message."""
    import torch

    from attnkit.explain.rollout import attention_rollout

    layers = [torch.softmax(torch.randn(2, 2, 4, 4), -1) for _ in range(2)]
    as_bool = torch.tensor([[True, True, True, False], [True, True, False, False]])
    attention_rollout(layers, key_mask=as_bool)
    for other in (as_bool.long(), as_bool.float()):
        with pytest.raises(ValueError, match=r"must be a torch.BoolTensor.*mask.bool\(\)"):
            attention_rollout(layers, key_mask=other)


def test_figures_drawn_before_save_figures_are_reported(tmp_path):
    import warnings

    import matplotlib.pyplot as plt

    from attnkit.explain import figures

    figures._UNSAVED.clear()  # names other tests drew outside a block would be listed too
    figure = plt.figure()
    figures.add_figure("drawn-too-early", figure)
    early = r"no figure was drawn inside the block; 1 figure\(s\) drawn before it \(drawn-too-early\) were not saved"
    with pytest.warns(UserWarning, match=early), figures.save_figures(tmp_path / "figs"):
        pass
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with figures.save_figures(tmp_path / "figs2"):
            figures.add_figure("inside", figure)
    assert sorted(p.name for p in (tmp_path / "figs2").iterdir()) == ["00-inside.png", "00-inside.svg"]
    plt.close(figure)


def test_a_written_report_shows_itself_in_a_notebook(classifier_run, tmp_path):
    import html

    _, out = classifier_run
    classifier = attnkit.load(out, device="cpu")
    from attnkit.tasks.classify.explain import classifier_report

    path = classifier_report(classifier.predict("great tea <&> lovely"), classifier.label_names, tmp_path / "r.html")
    shown = path._repr_html_()
    assert shown.startswith("<iframe") and "sandbox" in shown
    assert html.unescape(shown.split('srcdoc="')[1].split('"')[0]) == path.read_text(encoding="utf-8")
    assert path.exists() and str(path) == str(tmp_path / "r.html")


# ------------------------------------------------------------------------------------ 4. words the model lacks
def test_reports_mark_words_unknown_to_the_model(classifier_run, tmp_path):
    from attnkit.explain.html import UNKNOWN_NOTE
    from attnkit.tasks.classify.explain import classifier_report

    _, out = classifier_run
    classifier = attnkit.load(out, device="cpu")
    (prediction,) = classifier.predict("great zyzzyva tea")
    assert prediction.tokens == ["great", "zyzzyva", "tea"] and prediction.unknown_tokens == [False, True, False]
    page = classifier_report([prediction], classifier.label_names, tmp_path / "r.html").read_text(encoding="utf-8")
    marked = re.findall(r'<span class="attn-token attn-unk"[^>]*>([^<]*)</span>', page)
    assert set(marked) == {"zyzzyva"} and UNKNOWN_NOTE in page
    known = classifier_report(classifier.predict("great tea"), classifier.label_names, tmp_path / "k.html")
    assert 'attn-unk"' not in known.read_text(encoding="utf-8") and UNKNOWN_NOTE not in known.read_text()


def test_delimiter_reads_csv_like_files_and_is_checked_first(tmp_path):
    rows = [(t, "pos") for t in POSITIVE] * 3 + [(t, "neg") for t in NEGATIVE] * 3
    (tmp_path / "reviews.txt").write_text("text;label\n" + "".join(f'"{text}";{label}\n' for text, label in rows))
    argv = ["train", "classify", "--data", str(tmp_path / "reviews.txt"), *SMALL, "--epochs", "1"]
    result = run_cli(*argv, "--delimiter", ";", "--out", str(tmp_path / "run"))
    assert result.returncode == 0, result.stderr
    assert "reviews.txt: 18 training" in result.stdout and "2 classes" in result.stdout
    bad = run_cli(*argv, "--delimiter", ";;", "--out", str(tmp_path / "bad"))
    assert_user_error(bad, "--delimiter", "one character")
    assert not (tmp_path / "bad").exists()
    (tmp_path / "rows.jsonl").write_text('{"text": "a", "label": "x"}\n')
    jsonl = run_cli("train", "classify", "--data", str(tmp_path / "rows.jsonl"), *SMALL, "--delimiter", ";",
                    "--out", str(tmp_path / "jsonl"))  # fmt: skip
    assert_user_error(jsonl, "rows.jsonl", "--delimiter is for CSV-like files")
    assert not (tmp_path / "jsonl").exists()
    evaluated = run_cli("evaluate", "--checkpoint", str(tmp_path / "run"), "--data", str(tmp_path / "reviews.txt"),
                        "--delimiter", ";", "--json")  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)["count"] == 18
