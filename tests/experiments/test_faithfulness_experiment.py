"""The faithfulness experiment: bootstrap intervals, the document sample, its commands, and a whole run on a tiny
trained classifier (measured, recorded, rendered, then reused)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from attnkit.cli import build_parser, main
from attnkit.experiments import faithfulness
from attnkit.experiments.bootstrap import bootstrap_interval
from attnkit.experiments.common import ExperimentPaths
from attnkit.experiments.faithfulness.measure import sample_documents
from attnkit.experiments.faithfulness.table import render_faithfulness

POSITIVE = ["great taste and lovely smell", "really great coffee , will buy again", "lovely tea , great price"]
NEGATIVE = ["awful taste and stale smell", "really awful coffee , never again", "stale tea , awful price"]


def test_bootstrap_interval_matches_the_normal_approximation_of_a_large_sample():
    values = np.random.default_rng(1).normal(3.0, 2.0, size=400)
    found = bootstrap_interval(values.tolist(), resamples=4000)
    half = 1.96 * values.std(ddof=1) / math.sqrt(len(values))  # the mean's 95 % interval, about 0.196
    assert found["mean"] == pytest.approx(values.mean())
    assert found["high"] - found["low"] == pytest.approx(2 * half, rel=0.1)
    assert found["low"] < found["mean"] < found["high"] and found["n"] == 400


def test_bootstrap_interval_edge_cases():
    assert bootstrap_interval([0.25] * 5) == {"mean": 0.25, "low": 0.25, "high": 0.25, "n": 5}
    assert bootstrap_interval([]) == {"mean": None, "low": None, "high": None, "n": 0}
    assert bootstrap_interval([1.0, math.nan, None, 3.0])["mean"] == 2.0  # undefined values (a τ) left out
    assert bootstrap_interval([1.0, 2.0, 7.0], seed=4) == bootstrap_interval([1.0, 2.0, 7.0], seed=4)
    with pytest.raises(ValueError, match="level"):
        bootstrap_interval([1.0], level=1.0)


def test_the_document_sample_is_seeded_sorted_and_without_repeats():
    sample = sample_documents(1000, 60, seed=0)
    assert sample == sorted(set(sample)) and len(sample) == 60 and sample == sample_documents(1000, 60, seed=0)
    assert sample != sample_documents(1000, 60, seed=1)
    assert sample_documents(5, 60) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("model", list(faithfulness.MODELS))
@pytest.mark.parametrize("uniform", [False, True])
def test_every_training_command_parses_within_its_budget(model, uniform):
    args = build_parser().parse_args(faithfulness.train_argv("fine-foods", model, Path("out"), uniform=uniform))
    assert args.resume and 0 < args.max_minutes <= 4 and args.uniform_attention == uniform
    assert faithfulness.models_for("r8", punctuated=False) == ["pooled", "pooled_bigru", "pooled_transformer"]


def test_the_section_says_what_is_not_run():
    command = "attnkit experiment faithfulness --data fine-foods r8 r52 20ng digits cmudict"
    assert f"_Not run yet: `{command}`._" in render_faithfulness(None)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A pooled classifier over a 1-layer Transformer encoder, trained briefly on a small separable CSV."""
    root = tmp_path_factory.mktemp("faithfulness")
    rows = [(t, "pos") for t in POSITIVE] * 6 + [(t, "neg") for t in NEGATIVE] * 6
    train = root / "train.csv"
    train.write_text("text,label\n" + "\n".join(f'"{text}",{label}' for text, label in rows) + "\n")
    argv = ["train", "classify", "--data", str(train), "--model", "pooled", "--encoder", "transformer", "--heads", "2"]
    argv += ["--embed-dim", "16", "--epochs", "2", "--batch-size", "4", "--vocab-size", "100", "--no-progress"]
    assert main([*argv, "--out", str(root / "run")]) == 0
    return root / "run"


