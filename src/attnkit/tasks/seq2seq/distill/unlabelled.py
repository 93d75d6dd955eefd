"""Sources with no gold target, for the teachers to label (Sun et al. 2019 distil on unlabelled words too) (layer 5).

``--distill-unlabelled builtin`` keeps the English-looking words of the built-in text classification data sets
(:data:`TEXT_SETS`): lowercased alphabetic tokens of 2 to 20 letters with a vowel, no letter three times in a row,
seen at least twice (a typo is seldom made twice). ``--distill-unlabelled FILE`` reads one source per line. Either
way every source of the task's own splits, and any the teachers' tokeniser does not know whole, is dropped.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

from attnkit.tasks.seq2seq.distill.options import BUILTIN

__all__ = ["BUILTIN", "TEXT_SETS", "builtin_words", "english_words", "unlabelled_sources", "word_file"]

TEXT_SETS = ("fine-foods", "r8", "r52", "20ng")
MIN_LENGTH, MAX_LENGTH, MIN_COUNT = 2, 20, 2
_TOKEN = re.compile(r"[a-z]+")
_VOWEL = re.compile(r"[aeiouy]")
_TRIPLE = re.compile(r"(.)\1\1")


def english_words(texts: Iterable[str], *, min_count: int = MIN_COUNT) -> list[str]:
    """The English-looking words of ``texts`` (see the module docstring), sorted."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(_TOKEN.findall(text.lower()))
    return sorted(
        word
        for word, count in counts.items()
        if count >= min_count
        and MIN_LENGTH <= len(word) <= MAX_LENGTH
        and _VOWEL.search(word)
        and not _TRIPLE.search(word)
    )


def builtin_words(names: Iterable[str] = TEXT_SETS) -> list[str]:
    """:func:`english_words` of every text (training and test) of the built-in text data sets ``names``."""
    from attnkit.data.classification import load_data_set

    texts: list[str] = []
    for name in names:
        data = load_data_set(name)
        texts += data.train_texts + data.test_texts
    return english_words(texts)


def word_file(path: str | Path) -> list[str]:
    """The sources of a file, one a line (blank lines skipped, spaces around a source dropped)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"--distill-unlabelled {path}: no such file (or give {BUILTIN!r})")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise ValueError(
            f"--distill-unlabelled {path}: not UTF-8 text ({error.reason} at byte {error.start})"
        ) from None
    return [line.strip() for line in lines if line.strip()]


def unlabelled_sources(
    given: str, *, exclude: Collection[str], known: Callable[[str], bool], limit: int | None, seed: int
) -> tuple[list[str], dict]:
    """The unlabelled sources to add (sorted; at most ``limit``, a sample seeded by ``seed``) and a record of them
    (``from``, ``candidates``, ``added``). ``known``: whether the teachers' tokeniser encodes a source without
    ``<unk>``."""
    words = builtin_words() if given == BUILTIN else word_file(given)
    candidates = sorted({word for word in words if word not in exclude and known(word)})
    chosen = candidates
    if limit is not None and limit < len(candidates):
        chosen = sorted(random.Random(seed).sample(candidates, limit))
    return chosen, {"from": given, "candidates": len(candidates), "added": len(chosen)}
