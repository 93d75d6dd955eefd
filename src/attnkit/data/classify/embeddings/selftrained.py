"""word2vec and fastText vectors trained with gensim on the training texts, cached on disk.

The corpus gensim sees is the tokeniser's own output: each training text encoded with ``tokenizer`` (same
normalisation, same pre-tokeniser, same vocabulary) and written back as token strings, so every token that occurs in
the training texts, ``[UNK]`` and subword pieces included, gets a vector; texts longer than gensim's 10,000-token
sentence limit are cut into consecutive chunks instead of being truncated.

Repeatability: with ``workers=1`` (the default) training is deterministic for a given seed, whatever
``PYTHONHASHSEED`` is; with more workers, threads race over the shared weights and each run differs a little.

Cache: one directory per recipe under ``cache_dir`` (default :func:`default_cache_dir`), named by a SHA-256 of the
texts, the tokeniser (its ``tokenizer.json``), the algorithm, every :class:`TrainOptions` field (seed and workers
included) and the gensim version; it holds ``vectors.npy`` (``[N, D]`` float32), ``words.json`` and
``settings.json``, written to a temporary directory and renamed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from attnkit.data.builtin import MissingPackageError
from attnkit.data.cache import cache_dir
from attnkit.data.classify.embeddings.align import WordVectors

if TYPE_CHECKING:
    from attnkit.data.classify.tokenization import TextTokenizer

__all__ = ["ALGORITHMS", "CACHE_ENV", "TrainOptions", "cache_key", "default_cache_dir", "train_word_vectors"]

ALGORITHMS = ("word2vec", "fasttext")
CACHE_ENV = "ATTNKIT_EMBEDDINGS_CACHE"
_FORMAT = 1  # bump when the cache layout or the corpus construction changes
_MAX_SENTENCE = 10_000  # gensim's MAX_WORDS_IN_BATCH: longer sentences are truncated


@dataclass(frozen=True)
class TrainOptions:
    """gensim settings for :func:`train_word_vectors` (the defaults: CBOW-300, window 5, 5 epochs, 1 worker).

    ``min_count`` is 1: the tokeniser has already dropped rare words. Keep ``seed`` fixed across classifier seeds
    so they share one cached training; only ``workers=1`` is deterministic. ``buckets``: fastText's hash buckets
    for character n-grams (``buckets x dim`` float32 during training).
    """

    dim: int = 300
    epochs: int = 5
    window: int = 5
    negative: int = 5
    skip_gram: bool = False
    min_count: int = 1
    seed: int = 0
    workers: int = 1
    buckets: int = 2_000_000

    def __post_init__(self) -> None:
        for name in ("dim", "epochs", "window", "min_count", "workers", "buckets"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.negative < 1:
            raise ValueError(f"negative must be at least 1, got {self.negative}")


def default_cache_dir() -> Path:
    """``$ATTNKIT_EMBEDDINGS_CACHE`` if set, else ``embeddings/`` in attnkit's cache (:func:`attnkit.data.cache.cache_dir`)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    return cache_dir() / "embeddings"


def cache_key(algorithm: str, texts: Sequence[str], tokenizer: TextTokenizer, options: TrainOptions) -> str:
    """The SHA-256 (hex) naming the cache entry of this recipe: texts, tokeniser, algorithm, options, gensim."""
    import gensim

    texts_hash = hashlib.sha256()
    for text in texts:
        data = text.encode("utf-8")
        texts_hash.update(len(data).to_bytes(8, "little") + data)  # length-prefixed: ["ab", "c"] != ["a", "bc"]
    recipe = {
        "format": _FORMAT,
        "algorithm": algorithm,
        "options": {k: v for k, v in dataclasses.asdict(options).items() if algorithm == "fasttext" or k != "buckets"},
        "gensim": gensim.__version__,
        "texts": texts_hash.hexdigest(),
        "tokenizer": hashlib.sha256(tokenizer.to_str().encode("utf-8")).hexdigest(),
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode("utf-8")).hexdigest()


