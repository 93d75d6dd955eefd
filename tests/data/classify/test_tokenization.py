"""Tokenisers trained on training texts: special ids, vocabulary limits, tokenizer.json round trips, repeatability."""

import json
import subprocess
import sys

import pytest

from attnkit.data.classify.tokenization import KINDS, PAD, UNK, TextTokenizer
from attnkit.data.reading import DataError

TEXTS = [
    "The cat sat on the mat.",
    "The dog sat on the log!",
    "A cat and a dog, on a mat.",
    "Cats and dogs: the mat, the log.",
] * 5 + ["Zebra crossing once."]


@pytest.fixture(scope="module")
def word():
    return TextTokenizer.train(TEXTS, kind="word", min_frequency=2)


def test_special_ids(word):
    assert word.pad_id == 0 and word.id_to_token(0) == PAD
    assert word.unk_id == 1 and word.id_to_token(1) == UNK
    assert word.kind == "word"


def test_word_level_encoding_lowercases_splits_punctuation_and_maps_rare_words_to_unk(word):
    ids = word.encode("THE cat sat, zebra")
    assert word.tokens("THE cat sat, zebra") == ["THE", "cat", "sat", ",", "zebra"]
    assert ids[:4] == word.encode("the cat sat ,")
    assert ids[4] == word.unk_id  # "zebra" occurs once, below min_frequency=2
    assert len(set(ids[:4])) == 4 and word.unk_id not in ids[:4] and word.pad_id not in ids
    assert all(0 <= i < word.vocab_size for i in ids)


def test_vocab_size_caps_the_vocabulary():
    small = TextTokenizer.train(TEXTS, kind="word", vocab_size=6, min_frequency=1)
    assert small.vocab_size == 6
    assert small.encode("the")[0] not in (small.pad_id, small.unk_id)  # the most frequent word survives
    assert small.encode("zebra") == [small.unk_id]


def test_lowercase_off_keeps_case():
    cased = TextTokenizer.train(TEXTS, kind="word", min_frequency=1, lowercase=False)
    assert cased.tokens("The the") == ["The", "the"]
    assert cased.encode("The")[0] != cased.encode("the")[0]


@pytest.mark.parametrize("kind", ["wordpiece", "bpe"])
def test_subword_models_cover_unseen_words_with_pieces(kind):
    tokenizer = TextTokenizer.train(TEXTS, kind=kind, vocab_size=200, min_frequency=1)
    ids = tokenizer.encode("catdog")
    assert len(ids) >= 2 and tokenizer.unk_id not in ids
    assert tokenizer.kind == kind


def test_encode_batch_truncates_and_handles_empty_text(word):
    batch = word.encode_batch(["the cat sat on the mat", "", "dog"], max_length=3)
    assert [len(ids) for ids in batch] == [3, 0, 1]
    assert batch[0] == word.encode("the cat sat")
    assert word.encode_batch([]) == []


@pytest.mark.parametrize("kind", KINDS)
def test_save_and_load_round_trip(tmp_path, kind):
    tokenizer = TextTokenizer.train(TEXTS, kind=kind, vocab_size=120, min_frequency=1)
    path = tokenizer.save(tmp_path / "checkpoint")
    assert path == tmp_path / "checkpoint" / "tokenizer.json"
    assert [p.name for p in path.parent.iterdir()] == ["tokenizer.json"]  # no temporary file left behind
    loaded = TextTokenizer.load(path.parent)
    assert loaded.kind == kind and loaded.vocab_size == tokenizer.vocab_size
    texts = [*TEXTS, "unseen words here"]
    assert loaded.encode_batch(texts) == tokenizer.encode_batch(texts)


def test_load_refuses_missing_and_broken_files(tmp_path, word):
    with pytest.raises(DataError, match=r"tokenizer\.json: no such file"):
        TextTokenizer.load(tmp_path)
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(DataError, match=r"tokenizer\.json: not a usable tokenizer"):
        TextTokenizer.load(tmp_path)

    spec = json.loads(word._tokenizer.to_str())  # a tokenizer whose [PAD] is not id 0
    vocab = spec["model"]["vocab"]
    vocab[PAD], vocab["the"] = vocab["the"], vocab[PAD]
    spec["added_tokens"] = [t | {"id": vocab[t["content"]]} for t in spec["added_tokens"]]
    (tmp_path / "tokenizer.json").write_text(json.dumps(spec))
    with pytest.raises(DataError, match=r"must map \[PAD\] to id 0"):
        TextTokenizer.load(tmp_path)


def test_bad_arguments():
    with pytest.raises(ValueError, match="kind must be one of"):
        TextTokenizer.train(TEXTS, kind="sentencepiece")
    with pytest.raises(ValueError, match="vocab_size must be at least 2"):
        TextTokenizer.train(TEXTS, vocab_size=1)


TRAIN = """
import json
from attnkit.data.classify.tokenization import TextTokenizer
texts = [f"w{i % 37} x{i % 11} w{i % 5}x{i % 7} the end{i % 13}ing" for i in range(400)]
result = {kind: TextTokenizer.train(texts, kind=kind, vocab_size=150, min_frequency=2)._tokenizer.to_str()
          for kind in ("word", "bpe")}
"""


def test_word_and_bpe_training_is_repeatable_across_processes():
    # Hash-map seeds differ per process, so compare this process with a fresh one (WordPiece would differ here:
    # huggingface/tokenizers#1794).
    namespace = {}
    exec(TRAIN, namespace)
    fresh = subprocess.run(
        [sys.executable, "-c", TRAIN + "print(json.dumps(result))"], capture_output=True, text=True, check=True
    )
    assert json.loads(fresh.stdout) == namespace["result"]
