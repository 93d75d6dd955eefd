"""The ``faithfulness`` block of a classifier's cards, written on a tiny model (no shipped weights): its sample,
settings and figures, the uniform-attention gap copied with its source, the lines the cards show, and the ship
tool's refusal to give a model that is not a classifier such a block."""

from __future__ import annotations

import json

import pytest
from scripts.card_faithfulness import published_faithfulness, refresh_faithfulness
from scripts.model_cards import faithfulness_lines
from scripts.ship_model import main as ship_main

from attnkit.cli import main
from attnkit.experiments.faithfulness.card import card_sample, faithfulness_block, uniform_gap
from attnkit.experiments.shipped_table import render_shipped
from attnkit.tasks.classify.inference import load_classifier

POSITIVE = ["great taste and lovely smell", "really great coffee , will buy again", "lovely tea , great price"]
NEGATIVE = ["awful taste and stale smell", "really awful coffee , never again", "stale tea , awful price"]
UNIFORM = {"accuracy": 96.98, "uniform_accuracy": 97.26, "difference": {"mean": -0.274, "low": -1.005, "high": 0.365}}


def train_tiny(root, *options: str):
    """A pooled attention classifier (labels pos / neg) trained for two epochs on a small separable CSV."""
    rows = [(t, "pos") for t in POSITIVE] * 6 + [(t, "neg") for t in NEGATIVE] * 6
    train = root / "train.csv"
    train.write_text("text,label\n" + "\n".join(f'"{text}",{label}' for text, label in rows) + "\n")
    argv = ["train", "classify", "--data", str(train), "--model", "pooled", "--embed-dim", "16", "--epochs", "2"]
    argv += ["--batch-size", "4", "--vocab-size", "100", "--no-progress", "--threads", "1", "--out", str(root / "run")]
    assert main([*argv, *options]) == 0
    return load_classifier(root / "run", device="cpu")


@pytest.fixture(scope="module")
def tiny_classifier(tmp_path_factory):
    return train_tiny(tmp_path_factory.mktemp("card-faithfulness"), "--attention-values", "states")


def test_the_sample_is_seeded_sorted_and_skips_documents_over_the_word_cap():
    texts = ["a b c", "a " * 50, "x", "y z", "w"]
    assert card_sample(texts, 3, seed=0, words=10) == card_sample(texts, 3, seed=0, words=10)
    assert 1 not in card_sample(texts, 4, seed=0, words=10)
    assert card_sample(texts, 9, words=10) == [0, 2, 3, 4]


def test_the_block_holds_the_sample_the_settings_the_figures_and_the_uniform_gap(tiny_classifier, tmp_path):
    texts, labels = POSITIVE + NEGATIVE, [1, 1, 1, 0, 0, 0]
    labels = [tiny_classifier.label_names.index("pos" if label else "neg") for label in labels]
    results = tmp_path / "faithfulness.json"
    row = {"shipped": "tiny", "uniform": UNIFORM, "uniform_command": "attnkit train ... --uniform-attention"}
    results.write_text(
        json.dumps({"data": {"r8": {"command": "attnkit experiment faithfulness", "models": {"m": row}}}})
    )
    uniform = uniform_gap(results, "tiny")
    assert uniform_gap(results, "other") is None
    assert uniform["difference"] == {"mean": -0.27, "low": -1.0, "high": 0.36}  # hundredths of a point
    assert uniform["source"] == "docs/results/faithfulness.json: data.r8.models.m (`attnkit experiment faithfulness`)"

    block = faithfulness_block(tiny_classifier, texts, labels, uniform=uniform, documents=4, seed=1)
    assert block == faithfulness_block(tiny_classifier, texts, labels, uniform=uniform, documents=4, seed=1)
    assert block["documents"] == card_sample(texts, 4, seed=1) and block["documents_measured"] == 4
    assert (block["erase"], block["seed"], block["integrated_gradients_steps"]) == ("delete", 1, 16)
    assert block["sample"] == {"count": 4, "seed": 1, "max_words": 200, "of": 6}
    assert sorted(block["methods"]) == ["attention", "integrated_gradients", "random"]  # no contributions here
    for figures in block["methods"].values():
        assert sorted(figures) == ["aopc_comprehensiveness", "flip_fraction"]
        assert 0.0 <= figures["flip_fraction"] <= 1.0 and -1.0 <= figures["aopc_comprehensiveness"] <= 1.0
    aopc = {name: figures["aopc_comprehensiveness"] for name, figures in block["methods"].items()}
    assert block["attention_share_of_ig"] == pytest.approx(aopc["attention"] / aopc["integrated_gradients"], abs=1e-3)
    assert block["uniform"] is uniform and "no test re-computes it" in block["note"]

    shown = "\n".join(faithfulness_lines({"faithfulness": block}))
    assert "## Faithfulness" in shown and f"| attention | {aopc['attention']:.3f} |" in shown
    assert "learned − uniform test accuracy -0.27 points [-1.00, +0.36]" in shown and uniform["source"] in shown
    assert faithfulness_lines({}) == []
    published = published_faithfulness(block)
    assert published["aopc_comprehensiveness"] == aopc and published["uniform_difference"] == uniform["difference"]