def train_word_vectors(
    algorithm: str,
    texts: Sequence[str],
    tokenizer: TextTokenizer,
    options: TrainOptions | None = None,
    *,
    cache_dir: str | Path | None = None,
) -> tuple[WordVectors, dict[str, Any]]:
    """Vectors ``[N, D]`` for the distinct tokens of ``texts`` (the training texts only, as ``tokenizer`` cuts
    them) from ``algorithm`` (``"word2vec"`` or ``"fasttext"``), cached; and the recipe's settings.

    Raises:
        ValueError: for an unknown ``algorithm`` or empty ``texts``.
        MissingPackageError: when gensim is not installed.
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    if not texts:
        raise ValueError(f"texts: {algorithm} needs the training texts, got none")
    _require_gensim()
    options = options or TrainOptions()
    key = cache_key(algorithm, texts, tokenizer, options)
    entry = Path(cache_dir if cache_dir is not None else default_cache_dir()) / f"{algorithm}-{options.dim}d-{key[:24]}"
    settings = {"source": algorithm, **dataclasses.asdict(options), "cache_key": key}
    if (entry / "vectors.npy").is_file():
        words = json.loads((entry / "words.json").read_text(encoding="utf-8"))
        vectors = np.load(entry / "vectors.npy", allow_pickle=False)
        return WordVectors(words, vectors), settings
    words, vectors = _fit(algorithm, _corpus(texts, tokenizer), options)
    _store(entry, words, vectors, settings)
    return WordVectors(words, vectors), settings


def _require_gensim() -> None:
    try:
        import gensim  # noqa: F401
    except ImportError:
        raise MissingPackageError(
            "word2vec and fasttext embeddings need gensim; install it with: pip install 'attnkit[embeddings]'"
        ) from None


def _corpus(texts: Sequence[str], tokenizer: TextTokenizer) -> list[list[str]]:
    """The texts as lists of token strings, cut into chunks of at most gensim's sentence limit."""
    vocabulary = [tokenizer.id_to_token(i) for i in range(tokenizer.vocab_size)]
    corpus = []
    for ids in tokenizer.encode_batch(list(texts)):
        tokens = [vocabulary[i] for i in ids]
        corpus.extend(tokens[start : start + _MAX_SENTENCE] for start in range(0, len(tokens), _MAX_SENTENCE))
    return corpus


def _fit(algorithm: str, corpus: list[list[str]], options: TrainOptions) -> tuple[list[str], np.ndarray]:
    """Train gensim's ``Word2Vec`` or ``FastText`` on ``corpus``; return its words and ``[N, D]`` float32 vectors."""
    from gensim.models import FastText, Word2Vec

    if algorithm == "word2vec":
        model_class, extra = Word2Vec, {}
    else:
        model_class, extra = FastText, {"bucket": options.buckets}
    model = model_class(
        sentences=corpus,
        vector_size=options.dim,
        window=options.window,
        min_count=options.min_count,
        sg=int(options.skip_gram),
        negative=options.negative,
        epochs=options.epochs,
        seed=options.seed,
        workers=options.workers,
        **extra,
    )
    return list(model.wv.index_to_key), np.asarray(model.wv.vectors, dtype=np.float32)


def _store(entry: Path, words: list[str], vectors: np.ndarray, settings: dict[str, Any]) -> None:
    """Write a cache entry atomically: fill a temporary sibling directory, then rename it to ``entry``."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=f".{entry.name}.", dir=entry.parent))
    try:
        np.save(temporary / "vectors.npy", vectors, allow_pickle=False)
        (temporary / "words.json").write_text(json.dumps(words, ensure_ascii=False), encoding="utf-8")
        (temporary / "settings.json").write_text(json.dumps(settings, indent=1), encoding="utf-8")
        try:
            os.replace(temporary, entry)
        except OSError:  # another process stored the same entry first: theirs is as good
            if not (entry / "vectors.npy").is_file():
                raise
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
