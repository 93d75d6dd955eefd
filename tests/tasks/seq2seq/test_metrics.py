"""Edit distance, G2P error rates, BLEU/chrF and BLEU by source length, on hand-computable cases."""

import functools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnkit.tasks.seq2seq.metrics import (
    BucketScore,
    bleu_by_length,
    bleu_from_statistics,
    bleu_statistics,
    chrf_from_statistics,
    chrf_statistics,
    corpus_bleu,
    corpus_chrf,
    edit_distance,
    g2p_scores,
    phoneme_error_rate,
    word_error_rate,
)


# --- edit distance ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("kitten", "sitting", 3),  # k->s, e->i, +g
        ("flaw", "lawn", 2),  # -f, +n
        ("", "abc", 3),
        ("abc", "", 3),
        ("same", "same", 0),
        (["HH", "AH", "L", "OW"], ["HH", "EH", "L", "OW"], 1),
        (["K", "AE", "T"], ["K", "AE", "T", "S"], 1),
        (["A", "B"], ["B", "A"], 2),
    ],
)
def test_edit_distance_hand_cases(a, b, expected):
    assert edit_distance(a, b) == expected


def _reference_distance(a, b):
    """The textbook recursion, memoised: slow and obviously right."""

    @functools.cache
    def d(i, j):
        if i == 0 or j == 0:
            return i + j
        return min(d(i - 1, j) + 1, d(i, j - 1) + 1, d(i - 1, j - 1) + (a[i - 1] != b[j - 1]))

    return d(len(a), len(b))


tokens = st.lists(st.sampled_from(["a", "b", "c"]), max_size=7)


@given(tokens, tokens, tokens)
def test_edit_distance_matches_reference_and_is_a_metric(a, b, c):
    assert edit_distance(a, b) == _reference_distance(a, b)
    assert edit_distance(a, b) == edit_distance(b, a)
    assert abs(len(a) - len(b)) <= edit_distance(a, b) <= max(len(a), len(b))
    assert edit_distance(a, c) <= edit_distance(a, b) + edit_distance(b, c)


# --- G2P ----------------------------------------------------------------------------------------------------
PREDICTIONS = ["T AH M EY T OW", "R EH D", "K AE T S", "AH B"]
REFERENCES = [
    ["T AH M AA T OW", "T AH M EY T OW"],  # matches the second reference: correct, 0 edits, 6 phonemes
    ["R IY D"],  # 1 substitution, 3 phonemes
    ["K AE T"],  # 1 insertion, 3 phonemes
    ["AH B AW T", "AH B AW"],  # 2 vs 1 edits: the closest (3 phonemes) counts
]


def test_g2p_scores_on_a_tiny_set():
    scores = g2p_scores(PREDICTIONS, REFERENCES)
    assert (scores.words, scores.word_errors) == (4, 3)
    assert (scores.phoneme_edits, scores.reference_phonemes) == (3, 15)
    assert scores.wer == pytest.approx(75.0)
    assert scores.per == pytest.approx(20.0)
    assert word_error_rate(PREDICTIONS, REFERENCES) == pytest.approx(75.0)
    assert phoneme_error_rate(PREDICTIONS, REFERENCES) == pytest.approx(20.0)


def test_g2p_accepts_token_lists_like_strings():
    as_lists = g2p_scores([p.split() for p in PREDICTIONS], [[r.split() for r in refs] for refs in REFERENCES])
    assert as_lists == g2p_scores(PREDICTIONS, REFERENCES)


def test_g2p_tie_between_references_uses_the_first_length():
    # "A B" is one edit from both "A" and "A B C": the first reference (1 phoneme) is the denominator
    scores = g2p_scores(["A B"], [["A", "A B C"]])
    assert scores.per == pytest.approx(100.0)
    assert scores.wer == pytest.approx(100.0)


def test_g2p_perfect_and_empty():
    assert g2p_scores(["A B"], [["A B"]]).wer == 0.0
    assert g2p_scores([], []).wer == 0.0


def test_g2p_rejects_bad_input():
    with pytest.raises(ValueError, match="predictions has 1 items but references has 2"):
        g2p_scores(["A"], [["A"], ["B"]])
    with pytest.raises(ValueError, match=r"references\[0\] is empty"):
        g2p_scores(["A"], [[]])


# --- BLEU and chrF ------------------------------------------------------------------------------------------
CORPUS = ["the cat sat on the mat .", "a quick brown fox jumps over the lazy dog", "En el principio crió Dios"]


def test_identical_corpus_scores_100():
    assert corpus_bleu(CORPUS, CORPUS) == pytest.approx(100.0)
    assert corpus_chrf(CORPUS, CORPUS) == pytest.approx(100.0)


def test_bleu_brevity_penalty_by_hand():
    # every n-gram of the hypothesis is in the reference; only the brevity penalty exp(1 - 5/4) remains
    assert corpus_bleu(["a b c d"], ["a b c d e"]) == pytest.approx(100 * math.exp(1 - 5 / 4), abs=1e-3)


def test_unrelated_corpus_scores_near_zero():
    assert corpus_bleu(["w x y z"], ["a b c d"]) == pytest.approx(0.0)
    assert corpus_chrf(["wxyz"], ["abcd"]) == pytest.approx(0.0)


def test_corpus_length_mismatch_raises():
    with pytest.raises(ValueError, match="hypotheses has 1 items but references has 2"):
        corpus_bleu(["a"], ["a", "b"])
    with pytest.raises(ValueError, match="empty corpus"):
        corpus_chrf([], [])


