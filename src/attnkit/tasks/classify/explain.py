"""The classifier's explanation: one report section per prediction (HAN documents, pooled token rows), written as
one self-contained HTML page (layer 5)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attnkit.explain.html import Section, write_report
from attnkit.explain.sections import han_section, pooling_section
from attnkit.tasks.classify.recipe import recipe_section

__all__ = ["classifier_report"]


def classifier_report(
    predictions: Sequence,
    label_names: Sequence[str],
    path: str | Path,
    *,
    title: str = "What the classifier attended to",
    true_labels: Sequence[str | None] | None = None,
    faithfulness: Sequence | None = None,
    word_shading: str = "document",
    recipe: Mapping[str, Any] | None = None,
) -> Path:
    """Write the report for classifier predictions (``attnkit.tasks.classify.encoding.Prediction``): HAN documents
    shaded by sentence and word (``word_shading``: see :func:`~attnkit.explain.sections.han_section`), pooled token
    rows one per head; a ``faithfulness`` panel under each document and the ``recipe`` above them, when given."""
    if faithfulness is not None and len(faithfulness) != len(predictions):
        raise ValueError(f"faithfulness: {len(faithfulness)} result(s) for {len(predictions)} prediction(s)")
    true_labels = list(true_labels) if true_labels is not None else [None] * len(predictions)
    sections: list[Section] = [] if recipe is None else [Section(*recipe_section(recipe))]
    for number, (prediction, gold) in enumerate(zip(predictions, true_labels, strict=True), start=1):
        sections.append(_prediction_section(prediction, number, gold, label_names, word_shading))
        if faithfulness is not None:
            from attnkit.explain.faithfulness.panel import faithfulness_panel

            section = sections[-1]
            sections[-1] = Section(section.title, section.body + "\n" + faithfulness_panel(faithfulness[number - 1]))
    return write_report(path, sections, title=title)


def _prediction_section(
    prediction: Any, number: int, gold: str | None, label_names: Sequence[str], word_shading: str
) -> Section:
    """Document ``number``'s section: a HAN document, or a pooled classifier's token rows (the caption and colour
    scale on the first document only)."""
    shared = {"label_names": label_names, "probabilities": [prediction.probabilities[name] for name in label_names]}
    shared |= {"true_label": gold, "title": f"Document {number}", "caption": number == 1}
    if prediction.sentences is not None:
        weights = (prediction.sentences, prediction.word_weights, prediction.sentence_weights)
        unknown = getattr(prediction, "unknown_words", None)
        return han_section(*weights, word_shading=word_shading, unknown=unknown, **shared)
    unknown = getattr(prediction, "unknown_tokens", None)
    return pooling_section(prediction.tokens, prediction.token_weights, unknown=unknown, **shared)
