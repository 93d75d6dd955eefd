"""A classifier's embedding table started from word vectors (layer 5): ``--embeddings word2vec|fasttext|glove|PATH``.

Row ``i`` is token ``i``'s vector (tokens without one get seeded random rows of the same scale; padding is zero).
``word2vec``/``fasttext`` are trained on the training split only, with a fixed gensim seed, so every seed and
resumed part of a run reuses one cached training.

Shape glossary:
    V  vocabulary   D  embedding size
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

from attnkit.data.classify.tokenization import TextTokenizer
from attnkit.tasks.classify.config import ClassifierConfig

__all__ = ["initialise_embeddings"]


def initialise_embeddings(
    model: nn.Module, config: ClassifierConfig, tokenizer: TextTokenizer, texts: Sequence[str], *, seed: int
) -> ClassifierConfig:
    """Copy the vectors ``config.embeddings`` names into ``model.embedding`` (``[V, D]``), freeze it if asked;
    return ``config`` with the vectors' settings recorded."""
    from attnkit.data.classify.embeddings import TrainOptions, pretrained_embeddings

    options = TrainOptions(dim=config.embed_dim)  # gensim's own seed stays fixed: one cached training per corpus
    vectors = pretrained_embeddings(config.embeddings, tokenizer, texts=texts, options=options, seed=seed)
    if vectors.dim != config.embed_dim:
        raise ValueError(
            f"--embeddings {config.embeddings} gives {vectors.dim}-dimensional vectors but --embed-dim is "
            f"{config.embed_dim}: pass --embed-dim {vectors.dim}"
        )
    table: nn.Embedding = model.embedding
    with torch.no_grad():
        table.weight.copy_(vectors.weight.to(table.weight.dtype))  # [V, D]
    table.weight.requires_grad_(not config.freeze_embeddings)
    return dataclasses.replace(config, embeddings_settings=vectors.settings | {"coverage": vectors.coverage})


def resumed_embeddings(config: ClassifierConfig, last: Path) -> ClassifierConfig:
    """``config`` as a resumed run continues it: with the vectors' settings its first start recorded in ``last``'s
    ``config.json`` (a resume takes the weights from ``last`` and does not read the vectors again)."""
    from attnkit.checkpointing import read_config

    return dataclasses.replace(config, embeddings_settings=read_config(last).get("embeddings_settings"))
