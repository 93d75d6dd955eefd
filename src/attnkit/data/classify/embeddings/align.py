"""Word vectors lined up with a tokeniser's vocabulary: row ``i`` of the matrix is the vector of token id ``i``.

Shapes: ``V`` the tokeniser's vocabulary size (ids ``0 .. V-1``, ``[PAD]`` = 0), ``N`` the number of words the
source has vectors for, ``D`` the vectors' dimension.

How each vocabulary entry finds its vector, in order (:attr:`PretrainedEmbeddings.counts` counts each way):

1. ``exact``: the token's string is a word of the source.
2. ``lowercase``: its lowercased string is a word of the source (GloVe is uncased: a cased tokeniser's ``The`` gets
   ``the``'s vector), or, failing that, the source's first word that differs from it only in case (a lowercasing
   tokeniser's ``obama`` gets a cased source's ``Obama``; "first" is in the source's order, by frequency in
   word2vec files).
3. ``contraction``: a word with an apostrophe that the source keeps apart, as GloVe does (Penn Treebank style),
   gets the mean of its parts: ``don't`` = mean(``do``, ``n't``), ``i'm`` = mean(``i``, ``'m``), ``dog's`` =
   mean(``dog``, ``'s``), when both parts are words of the source.
4. otherwise the row is ``missing``: drawn from N(0, σ²), σ the standard deviation of the found rows' entries (of
   the whole source when none is found), with its own seeded generator, so a missing row's values do not depend on
   which other rows were found.

``[PAD]`` (id 0) is always the zero row and never counts as found. WordPiece continuation pieces (``##ing``) are
never looked up (``continuation``): a word vector is for a whole word. The word-initial pieces of a subword
vocabulary (WordPiece heads, all BPE pieces) are looked up by their string like any token, so a piece that is also a
whole word (``the``, ``cat``) gets that word's vector, and a BPE piece that happens to spell a word (``ing``, ``er``)
gets that word's vector too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

if TYPE_CHECKING:
    from attnkit.data.classify.tokenization import TextTokenizer

__all__ = ["WAYS", "PretrainedEmbeddings", "WordVectors", "align"]

WAYS = ("exact", "lowercase", "contraction", "continuation", "missing")
_CONTRACTION = re.compile(r"^(\w+?)(n't|'\w+)$")


@dataclass(frozen=True)
class WordVectors:
    """Vectors ``[N, D]`` for ``N`` words (the first of two equal words wins), from any source; a memory map is
    fine: only the rows looked up are read."""

    words: list[str]
    vectors: np.ndarray
    _index: dict[str, int] = field(init=False, repr=False, compare=False)
    _caseless: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.vectors.ndim != 2 or self.vectors.shape[0] != len(self.words):
            raise ValueError(
                f"vectors must be [N, D] with N = len(words) = {len(self.words)}, got {self.vectors.shape}"
            )
        if not self.words or self.vectors.shape[1] == 0:
            raise ValueError(f"vectors must hold at least one word and one dimension, got {self.vectors.shape}")
        index: dict[str, int] = {}
        caseless: dict[str, int] = {}
        for row, word in enumerate(self.words):
            index.setdefault(word, row)
            caseless.setdefault(word.lower(), row)
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_caseless", caseless)

    @property
    def dim(self) -> int:
        """``D``, the length of each vector."""
        return int(self.vectors.shape[1])

    def row(self, word: str) -> int | None:
        """The row of ``word``, or ``None`` when the source has no vector for it."""
        return self._index.get(word)

    def caseless_row(self, word: str) -> int | None:
        """The row of the first word equal to ``word`` when both are lowercased, or ``None``."""
        return self._caseless.get(word.lower())


@dataclass
class PretrainedEmbeddings:
    """An embedding matrix lined up with a tokeniser, and how much of the vocabulary the source covered.

    ``weight [V, D]`` float32 (row 0, ``[PAD]``, is zero); ``found [V]`` bool, True where the row came from the
    source (e.g. to freeze only those rows); ``counts`` per way of :data:`WAYS` (``[PAD]`` is in none);
    ``settings``: JSON-ready description of the source, for a checkpoint's config.
    """

    weight: torch.Tensor
    found: torch.Tensor
    counts: dict[str, int]
    settings: dict[str, Any]

    @property
    def dim(self) -> int:
        """``D``, the embedding width the model must use."""
        return int(self.weight.shape[1])

    @property
    def num_found(self) -> int:
        """The number of rows that came from the source."""
        return int(self.found.sum())

    @property
    def coverage(self) -> float:
        """The share of vocabulary entries other than ``[PAD]`` that came from the source."""
        return self.num_found / max(1, self.weight.shape[0] - 1)

    def summary(self) -> str:
        """One line for a log, e.g. ``glove: 9,120 of 9,999 vocabulary entries found (91.2%; exact 9,051, ...)``."""
        ways = ", ".join(f"{way} {self.counts[way]:,}" for way in WAYS if self.counts[way])
        return (
            f"{self.settings.get('source', '?')}: {self.num_found:,} of {self.weight.shape[0] - 1:,} vocabulary "
            f"entries found ({100 * self.coverage:.1f}%; {ways}), D = {self.dim}"
        )


def align(
    vectors: WordVectors, tokenizer: TextTokenizer, *, seed: int = 0, settings: dict[str, Any] | None = None
) -> PretrainedEmbeddings:
    """Line ``vectors [N, D]`` up with ``tokenizer``'s vocabulary (the lookup order is the module docstring's): the
    ``[V, D]`` matrix, the ``[V]`` found mask and the counts per way; ``seed`` seeds the rows the source lacks."""
    size, dim = tokenizer.vocab_size, vectors.dim
    rows = np.full(size, -1, dtype=np.int64)  # [V] source row, or -1
    pairs: dict[int, tuple[int, int]] = {}  # contraction token id -> its two source rows
    counts = dict.fromkeys(WAYS, 0)
    for token_id in range(size):
        if token_id == tokenizer.pad_id:
            continue
        token = tokenizer.id_to_token(token_id)
        way = _lookup(vectors, token, tokenizer.kind, token_id, rows, pairs)
        counts[way] += 1
    source = np.asarray(vectors.vectors)
    found_rows = np.flatnonzero(rows >= 0)
    table = np.zeros((size, dim), dtype=np.float32)  # [V, D]
    table[found_rows] = source[rows[found_rows]]
    for token_id, (head, tail) in pairs.items():
        table[token_id] = (source[head].astype(np.float32) + source[tail]) / 2
    found = torch.zeros(size, dtype=torch.bool)  # [V]
    found[torch.from_numpy(found_rows)] = True
    found[list(pairs)] = True
    weight = torch.from_numpy(table)  # [V, D]
    scale = _scale(weight[found], source)
    generator = torch.Generator().manual_seed(seed)
    noise = torch.randn(size, dim, generator=generator) * scale  # [V, D]
    weight = torch.where(found.unsqueeze(1), weight, noise)
    weight[tokenizer.pad_id] = 0.0
    return PretrainedEmbeddings(weight=weight, found=found, counts=counts, settings=dict(settings or {}))


def _scale(found: torch.Tensor, source: np.ndarray) -> float:
    """The standard deviation for random rows: of the found rows' entries ``found [F, D]``, else of the source's."""
    if found.numel() >= 2:
        return float(found.std())
    if source.size >= 2:
        return float(np.std(source))
    return 1.0


def _lookup(
    vectors: WordVectors, token: str, kind: str, token_id: int, rows: np.ndarray, pairs: dict[int, tuple[int, int]]
) -> str:
    """Find ``token``'s vector: fill ``rows[token_id]`` or ``pairs[token_id]`` and return the way (one of WAYS)."""
    if kind == "wordpiece" and token.startswith("##"):
        return "continuation"
    row = vectors.row(token)
    if row is not None:
        rows[token_id] = row
        return "exact"
    lower = token.lower()
    row = vectors.row(lower)
    if row is None:
        row = vectors.caseless_row(lower)
    if row is not None:
        rows[token_id] = row
        return "lowercase"
    match = _CONTRACTION.match(lower.replace("’", "'"))
    if match:
        head, tail = vectors.row(match.group(1)), vectors.row(match.group(2))
        if head is not None and tail is not None:
            pairs[token_id] = (head, tail)
            return "contraction"
    return "missing"