# --- BLEU and chrF from additive statistics -------------------------------------------------------------------
def test_bleu_statistics_by_hand():
    stats = bleu_statistics(["a b c d", "x y"], ["a b c e", "x y z"])
    # sentence 1: 4 tokens, matches 3/4 unigrams, 2/3 bigrams, 1/2 trigrams, 0/1 4-grams; sentence 2: 2 of 3 tokens
    assert stats["bleu_sys_len"] == 6 and stats["bleu_ref_len"] == 7
    assert [stats[f"bleu_correct_{n}"] for n in (1, 2, 3, 4)] == [5, 3, 1, 0]
    assert [stats[f"bleu_total_{n}"] for n in (1, 2, 3, 4)] == [6, 4, 2, 1]
    # No 4-gram matches: exponential smoothing gives the 4th precision 100 / (2 * 1); brevity penalty exp(1 - 7/6).
    precisions = [100 * 5 / 6, 100 * 3 / 4, 100 * 1 / 2, 100 / 2]
    by_hand = math.exp(1 - 7 / 6) * math.exp(sum(math.log(p) for p in precisions) / 4)
    assert bleu_from_statistics(stats) == pytest.approx(by_hand, rel=1e-12)
    assert bleu_from_statistics(stats) == pytest.approx(corpus_bleu(["a b c d", "x y"], ["a b c e", "x y z"]))


def test_chrf_statistics_by_hand():
    stats = chrf_statistics(["ab c"], ["abd"])  # whitespace is dropped: "abc" against "abd"
    assert [(stats[f"chrf_hyp_{n}"], stats[f"chrf_ref_{n}"], stats[f"chrf_match_{n}"]) for n in range(1, 7)] == [
        (3, 3, 2),  # a, b match; c does not
        (2, 2, 1),  # ab matches; bc does not
        (1, 1, 0),
        (0, 0, 0),
        (0, 0, 0),
        (0, 0, 0),
    ]
    # Precision and recall both average (2/3 + 1/2 + 0) / 3 = 7/18 over the 3 orders present, so F2 = 7/18.
    assert chrf_from_statistics(stats) == pytest.approx(100 * 7 / 18, rel=1e-12)
    assert chrf_from_statistics(stats) == pytest.approx(corpus_chrf(["ab c"], ["abd"]), rel=1e-12)
    # A hypothesis n-gram counts only where its reference has n-grams of that order (sacreBLEU's rule).
    assert (
        chrf_statistics(["abcd"], ["ab"])["chrf_hyp_3"] == 0 and chrf_statistics(["abcd"], ["abc"])["chrf_hyp_3"] == 2
    )


def test_statistics_of_nothing_are_zeros_with_every_key_and_mismatches_raise():
    for statistics, score in ((bleu_statistics, bleu_from_statistics), (chrf_statistics, chrf_from_statistics)):
        empty = statistics([], [])
        assert set(empty) == set(statistics(["a b"], ["a c"])) and not any(empty.values())
        assert score(empty) == 0.0
        with pytest.raises(ValueError, match="hypotheses has 1 items but references has 0"):
            statistics(["a"], [])


WORDS = ["the", "cat", "sat", "on", "a", "mat", ".", ",", "é", "日本", "don't", "x", "(", "2.5"]
SENTENCES = st.lists(st.sampled_from(WORDS), max_size=9).map(" ".join) | st.text(max_size=12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(SENTENCES, SENTENCES), min_size=1, max_size=7), st.integers(1, 3))
def test_statistics_summed_over_shards_score_like_sacrebleu_on_the_whole_corpus(pairs, shards):
    # sacreBLEU's public corpus scores are the oracle: if sacreBLEU changes BLEU's or chrF's definition, this fails.
    hypotheses, references = [h for h, _ in pairs], [r for _, r in pairs]
    for statistics, score, whole in (
        (bleu_statistics, bleu_from_statistics, corpus_bleu),
        (chrf_statistics, chrf_from_statistics, corpus_chrf),
    ):
        parts = [statistics(hypotheses[k::shards], references[k::shards]) for k in range(shards)]
        summed = {key: sum(part[key] for part in parts) for key in parts[0]}
        assert score(summed) == pytest.approx(whole(hypotheses, references), abs=1e-9)


def test_bleu_by_length_buckets():
    short = "one two three"  # 3 words -> [0, 10)
    medium = " ".join(["w"] * 12)  # 12 words -> [10, 20)
    long = " ".join(["w"] * 65)  # 65 words -> [60, inf)
    sentence = "the cat sat on the mat"
    sources = [short, medium, long, short]
    references = [sentence, sentence, sentence, "a b c d e"]
    hypotheses = [sentence, sentence, "x y z q r s", "a b c d e"]
    table = bleu_by_length(sources, hypotheses, references)
    assert [b.label for b in table] == ["0-9", "10-19", "60+"]  # empty buckets are left out
    assert [b.count for b in table] == [2, 1, 1]
    assert [b.bleu for b in table] == pytest.approx([100.0, 100.0, 0.0])
    assert table[2] == BucketScore(low=60, high=None, count=1, bleu=table[2].bleu)
    assert table[0].as_row() == {"bucket": "0-9", "low": 0, "high": 10, "count": 2, "bleu": table[0].bleu}


def test_bleu_by_length_custom_edges_and_errors():
    table = bleu_by_length(["a b", "a b c d e"], ["a b c d", "a b c d"], ["a b c d", "a b c d"], edges=(3,))
    assert [(b.low, b.high, b.count) for b in table] == [(0, 3, 1), (3, None, 1)]
    with pytest.raises(ValueError, match="positive and increasing"):
        bleu_by_length(["a"], ["a"], ["a"], edges=(10, 5))
    with pytest.raises(ValueError, match="sources has 2 items"):
        bleu_by_length(["a", "b"], ["a"], ["a"])
