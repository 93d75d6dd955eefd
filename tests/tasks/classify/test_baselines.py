"""The TF-IDF + logistic-regression baseline learns from the words, and is repeatable."""

import random

import pytest

from attnkit.tasks.classify.baselines import fit_tfidf_logreg, tfidf_logreg_accuracy

TOPICS = {
    "sport": "match goal team coach league score player season",
    "tech": "software chip phone computer network data code device",
    "food": "recipe taste sauce flavour kitchen baked fresh dinner",
}
FILLER = ["the", "a", "of", "and", "to", "in", "is", "it", "that", "was", "for", "on", "with", "as"]


def corpus(n, seed):
    rng = random.Random(seed)
    texts, labels = [], []
    for _ in range(n):
        label = rng.choice(sorted(TOPICS))
        words = rng.choices(TOPICS[label].split(), k=3) + rng.choices(FILLER, k=12)
        rng.shuffle(words)
        texts.append(" ".join(words))
        labels.append(label)
    return texts, labels


def test_learns_topic_words():
    train, test = corpus(300, seed=0), corpus(100, seed=1)
    assert tfidf_logreg_accuracy(*train, *test) >= 0.95


def test_shuffled_labels_give_chance_accuracy():
    (texts, labels), test = corpus(300, seed=0), corpus(300, seed=1)
    shuffled = labels[:]
    random.Random(2).shuffle(shuffled)
    assert tfidf_logreg_accuracy(texts, shuffled, *test) < 0.5  # 3 balanced classes: chance is 1/3


def test_repeatable_and_usable_for_predictions():
    texts, labels = corpus(200, seed=3)
    first = fit_tfidf_logreg(texts, labels, seed=0)
    second = fit_tfidf_logreg(texts, labels, seed=0)
    probe = ["goal goal team", "phone chip code", "sauce taste recipe"]
    assert list(first.predict(probe)) == ["sport", "tech", "food"]
    assert (first.predict_proba(probe) == second.predict_proba(probe)).all()


def test_mismatched_inputs_are_refused():
    with pytest.raises(ValueError, match="texts has 2 items but labels has 1"):
        fit_tfidf_logreg(["a b", "c d"], [0])
    with pytest.raises(ValueError, match="non-empty test"):
        tfidf_logreg_accuracy(["a"], [0], [], [])
