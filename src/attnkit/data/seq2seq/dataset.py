"""The container every sequence-to-sequence data set loads into, and the hash that makes splits deterministic (layer 5)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["SPLITS", "Level", "Pair", "PairFile", "Seq2SeqData", "hash_order", "stable_key"]

Pair = tuple[str, str]
Level = Literal["char", "symbol", "subword"]
SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class PairFile:
    """Where a split's pairs were read from: enough to find a pair's line again for a message
    (:func:`attnkit.data.seq2seq.files.pair_line`)."""

    path: str
    source_key: str = "source"
    target_key: str = "target"
    delimiter: str | None = None


@dataclass
class Seq2SeqData:
    """Source/target text pairs in three splits.

    A source may appear several times in ``train`` (one pair per acceptable target); in ``valid`` and ``test`` each
    source appears once, and ``references`` lists every acceptable target of those with several (cmudict); others
    have their pair's target as sole reference. Levels: ``"char"``, ``"symbol"`` (whitespace separated: phonemes,
    words) or ``"subword"`` (BPE). ``files``: for data read from user files, the :class:`PairFile` each split came
    from (a validation split carved out of the training file names the training file).
    """

    name: str
    train: list[Pair]
    valid: list[Pair]
    test: list[Pair]
    source_level: Level = "char"
    target_level: Level = "char"
    shared_vocab: bool = False
    references: dict[str, list[str]] = field(default_factory=dict)
    files: dict[str, PairFile] = field(default_factory=dict)

    def split(self, name: str) -> list[Pair]:
        """The pairs of split ``name`` (``"train"``, ``"valid"`` or ``"test"``)."""
        if name not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {name!r}")
        return getattr(self, name)

    def references_for(self, name: str) -> list[list[str]]:
        """For each pair of split ``name``, in order, every acceptable target (at least the pair's own)."""
        return [self.references.get(source, [target]) for source, target in self.split(name)]

    @property
    def sizes(self) -> dict[str, int]:
        """Number of pairs per split."""
        return {name: len(self.split(name)) for name in SPLITS}

    def __repr__(self) -> str:
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items())
        return f"Seq2SeqData(name={self.name!r}, {sizes}, levels={self.source_level}->{self.target_level})"


def stable_key(salt: str, key: str) -> str:
    """A hex digest of ``salt`` and ``key`` that orders items the same on every machine and Python version: sorting
    by it is a seeded shuffle in which adding or removing one item moves no other item between splits."""
    return hashlib.sha256(f"{salt}\x00{key}".encode()).hexdigest()


def hash_order(keys: Iterable[str], salt: str) -> list[str]:
    """The distinct ``keys`` sorted by :func:`stable_key`."""
    return sorted(set(keys), key=lambda k: stable_key(salt, k))
