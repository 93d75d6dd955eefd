"""Classifiers started from word vectors: ``--embeddings PATH|word2vec`` fills the embedding table (recorded in the
checkpoint's config), ``--freeze-embeddings`` keeps it fixed, and a size mismatch is one clear line."""

from __future__ import annotations

import json

import pytest
import torch

from attnkit.cli import main
from attnkit.tasks.classify.inference import load_classifier

ROWS = [("great taste and lovely smell", "pos"), ("awful taste and stale smell", "neg")] * 10


@pytest.fixture
def data(tmp_path):
    lines = ["text,label"] + [f"{text},{label}" for text, label in ROWS]
    (tmp_path / "train.csv").write_text("\n".join(lines) + "\n")
    vectors = {"great": [1.0, 0.0, 0.5, 0.25], "awful": [-1.0, 0.0, -0.5, 0.25], "taste": [0.0, 1.0, 0.0, 0.0]}
    text = [f"{len(vectors)} 4"] + [f"{word} {' '.join(map(str, v))}" for word, v in vectors.items()]
    (tmp_path / "vectors.txt").write_text("\n".join(text) + "\n")
    return tmp_path, vectors


def train(tmp_path, *extra: str) -> int:
    argv = ["train", "classify", "--data", str(tmp_path / "train.csv"), "--model", "pooled", "--encoder", "none"]
    argv += [
        "--epochs",
        "2",
        "--batch-size",
        "4",
        "--vocab-size",
        "50",
        "--no-progress",
        "--out",
        str(tmp_path / "run"),
    ]
    return main([*argv, *extra])


def test_a_vector_file_fills_the_table_and_freezing_keeps_it(data):
    tmp_path, vectors = data
    assert (
        train(tmp_path, "--embeddings", str(tmp_path / "vectors.txt"), "--embed-dim", "4", "--freeze-embeddings") == 0
    )
    classifier = load_classifier(tmp_path / "run" / "best")
    table = classifier.model.embedding.weight
    tokenizer = classifier.encoder.tokenizer
    for word, vector in vectors.items():
        assert torch.equal(table[tokenizer.encode(word)[0]], torch.tensor(vector))  # unchanged by training
    config = json.loads((tmp_path / "run" / "best" / "config.json").read_text())
    assert config["embeddings"] == str(tmp_path / "vectors.txt") and config["freeze_embeddings"] is True
    assert config["embeddings_settings"]["dim"] == 4


def test_a_size_mismatch_names_the_size_to_use(data, capsys):
    tmp_path, _ = data
    assert train(tmp_path, "--embeddings", str(tmp_path / "vectors.txt"), "--embed-dim", "8") == 2
    assert "gives 4-dimensional vectors but --embed-dim is 8: pass --embed-dim 4" in capsys.readouterr().err


def test_unknown_sources_and_freezing_random_vectors_are_refused_before_anything_is_written(data, capsys):
    tmp_path, _ = data
    assert train(tmp_path, "--embeddings", "elmo") == 2
    assert "embeddings must be one of random, word2vec, fasttext, glove" in capsys.readouterr().err
    assert train(tmp_path, "--freeze-embeddings") == 2
    assert "freeze_embeddings keeps pre-trained vectors fixed" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_word2vec_trained_on_the_training_split_starts_the_table(data, tmp_path_factory, monkeypatch):
    pytest.importorskip("gensim", reason="gensim (the embeddings extra) is not installed")
    tmp_path, _ = data
    monkeypatch.setenv("ATTNKIT_EMBEDDINGS_CACHE", str(tmp_path_factory.mktemp("cache")))
    assert train(tmp_path, "--embeddings", "word2vec", "--embed-dim", "8", "--label-smoothing", "0.1") == 0
    config = json.loads((tmp_path / "run" / "best" / "config.json").read_text())
    assert config["embeddings"] == "word2vec" and config["embeddings_settings"]["dim"] == 8
    assert config["label_smoothing"] == 0.1


def test_a_run_started_from_vectors_resumes_and_keeps_their_record(data):
    tmp_path, _ = data
    vectors = ("--embeddings", str(tmp_path / "vectors.txt"), "--embed-dim", "4")
    assert train(tmp_path, *vectors, "--epochs", "1") == 0
    recorded = json.loads((tmp_path / "run" / "last" / "config.json").read_text())["embeddings_settings"]
    assert train(tmp_path, *vectors, "--epochs", "2", "--resume") == 0  # was refused: "the model differs"
    config = json.loads((tmp_path / "run" / "last" / "config.json").read_text())
    assert config["embeddings_settings"] == recorded
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["epochs_run"] == 2
