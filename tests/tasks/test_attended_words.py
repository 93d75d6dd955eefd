"""The demo's stop-word share: the top-attended words of HAN and pooled predictions, counted by hand."""

from __future__ import annotations

import pytest

pytest.importorskip("sklearn", reason="the stop-word list comes from scikit-learn (the data extra)")

from attnkit.tasks.classify.attended_words import (
    english_stop_words,
    is_stop_or_punctuation,
    stop_word_share,
    top_attended_words,
)
from attnkit.tasks.classify.encoding import Prediction


def han(sentences, word_weights, sentence_weights) -> Prediction:
    return Prediction("t", "a", {"a": 1.0}, sentences=sentences, word_weights=word_weights,
                      sentence_weights=sentence_weights)  # fmt: skip


def pooled(tokens, token_weights) -> Prediction:
    return Prediction("t", "a", {"a": 1.0}, tokens=tokens, token_weights=token_weights)


def test_han_words_are_ranked_by_word_times_sentence_weight():
    prediction = han(
        [["the", "tea", "is", "great"], ["i", "don't", "like", "it", "."]],
        [[0.5, 0.25, 0.125, 0.125], [0.125, 0.5, 0.25, 0.0625, 0.0625]],
        [0.25, 0.75],
    )
    # document weights (exact in binary): the .125, tea .0625, is .03125, great .03125
    #                                      | i .09375, don't .375, like .1875, it .046875, . .046875
    assert top_attended_words(prediction, 3) == ["don't", "like", "the"]
    # scikit-learn's list holds "not" but no contraction: "don't" is not a stop word, "the" is
    assert stop_word_share([prediction], 3) == pytest.approx(1 / 3)
    assert top_attended_words(prediction, 9)[3:] == ["i", "tea", "it", ".", "is", "great"]  # ties: reading order
    assert stop_word_share([prediction], 5) == pytest.approx(2 / 5)


def test_pooled_tokens_average_the_heads_and_punctuation_counts():
    prediction = pooled(["great", ",", "the", "price", "!!"], [[0.1, 0.5, 0.0, 0.1, 0.3], [0.3, 0.3, 0.0, 0.4, 0.0]])
    # averaged: great .2, "," .4, the 0, price .25, "!!" .15
    assert top_attended_words(prediction, 3) == [",", "price", "great"]
    assert stop_word_share([prediction], 3) == pytest.approx(1 / 3)
    assert stop_word_share([prediction], 1) == 1.0


def test_the_share_is_a_mean_over_documents_and_short_documents_count_what_they_have():
    content = pooled(["great", "coffee", "bitter"], [[0.5, 0.3, 0.2]])
    function = pooled(["the", "and", "."], [[0.5, 0.3, 0.2]])
    one_word = pooled(["the"], [[1.0]])
    empty = pooled([], [[]])
    assert stop_word_share([content, function, one_word, empty], 3) == pytest.approx((0 + 1 + 1) / 3)
    with pytest.raises(ValueError, match="no document with a word"):
        stop_word_share([empty])
    with pytest.raises(ValueError, match="k must be >= 1"):
        top_attended_words(content, 0)
    with pytest.raises(ValueError, match="no attention weights"):
        top_attended_words(Prediction("t", "a", {"a": 1.0}))


def test_the_stop_word_list_is_scikit_learns():
    words = english_stop_words()
    assert {"the", "and", "it", "is", "not"} <= words and "great" not in words and "coffee" not in words
    assert is_stop_or_punctuation("The", words) and is_stop_or_punctuation("'", words)
    assert is_stop_or_punctuation("...", words) and not is_stop_or_punctuation("5", words)
    assert not is_stop_or_punctuation("don't", words)
