"""Fixtures shared by the command-line tests of the CTranslate2 backend (``test_export_cli``,
``test_ctranslate2_backend_cli``): one small dates Transformer, trained once per session through the CLI."""

from __future__ import annotations

import pytest

from attnkit.cli import main

TINY = ["--epochs", "2", "--batch-size", "32", "--no-progress", "--no-test", "--limit", "400"]


@pytest.fixture(scope="session")
def dates_transformer(tmp_path_factory):
    """The directory holding ``run/``: a d 32, 1 + 1 layer Transformer trained 2 epochs on 400 dates pairs."""
    root = tmp_path_factory.mktemp("dates-transformer")
    argv = ["train", "seq2seq", "--data", "dates", "--model", "transformer", "--dim", "32", "--heads", "2"]
    argv += ["--encoder-layers", "1", "--decoder-layers", "1", "--ff-dim", "64", *TINY, "--out", str(root / "run")]
    assert main(argv) == 0
    return root