def test_a_block_with_no_uniform_row_says_so(tiny_classifier):
    block = faithfulness_block(tiny_classifier, POSITIVE, [0, 0, 0], documents=2)
    assert block["uniform"] is None and "none was measured" in block["note"]
    assert "Uniform attention" not in "\n".join(faithfulness_lines({"faithfulness": block}))


def test_refreshing_a_model_that_is_not_a_classifier_is_refused(capsys):
    with pytest.raises(ValueError, match="'dates-transformer' is a seq2seq model: only classifiers"):
        refresh_faithfulness("dates-transformer", results=None)
    assert ship_main(["--refresh-faithfulness", "no-such-model"]) == 2
    assert "ship: error: 'no-such-model': not a shipped model's name" in capsys.readouterr().err


def test_the_shipped_table_shows_the_figures_shipped_json_records(tmp_path):
    row = {"kind": "classifier", "data": "r8", "metric": "accuracy", "value": 96.98, "measured": "2026-11-25",
           "training_minutes": 2.9, "evaluate": "attnkit evaluate ...", "command": "attnkit train ..."}  # fmt: skip
    figures = {"attention": 0.1396, "integrated_gradients": 0.2696, "random": 0.011}
    found = {"documents": 16, "aopc_comprehensiveness": figures, "attention_share_of_ig": 0.518}
    gap = {"mean": -0.27, "low": -1.01, "high": 0.37}
    table = {"r8": {**row, "faithfulness": {**found, "uniform_difference": gap}}, "g2p": row}
    (tmp_path / "shipped.json").write_text(json.dumps(table))
    shown = render_shipped(tmp_path)
    assert "| r8 | 16 | 0.140 | 0.270 | 0.011 | 52% | – | -0.27 [-1.01, +0.37] |" in shown
    assert "| g2p | 16" not in shown
    table["r8"]["faithfulness"]["aopc_comprehensiveness"]["attention_contribution"] = 0.2831
    (tmp_path / "shipped.json").write_text(json.dumps(table))
    assert "| r8 | 16 | 0.140 | 0.270 | 0.011 | 52% | 105% | -0.27 [-1.01, +0.37] |" in render_shipped(tmp_path)
    (tmp_path / "shipped.json").write_text(json.dumps({"g2p": row}))
    assert "| name | documents | attention |" not in render_shipped(tmp_path)


def test_shipping_a_classifier_writes_its_faithfulness_block(tmp_path, monkeypatch):
    """A tiny fine-foods classifier shipped to a scratch shelf: its cards and shipped.json carry the block."""
    import attnkit.pretrained as pretrained

    command = "attnkit train classify --data fine-foods --model pooled --embed-dim 8 --epochs 1 --vocab-size 500"
    command += " --attention-values states"  # attention over the states: no attention_contribution method
    run = tmp_path / "run"
    argv = [*command.split()[1:], "--max-tokens", "64", "--threads", "1", "--no-progress", "--out", str(run)]
    assert main(argv) == 0
    shelf, results = tmp_path / "shelf", tmp_path / "shipped.json"
    shelf.mkdir()
    monkeypatch.setattr(pretrained, "SHELF", shelf)
    argv = [str(run), "tiny", "--data", "fine-foods", "--metric", "accuracy", "--command", command]
    assert ship_main([*argv, "--shelf", str(shelf), "--results", str(results)]) == 0
    card = json.loads((shelf / "tiny" / "card.json").read_text())
    block = card["faithfulness"]
    assert len(block["documents"]) == 16 and block["sample"]["of"] == 1000 and block["uniform"] is None
    assert sorted(block["methods"]) == ["attention", "integrated_gradients", "random"]
    assert "## Faithfulness" in (shelf / "tiny" / "MODEL_CARD.md").read_text()
    assert json.loads(results.read_text())["tiny"]["faithfulness"] == published_faithfulness(block)


def test_a_model_whose_attention_averages_embeddings_records_its_contributions_too(tmp_path):
    classifier = train_tiny(tmp_path, "--attention-values", "embeddings")
    block = faithfulness_block(classifier, POSITIVE + NEGATIVE, [0, 0, 0, 1, 1, 1], documents=3)
    assert sorted(block["methods"]) == ["attention", "attention_contribution", "integrated_gradients", "random"]
    aopc = {name: figures["aopc_comprehensiveness"] for name, figures in block["methods"].items()}
    share = aopc["attention_contribution"] / aopc["integrated_gradients"]
    assert block["contribution_share_of_ig"] == pytest.approx(share, abs=1e-3)
    assert "(`attention_contribution`): " in "\n".join(faithfulness_lines({"faithfulness": block}))
