"""The faithfulness experiment's added rows: the shipped classifiers' uniform-attention twins (their cards'
recipes, ``--uniform-only`` filling just that column) and the Transformer seq2seq row (dates: attention, rollout,
flow, the gradients, leave-one-out, random and the permutation test over the decoder's cross-attention)."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from attnkit.cli import build_parser, main
from attnkit.experiments import faithfulness
from attnkit.experiments.common import ExperimentPaths
from attnkit.experiments.faithfulness import seq2seq as faithfulness_transformer
from attnkit.experiments.faithfulness.table import render_faithfulness
from attnkit.pretrained import read_card
from attnkit.tasks.run.manifest import file_sha256

POSITIVE = ["great taste and lovely smell", "really great coffee , will buy again", "lovely tea , great price"]
NEGATIVE = ["awful taste and stale smell", "really awful coffee , never again", "stale tea , awful price"]


@pytest.mark.parametrize("name", ["fine-foods-han", "r8", "r52"])
def test_a_shipped_models_twin_is_its_cards_recipe_with_uniform_attention(name):
    out = Path("runs/x/uniform")
    argv = faithfulness.shipped_uniform_argv(name, out)
    card = shlex.split(read_card(name)["command"])
    recipe = [
        w for i, w in enumerate(card[1:]) if w not in ("--threads", "--out") and card[i] not in ("--threads", "--out")
    ]
    assert argv == [*recipe, "--uniform-attention", "--out", str(out), "--resume"]
    args, shipped = build_parser().parse_args(argv), build_parser().parse_args(card[1:])
    assert args.uniform_attention and not shipped.uniform_attention
    for option in ("model", "data", "lr", "epochs", "patience", "hidden", "heads", "seed", "embeddings"):
        assert getattr(args, option) == getattr(shipped, option)


def test_a_card_that_is_not_one_classifier_command_is_refused():
    with pytest.raises(ValueError, match="g2p: its card's command is not one 'attnkit train classify' command"):
        faithfulness.shipped_uniform_argv("g2p", Path("out"))


@pytest.fixture(scope="module")
def tiny_classifier(tmp_path_factory):
    """A pooled classifier (labels pos / neg) trained for two epochs on a small separable CSV."""
    root = tmp_path_factory.mktemp("uniform-only")
    rows = [(t, "pos") for t in POSITIVE] * 6 + [(t, "neg") for t in NEGATIVE] * 6
    train = root / "train.csv"
    train.write_text("text,label\n" + "\n".join(f'"{text}",{label}' for text, label in rows) + "\n")
    argv = ["train", "classify", "--data", str(train), "--model", "pooled", "--embed-dim", "16", "--epochs", "2"]
    argv += ["--batch-size", "4", "--vocab-size", "100", "--no-progress", "--out", str(root / "run")]
    assert main(argv) == 0
    return root / "run"


def test_uniform_only_fills_the_shipped_rows_column_and_leaves_its_figures(tmp_path, monkeypatch, tiny_classifier):
    """The shipped r8 row gains its twin's figures: trained with r8's recipe (here a stand-in that predicts
    pos / neg, never one of r8's labels: uniform accuracy 0, so the difference is r8's own accuracy)."""
    from attnkit.data import classification as classification_data

    paths = ExperimentPaths(runs=tmp_path / "runs", docs=tmp_path / "docs")
    paths.results.mkdir(parents=True)
    figures = ("aopc_comprehensiveness", "aopc_sufficiency", "flip_fraction", "tau_leave_one_out")
    methods = {"attention": {f: {"mean": 0.15, "low": 0.1, "high": 0.2, "n": 40} for f in figures}}
    row = {"label": "pooled + BiGRU (shipped r8)", "shipped": "r8", "run_command": "attnkit models  # r8",
           "uniform_command": None, "test_accuracy": 96.98, "documents": 40, "mean_tokens": 107.0,
           "uniform": {"accuracy": 96.98, "uniform_accuracy": None, "difference": None},
           "minutes": {"train": 0.0, "measure": 3.6, "this_command": 3.6}, "methods": methods, "permutation": None}  # fmt: skip
    summary = {"integrated_gradients_steps": 32, "data": {"r8": {"command": "c", "models": {"pooled_bigru": row}}}}
    (paths.results / "faithfulness.json").write_text(json.dumps(summary))
    trained = []

    def fake_ensure_run(argv, out, threads=None, device="auto"):
        trained.append(list(argv))
        shutil.copytree(tiny_classifier, out, dirs_exist_ok=True)
        return {"test": {"accuracy": 0.5}, "train_seconds": 90.0}

    texts = ["shares of the company were acquired for 20 mln dlrs", "net profit rose to 5 mln dlrs in the quarter"]
    data = SimpleNamespace(test_texts=texts, test_labels=[0, 2], punctuated=False)
    monkeypatch.setattr(faithfulness, "ensure_run", fake_ensure_run)
    monkeypatch.setattr(classification_data, "load_data_set", lambda name: data)
    assert main(["experiment", "faithfulness", "--data", "r8", "--uniform-only", "--runs", str(paths.runs),
                 "--docs", str(paths.docs), "--threads", "1"]) == 0  # fmt: skip
    assert trained == [faithfulness.shipped_uniform_argv("r8", paths.runs / "faithfulness/r8/pooled_bigru/uniform")]
    found = json.loads((paths.results / "faithfulness.json").read_text())["data"]["r8"]["models"]["pooled_bigru"]
    assert found["methods"] == methods and found["minutes"]["measure"] == 3.6  # the measured figures stay
    assert found["uniform"]["uniform_accuracy"] == 0.0 and found["minutes"]["train"] == 1.5
    assert found["uniform"]["difference"]["mean"] == pytest.approx(found["uniform"]["accuracy"])
    assert found["test_accuracy"] == found["uniform"]["accuracy"] and found["uniform"]["accuracy"] in (0.0, 50.0, 100.0)
    assert "--uniform-attention" in found["uniform_command"] and "--pooling multihead" in found["uniform_command"]
    assert "not trained" not in (paths.docs / "results.md").read_text()
    with pytest.raises(ValueError, match="--uniform-only is for the classifier data sets"):
        faithfulness.run_uniform_only(["cmudict"], paths)


def _toy_transformer():
    from attnkit.models.transformer.seq2seq import TransformerSeq2Seq

    torch.manual_seed(0)
    return TransformerSeq2Seq(24, 24, dim=16, heads=2, encoder_layers=1, decoder_layers=2, dropout=0.0).eval()


def test_the_permutation_test_shuffles_a_transformers_cross_attention_and_restores_it():
    from attnkit.explain.faithfulness.baselines import permutation_test
    from attnkit.tasks.seq2seq.faithfulness import Seq2SeqStepSubject

    model = _toy_transformer()
    vocab = [f"v{i}" for i in range(24)]
    subject = Seq2SeqStepSubject(model, [5, 9, 12, 7], [8, 4, 11], 2, ["a", "b", "c", "d"], vocab)
    assert subject.permutable() == [layer.cross_attention for layer in model.decoder_layers]
    before = [(layer.cross_attention.distribution, layer.cross_attention.fast_path) for layer in model.decoder_layers]
    found = permutation_test(subject, n=20, seed=0)
    assert found is not None and found.median_tvd > 1e-4  # four source tokens: shuffling moves the output
    assert [
        (layer.cross_attention.distribution, layer.cross_attention.fast_path) for layer in model.decoder_layers
    ] == before
    torch.testing.assert_close(subject.probabilities_when(torch.ones(1, 4, dtype=torch.bool), "delete")[0],
                               subject.probabilities)  # fmt: skip
    alone = Seq2SeqStepSubject(model, [5], [8, 4], 1, ["a"], vocab)
    one = permutation_test(alone, n=5, seed=0)
    assert one.median_tvd == pytest.approx(0.0, abs=1e-6) and one.flipped == 0.0  # one token: nothing to shuffle


@pytest.fixture(scope="module")
def tiny_dates(tmp_path_factory):
    """A d 16, 1 + 1 layer dates Transformer trained one epoch on 200 pairs."""
    root = tmp_path_factory.mktemp("dates-faithfulness")
    argv = ["train", "seq2seq", "--data", "dates", "--model", "transformer", "--dim", "16", "--heads", "2"]
    argv += ["--encoder-layers", "1", "--decoder-layers", "1", "--ff-dim", "32", "--epochs", "1", "--batch-size"]
    argv += ["32", "--no-progress", "--no-test", "--limit", "200", "--out", str(root / "run")]
    assert main(argv) == 0
    return root / "run"


def test_the_dates_transformer_row_is_measured_rendered_and_reused(tmp_path, monkeypatch, tiny_dates):
    pytest.importorskip("captum")
    paths = ExperimentPaths(runs=tmp_path / "runs", docs=tmp_path / "docs")
    paths.docs.mkdir()
    from attnkit.experiments.faithfulness import measure as faithfulness_measure

    monkeypatch.setattr(faithfulness_measure, "IG_STEPS", 4)
    monkeypatch.setattr(faithfulness_measure, "PERMUTATIONS", 5)
    faithfulness.run_faithfulness(["dates"], paths, documents=2, threads=1, checkpoint=str(tiny_dates))
    row = json.loads((paths.results / "faithfulness.json").read_text())["data"]["dates"]["models"]["transformer"]
    assert list(row["methods"]) == list(faithfulness_transformer.TRANSFORMER_METHODS)
    assert row["documents"] == 2 and row["shipped"] is None and row["mean_steps"] >= 1
    assert row["permutation"]["median_tvd"]["n"] == 2 and 0 <= row["permutation"]["flipped"]["mean"] <= 1
    assert row["methods"]["leave_one_out"]["tau_leave_one_out"]["n"] == 0
    for method in ("attention", "rollout", "flow", "random"):
        assert row["methods"][method]["aopc_comprehensiveness"]["n"] == 2
    page = (paths.docs / "results.md").read_text()
    assert "| Transformer (run run) | flow |" in page and "### dates" in page  # tiny_dates is .../run
    assert faithfulness_transformer._run_name("runs/dates-transformer/best") == "dates-transformer"

    def no_measuring(*args, **kwargs):
        raise AssertionError("the records of an unchanged model are reused")

    monkeypatch.setattr(faithfulness_transformer, "pair_record", no_measuring)
    again = faithfulness.run_faithfulness(["dates"], paths, documents=2, checkpoint=str(tiny_dates))
    assert again["data"]["dates"]["models"]["transformer"]["methods"] == row["methods"]


def test_dates_without_a_model_is_refused_before_anything_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(faithfulness_transformer, "DATES_MODEL", "no-such-model")
    assert main(["experiment", "faithfulness", "--data", "dates", "--docs", str(tmp_path)]) == 2
    assert "no no-such-model is shipped yet (attnkit models); give --checkpoint RUN" in capsys.readouterr().err
    assert main(["experiment", "faithfulness", "--data", "dates", "--checkpoint", str(tmp_path / "none"),
                 "--docs", str(tmp_path)]) == 2  # fmt: skip
    assert f"{tmp_path / 'none'}: does not exist (expected a checkpoint or run directory)" in capsys.readouterr().err
    assert main(["experiment", "faithfulness", "--data", "r8", "--checkpoint", "x", "--docs", str(tmp_path)]) == 2
    assert "--checkpoint is for --data dates alone" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()


def test_the_dates_section_renders():
    figures = ("aopc_comprehensiveness", "aopc_sufficiency", "flip_fraction", "tau_leave_one_out")
    interval = {"mean": 0.5, "low": 0.4, "high": 0.6, "n": 3}
    row = {"label": "Transformer (shipped dates-transformer)", "documents": 3, "mean_tokens": 15.0, "mean_steps": 11.0,
           "minutes": {"measure": 2.0}, "methods": {"rollout": {f: interval for f in figures}},
           "permutation": {"median_tvd": interval, "flipped": interval}}  # fmt: skip
    table = {"integrated_gradients_steps": 32, "data": {"dates": {"command": "c", "models": {"transformer": row}}}}
    page = render_faithfulness(table)
    assert "| Transformer (shipped dates-transformer) | 3 (15.0, 11.0) | 0.500 [0.400, 0.600] | 0.500" in page
    assert "| Transformer (shipped dates-transformer) | rollout | 0.500 [0.400, 0.600] |" in page


def test_a_checkpoint_that_does_not_fit_the_dates_row_is_refused_in_one_line(tmp_path, capsys, tiny_classifier):
    argv = ["experiment", "faithfulness", "--data", "dates", "--docs", str(tmp_path), "--checkpoint"]
    assert main([*argv, str(tiny_classifier)]) == 2  # a classifier for the seq2seq row
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a seq2seq checkpoint (kind='classifier')" in err[0]
    assert not (tmp_path / "results").exists()


def test_an_existing_path_wins_over_a_shipped_models_name(tmp_path, monkeypatch, tiny_dates):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(tiny_dates, tmp_path / "dates-transformer")  # a run named like the shipped model
    name, identity = faithfulness_transformer.resolve_model("dates-transformer")
    ours = file_sha256(tmp_path / "dates-transformer" / "best" / "model.safetensors")
    assert name == "dates-transformer" and identity == [["sha256", ours]]  # the run's weights, not the shipped ones


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--data", "digits", "--only", "pooled"], "--only chooses among the classifier models"),
        (["--data", "r8", "cmudict", "--only", "han"], "--data cmudict has one row of its own"),
        (["--data", "r8", "--only", "han"], "--only han: --data r8 has no such row (its rows: pooled, pooled_bigru"),
        (["--data", "r8", "--uniform-only", "--documents", "3"], "--documents does not apply to --uniform-only"),
        (
            ["--data", "digits", "--uniform-only"],
            "--uniform-only is for the classifier",
        ),
    ],
)
def test_options_that_do_not_fit_the_data_set_are_refused_in_one_line(tmp_path, capsys, argv, expected):
    assert main(["experiment", "faithfulness", *argv, "--docs", str(tmp_path), "--runs", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnkit: error:") and expected in err[0], err
    assert not (tmp_path / "results").exists() and not (tmp_path / "runs").exists()
