"""Which words a classifier attended to most, and how many of them are stop words or punctuation (layer 5).

A document's attention over its words: for a HAN, a word's weight within its sentence times the sentence's weight;
for a pooled classifier, a token's weight averaged over the pooling heads. The stop words are scikit-learn's English
list without :data:`SENTIMENT_FUNCTION_WORDS` (negations, contrast, degree), so that ``--attend content`` can still
attend to "not" in "Not buying again"; a token is punctuation when it holds no letter or digit.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import torch

from attnkit.data.classify.tokenization import TextTokenizer
from attnkit.tasks.classify.encoding import Prediction

__all__ = [
    "SENTIMENT_FUNCTION_WORDS",
    "content_stop_words",
    "content_word_table",
    "english_stop_words",
    "is_stop_or_punctuation",
    "stop_word_share",
    "top_attended_words",
]


# Function words that carry a text's polarity or stance: negations (with the contraction piece "n't", which some
# tokenisers split off), contrast, and degree. Lower case, as the stop-word list.
SENTIMENT_FUNCTION_WORDS = frozenset([
    "not", "no", "never", "n't", "nor", "neither", "none", "nothing", "nobody", "nowhere", "without", "cannot", "cant",
    "couldnt", "hasnt", "against", "but", "however", "although", "though", "yet", "except", "very", "too", "only",
    "few", "less", "least", "more", "most", "much", "enough",
])  # fmt: skip


def english_stop_words() -> frozenset[str]:
    """scikit-learn's English stop-word list (lower case)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def content_stop_words() -> frozenset[str]:
    """The stop words a content-word model leaves out: scikit-learn's English list without
    :data:`SENTIMENT_FUNCTION_WORDS`."""
    return english_stop_words() - SENTIMENT_FUNCTION_WORDS


def is_stop_or_punctuation(word: str, stop_words: Collection[str]) -> bool:
    """True for a stop word (compared in lower case) or a token without any letter or digit."""
    return word.lower() in stop_words or not any(character.isalnum() for character in word)


def content_word_table(tokenizer: TextTokenizer, stop_words: Collection[str] | None = None) -> torch.Tensor:
    """``[V]`` bool, True for the token ids a ``--attend content`` classifier may attend to: every token that is
    not a stop word (default :func:`content_stop_words`) or punctuation (``[UNK]`` included); False for padding."""
    stop_words = content_stop_words() if stop_words is None else stop_words
    table = torch.tensor(
        [not is_stop_or_punctuation(tokenizer.id_to_token(i), stop_words) for i in range(tokenizer.vocab_size)]
    )
    table[tokenizer.pad_id] = False
    return table


def word_weights(prediction: Prediction) -> list[tuple[str, float]]:
    """Every word of the document with its share of the document's attention, in reading order."""
    if prediction.sentences is not None and prediction.word_weights is not None:
        sentence_weights = prediction.sentence_weights or [0.0] * len(prediction.sentences)
        return [
            (word, weight * sentence_weight)
            for words, weights, sentence_weight in zip(
                prediction.sentences, prediction.word_weights, sentence_weights, strict=True
            )
            for word, weight in zip(words, weights, strict=True)
        ]
    if prediction.tokens is not None and prediction.token_weights:
        heads = len(prediction.token_weights)
        averaged = [sum(column) / heads for column in zip(*prediction.token_weights, strict=True)]
        return list(zip(prediction.tokens, averaged, strict=True))
    raise ValueError("prediction carries no attention weights (neither HAN sentences nor pooled tokens)")


def top_attended_words(prediction: Prediction, k: int = 3) -> list[str]:
    """The ``k`` words (positions: a repeated word can appear twice) with the most attention, most first; ties keep
    reading order; a word of zero weight (a sparse attention's) is never among them, so fewer may come back."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    weighted = [item for item in enumerate(word_weights(prediction)) if item[1][1] > 0]
    ranked = sorted(weighted, key=lambda item: (-item[1][1], item[0]))
    return [word for _, (word, _) in ranked[:k]]


def stop_word_share(predictions: Sequence[Prediction], k: int = 3, stop_words: Collection[str] | None = None) -> float:
    """Mean over documents of the share of stop words and punctuation among each one's ``k`` most-attended words
    (a document with fewer than ``k`` words counts the ones it has; one with none is skipped)."""
    stop_words = content_stop_words() if stop_words is None else stop_words
    shares = []
    for prediction in predictions:
        top = top_attended_words(prediction, k)
        if top:
            shares.append(sum(is_stop_or_punctuation(word, stop_words) for word in top) / len(top))
    if not shares:
        raise ValueError("no document with a word to rank")
    return sum(shares) / len(shares)
