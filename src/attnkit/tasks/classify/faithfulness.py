"""Does a classifier's attention explain its predictions? The faithfulness tests on texts (layer 5): what
``attnkit faithfulness``, ``attnkit explain --faithfulness`` and ``Classifier.faithfulness`` run.

    classifier = attnkit.load("runs/ff")
    result = classifier.faithfulness(["Stale and overpriced."])[0]
    result.methods["attention"].comprehensiveness["10"], result.methods["random"].comprehensiveness["10"]
"""

from __future__ import annotations

from collections.abc import Sequence

from attnkit.explain.faithfulness.evaluate import faithfulness_of
from attnkit.explain.faithfulness.methods import DEFAULT_METHODS
from attnkit.explain.faithfulness.results import DocumentFaithfulness
from attnkit.tasks.classify.faithfulness_subjects import HanSubject, PooledSubject

__all__ = ["SUBJECTS", "classifier_faithfulness", "classifier_subjects"]


def _han_subject(classifier, item: list, sentences: list[str], **ids) -> HanSubject:
    """A HAN document: its units are the words the model read, sentence after sentence."""
    tokenizer = classifier.encoder.tokenizer
    tokens = [
        token
        for sentence, words in zip(sentences, item, strict=False)
        for token in tokenizer.tokens(sentence)[: len(words)]
    ]
    return HanSubject(classifier.model, item, tokens, classifier.label_names, **ids)


def _pooled_subject(classifier, item: list, text: str, **ids) -> PooledSubject:
    """A pooled classifier's document: its units are its tokens."""
    tokens = classifier.encoder.tokenizer.tokens(text)[: len(item)]
    return PooledSubject(classifier.model, item, tokens, classifier.label_names, **ids)


# The subject of each model family, by ClassifierConfig.model (as encoding.FAMILIES).
SUBJECTS = {"han": _han_subject, "pooled": _pooled_subject}


def classifier_subjects(classifier, texts: Sequence[str]) -> list:
    """Each text as the classifier reads it, ready for the tests (HAN: :class:`HanSubject`; pooled:
    :class:`PooledSubject`), each with its prediction made."""
    encoder = classifier.encoder
    items, views = encoder.family.read(encoder, list(texts))
    ids = {"pad_id": encoder.tokenizer.pad_id, "unk_id": encoder.tokenizer.unk_id}
    build = SUBJECTS[classifier.config.model]
    return [build(classifier, item, view, **ids) for item, view in zip(items, views, strict=True)]


def classifier_faithfulness(
    classifier,
    texts: Sequence[str],
    *,
    methods: Sequence[str] = DEFAULT_METHODS,
    erase: str = "delete",
    seed: int = 0,
    steps: int = 32,
) -> list[DocumentFaithfulness]:
    """The faithfulness tests on each text's prediction (see :mod:`attnkit.explain.faithfulness`): every
    method's scores, comprehensiveness and sufficiency at 1/5/10/20/50 %, AOPC, flip fraction, Kendall τ."""
    texts = list(texts)
    if not texts:
        raise ValueError("no texts to test")
    subjects = classifier_subjects(classifier, texts)
    return faithfulness_of(subjects, texts=texts, methods=methods, erase=erase, seed=seed, steps=steps)
