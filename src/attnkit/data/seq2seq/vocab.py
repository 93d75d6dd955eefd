"""A small symbol vocabulary for character-, phoneme- or word-level sequences (layer 5).

Every sequence-to-sequence tokeniser in attnkit shares the same four special ids, so batching and decoding
never need to ask which tokeniser they hold:

    <pad> = 0    <bos> = 1    <eos> = 2    <unk> = 3

``encode`` adds no special tokens (batching adds ``<bos>`` and ``<eos>``); ``decode`` drops ``<pad>`` and
``<bos>`` and stops at the first ``<eos>``. A vocabulary is saved as a small JSON file, never a pickle.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Literal

__all__ = [
    "BOS",
    "BOS_ID",
    "EOS",
    "EOS_ID",
    "LEVELS",
    "PAD",
    "PAD_ID",
    "SPECIALS",
    "UNK",
    "UNK_ID",
    "Vocab",
    "content_ids",
]

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)
PAD_ID, BOS_ID, EOS_ID, UNK_ID = range(4)
LEVELS = ("char", "symbol")
FORMAT = "attnkit.vocab"

Level = Literal["char", "symbol"]


class Vocab:
    """Maps the symbols of a text to ids and back; ``symbols`` come in id order after the four specials.

    ``level="char"``: every character is a symbol, spaces included, and ``decode`` joins with ``""``;
    ``"symbol"``: symbols are separated by whitespace (phonemes, words) and ``decode`` joins with ``" "``.
    """

    def __init__(self, symbols: Sequence[str], *, level: Level) -> None:
        if level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
        symbols = list(symbols)
        clash = sorted(set(symbols) & set(SPECIALS))
        if clash:
            raise ValueError(f"symbols must not include the special tokens {clash}")
        if len(set(symbols)) != len(symbols):
            repeated = sorted(s for s, n in Counter(symbols).items() if n > 1)
            raise ValueError(f"symbols must be distinct; repeated: {repeated[:10]}")
        for symbol in symbols:
            if not symbol or (level == "char" and len(symbol) != 1):
                raise ValueError(f"a {level}-level symbol must be one character, got {symbol!r}")
            if level == "symbol" and any(ch.isspace() for ch in symbol):
                raise ValueError(f"a symbol-level symbol must not contain whitespace, got {symbol!r}")
        self.level: Level = level
        self._itos = [*SPECIALS, *symbols]
        self._stoi = {s: i for i, s in enumerate(self._itos)}

    @classmethod
    def build(cls, texts: Iterable[str], *, level: Level, min_count: int = 1, max_size: int | None = None) -> Vocab:
        """Collect the symbols of ``texts`` (the training split), most frequent first, ties by symbol; rarer than
        ``min_count`` become ``<unk>``; ``max_size`` ordinary symbols at most (the specials come on top)."""
        counts: Counter[str] = Counter()
        for text in texts:
            counts.update(_split(text, level))
        return cls.from_counts(counts, level=level, min_count=min_count, max_size=max_size)

    @classmethod
    def from_counts(
        cls, counts: Counter[str], *, level: Level, min_count: int = 1, max_size: int | None = None
    ) -> Vocab:
        """The vocabulary :meth:`build` makes from these symbol counts (see :meth:`count_into`)."""
        ranked = sorted((s for s, n in counts.items() if n >= min_count), key=lambda s: (-counts[s], s))
        return cls(ranked[:max_size] if max_size is not None else ranked, level=level)

    @staticmethod
    def count_into(counts: Counter[str], text: str, level: Level) -> None:
        """Add ``text``'s symbols at ``level`` to ``counts`` (to build a vocabulary while a file streams by)."""
        counts.update(_split(text, level))

    # ids ---------------------------------------------------------------------------------------------------
    pad_id, bos_id, eos_id, unk_id = PAD_ID, BOS_ID, EOS_ID, UNK_ID

    @property
    def vocab_size(self) -> int:
        """The number of ids, specials included: embedding tables need this many rows."""
        return len(self._itos)

    def __len__(self) -> int:
        return len(self._itos)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self.level == other.level and self._itos == other._itos

    def __repr__(self) -> str:
        return f"Vocab(level={self.level!r}, size={len(self)})"

    @property
    def symbols(self) -> list[str]:
        """All symbols in id order, specials first."""
        return list(self._itos)

    def id_to_token(self, token_id: int) -> str:
        """The symbol of ``token_id``; raises ``IndexError`` outside ``[0, vocab_size)``."""
        if not 0 <= token_id < len(self._itos):
            raise IndexError(f"token id {token_id} outside [0, {len(self._itos)})")
        return self._itos[token_id]

    def token_to_id(self, token: str) -> int:
        """The id of ``token``, or ``<unk>``'s id when unknown."""
        return self._stoi.get(token, UNK_ID)

    # text <-> ids ------------------------------------------------------------------------------------------
    def tokens(self, text: str) -> list[str]:
        """The symbols of ``text`` as :meth:`encode` sees them (unknown ones shown as ``<unk>``)."""
        return [s if s in self._stoi else UNK for s in _split(text, self.level)]

    def encode(self, text: str) -> list[int]:
        """Ids of the symbols of ``text``; no ``<bos>``/``<eos>`` added; unknown symbols map to ``<unk>``."""
        return [self._stoi.get(s, UNK_ID) for s in _split(text, self.level)]

    def encode_batch(self, texts: Iterable[str]) -> list[list[int]]:
        """:meth:`encode` applied to each text."""
        return [self.encode(t) for t in texts]

    def decode(self, ids: Iterable[int]) -> str:
        """Text of ``ids``: ``<pad>`` and ``<bos>`` are skipped and decoding stops at the first ``<eos>``."""
        return ("" if self.level == "char" else " ").join(self.id_to_token(i) for i in content_ids(ids))

    # persistence -------------------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """A JSON-ready description: ``{"format", "level", "symbols"}`` (symbols after the specials)."""
        return {"format": FORMAT, "level": self.level, "symbols": self._itos[len(SPECIALS) :]}

    @classmethod
    def from_dict(cls, data: dict) -> Vocab:
        """Inverse of :meth:`to_dict`; raises ``ValueError`` on anything else."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"not an attnkit vocabulary (expected format {FORMAT!r})")
        return cls(data["symbols"], level=data["level"])

    def save(self, path: str | Path) -> Path:
        """Write the vocabulary as JSON to ``path`` atomically and return the path."""
        text = json.dumps(self.to_dict(), ensure_ascii=False, indent=1) + "\n"
        return write_atomically(path, lambda temporary: temporary.write_text(text, encoding="utf-8"))

    @classmethod
    def load(cls, path: str | Path) -> Vocab:
        """Read a vocabulary written by :meth:`save`."""
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


def content_ids(ids: Iterable[int]) -> list[int]:
    """``ids`` up to the first ``<eos>``, without ``<pad>`` and ``<bos>``: what a decoder's output says."""
    kept = []
    for i in map(int, ids):
        if i == EOS_ID:
            break
        if i not in (PAD_ID, BOS_ID):
            kept.append(i)
    return kept


def write_atomically(path: str | Path, write: Callable[[Path], object]) -> Path:
    """``write`` a temporary sibling of ``path`` (creating its folder), then rename it to ``path``; return ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write(temporary)
    os.replace(temporary, path)
    return path


def _split(text: str, level: str) -> list[str]:
    return list(text) if level == "char" else text.split()