def test_a_run_measures_records_renders_and_is_reused(tmp_path, monkeypatch, tiny_run):
    pytest.importorskip("captum")
    from attnkit.data import classification as classification_data
    from attnkit.experiments.faithfulness import measure as faithfulness_measure

    paths = ExperimentPaths(runs=tmp_path / "runs", docs=tmp_path / "docs")
    trained = []

    def fake_ensure_run(argv, out, threads=None, device="auto"):
        trained.append(("--uniform-attention" in argv, argv[argv.index("--encoder") + 1]))
        shutil.copytree(tiny_run, out, dirs_exist_ok=True)
        return {"test": {"accuracy": 0.9}, "train_seconds": 30.0}

    texts = POSITIVE + NEGATIVE
    data = SimpleNamespace(test_texts=texts, test_labels=[1, 1, 1, 0, 0, 0], punctuated=False)
    monkeypatch.setattr(faithfulness, "ensure_run", fake_ensure_run)
    monkeypatch.setattr(classification_data, "load_data_set", lambda name: data)
    faithfulness.run_faithfulness(["r8"], paths, models=("pooled_transformer",), documents=4)
    assert trained == [(False, "transformer"), (True, "transformer")]
    summary = json.loads((paths.results / "faithfulness.json").read_text())
    row = summary["data"]["r8"]["models"]["pooled_transformer"]
    assert row["documents"] == 4 and set(row["methods"]) >= {"attention", "rollout", "flow", "leave_one_out", "random"}
    assert row["methods"]["leave_one_out"]["tau_leave_one_out"]["n"] == 0  # no τ of a method with itself
    attention = row["methods"]["attention"]
    assert attention["aopc_comprehensiveness"]["low"] <= attention["aopc_comprehensiveness"]["mean"]
    assert attention["tau_leave_one_out"]["n"] <= 4 and 0 <= attention["flip_fraction"]["mean"] <= 1
    assert row["permutation"]["median_tvd"]["n"] == 4  # the pooling's attention was shuffled in every document
    assert row["uniform"]["difference"]["mean"] == 0.0  # the same weights stood in for the uniform twin
    page = (paths.docs / "results.md").read_text()
    assert "## Faithfulness of attention" in page and "| pooled + Transformer | rollout |" in page
    assert "`attnkit experiment faithfulness --data r8 --documents 4`" in page

    def no_measuring(*args, **kwargs):
        raise AssertionError("the records of an unchanged run are reused")

    monkeypatch.setattr(faithfulness_measure, "measure_documents", no_measuring)
    again = faithfulness.run_faithfulness(["r8"], paths, models=("pooled_transformer",), documents=4)
    assert again["data"]["r8"]["models"]["pooled_transformer"]["methods"] == row["methods"]


def test_experiment_command_errors(tmp_path, capsys):
    assert main(["experiment", "faithfulness", "--data", "imdb", "--docs", str(tmp_path)]) == 2
    assert "no faithfulness setting for imdb" in capsys.readouterr().err
    assert main(["experiment", "faithfulness", "--only", "cnn", "--docs", str(tmp_path)]) == 2
    assert "no faithfulness model cnn" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="2"):  # an option of the faithfulness experiment: argparse refuses it
        main(["experiment", "masking", "--documents", "5", "--docs", str(tmp_path)])
    assert "unrecognized arguments: --documents 5" in capsys.readouterr().err


def test_phonetisaurus_alignment_lines_by_hand():
    """``p|h}F o}OW n}N e}_``: F from letters 0-1, OW from 2, N from 3, the silent e aligned to no phoneme; a
    two-phoneme chunk gives both phonemes the chunk's letters."""
    from attnkit.experiments.faithfulness.seq2seq import parse_alignment

    assert parse_alignment("p|h}F o}OW n}N e}_") == ("phone", [[0, 1], [2], [3]])
    assert parse_alignment("x}K|S i}IH") == ("xi", [[0], [0], [1]])


def _interval(mean):
    return {"mean": mean, "low": mean - 0.1, "high": mean + 0.1, "n": 3}


def test_the_digits_and_g2p_sections_render():
    methods = {"attention": {"deletion_auc": _interval(0.4), "insertion_auc": _interval(0.9)}}
    digits = {"label": "visual attention (shipped digits)", "documents": 3, "cells": 64, "methods": methods,
              "minutes": {"measure": 0.5}}  # fmt: skip
    figures = ("aopc_comprehensiveness", "aopc_sufficiency", "flip_fraction", "tau_leave_one_out")
    g2p = {
        "label": "RNN (shipped g2p)", "documents": 3, "mean_tokens": 6.0, "mean_phonemes": 5.0,
        "methods": {"attention": {f: _interval(0.5) for f in figures}},
        "alignment": {"words": 3, "agreement": _interval(90.0), "chance": _interval(20.0)},
    }  # fmt: skip
    table = {
        "integrated_gradients_steps": 16,
        "data": {
            "digits": {"command": "attnkit experiment faithfulness --data digits", "models": {"digits": digits}},
            "cmudict": {"command": "attnkit experiment faithfulness --data cmudict", "models": {"g2p": g2p}},
        },
    }
    page = render_faithfulness(table)
    assert (
        "| visual attention (shipped digits) | 3 (64) | attention | 0.400 [0.300, 0.500] | 0.900 [0.800, 1.000]" in page
    )
    assert "| RNN (shipped g2p) | 3 (6.0, 5.0) | 90.0 [89.9, 90.1] | 20.0 [19.9, 20.1] |" in page
    assert "| RNN (shipped g2p) | attention | 0.500 [0.400, 0.600] |" in page
