"""A shipped classifier's faithfulness figures, as its ``card.json`` records them (layer 6): the same tests as the
faithfulness experiment (:mod:`attnkit.experiments.faithfulness.measure`), on a small fixed sample of test documents,
so that ``tests/pretrained/test_shipped_faithfulness.py`` re-computes them from the shipped weights.

The card's ``faithfulness`` block::

    documents                   the test documents measured (numbers in the data set's test split)
    sample                      how they were drawn: count, seed, the word cap (see :func:`card_sample`)
    erase, seed, integrated_gradients_steps
                                the settings :func:`~measure.measure_documents` ran with (IG doubles its steps
                                from there while its completeness delta is too large, as in the experiment)
    methods                     {method: {aopc_comprehensiveness, flip_fraction}}, means over the documents:
                                attention, integrated_gradients, random (and attention_contribution for models
                                trained with ``--attention-values embeddings``)
    attention_share_of_ig       attention's mean AOPC comprehensiveness / IG's (contribution_share_of_ig too)
    uniform                     learned − uniform-attention test accuracy with its interval, copied from the
                                faithfulness experiment's row of this model (``source`` names it); a training run
                                measured it, so no test re-computes it
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from attnkit.experiments.faithfulness.measure import IG_STEPS, measure_documents, sample_documents

if TYPE_CHECKING:
    from attnkit.tasks.classify.inference import Classifier

__all__ = [
    "CARD_DOCUMENTS",
    "CARD_FIGURES",
    "CARD_METHODS",
    "CARD_WORDS",
    "card_figures",
    "card_sample",
    "faithfulness_block",
    "uniform_gap",
]

CARD_DOCUMENTS = 16  # test documents a card measures: its test re-computes them on one CPU thread
CARD_WORDS = 200  # longest document sampled, in whitespace words: IG doubles its steps on some long ones
CARD_METHODS = ("attention", "attention_contribution", "integrated_gradients", "random")
CARD_FIGURES = ("aopc_comprehensiveness", "flip_fraction")
ERASE = "delete"  # what measure_documents erases by
_SHARES = (("attention", "attention_share_of_ig"), ("attention_contribution", "contribution_share_of_ig"))


def card_sample(
    texts: Sequence[str], documents: int = CARD_DOCUMENTS, *, seed: int = 0, words: int = CARD_WORDS
) -> list[int]:
    """``documents`` test-document numbers drawn (:func:`sample_documents`, ``seed``) among the ``texts`` of at most
    ``words`` whitespace-separated words, sorted."""
    eligible = [number for number, text in enumerate(texts) if len(text.split()) <= words]
    return [eligible[index] for index in sample_documents(len(eligible), documents, seed=seed)]


def card_figures(
    classifier: Classifier,
    texts: Sequence[str],
    labels: Sequence[int],
    numbers: Sequence[int],
    *,
    seed: int = 0,
    steps: int = IG_STEPS,
) -> dict:
    """The figures of :data:`CARD_METHODS` on the test documents ``numbers`` (indices into ``texts``/``labels``):
    ``{"documents_measured": n, "methods": {method: {figure: mean}}, "attention_share_of_ig": float, ...}``,
    each mean over the documents, rounded to 4 decimals (a method the model has no scores for is left out)."""
    records = measure_documents(
        classifier, texts, labels, numbers, methods=CARD_METHODS, steps=steps, seed=seed, permutations=0
    )
    names = [name for name in CARD_METHODS if any(name in record["methods"] for record in records)]
    methods = {}
    for name in names:
        rows = [record["methods"][name] for record in records if name in record["methods"]]
        methods[name] = {figure: sum(row[figure] for row in rows) / len(rows) for figure in CARD_FIGURES}
    figures: dict = {"documents_measured": len(records), "methods": _rounded(methods)}
    ig = methods.get("integrated_gradients", {}).get("aopc_comprehensiveness")
    for name, key in _SHARES:
        if name in methods and ig:
            figures[key] = round(methods[name]["aopc_comprehensiveness"] / ig, 4)
    return figures


def faithfulness_block(
    classifier: Classifier,
    texts: Sequence[str],
    labels: Sequence[int],
    *,
    uniform: dict | None = None,
    documents: int = CARD_DOCUMENTS,
    seed: int = 0,
    words: int = CARD_WORDS,
    steps: int = IG_STEPS,
) -> dict:
    """A card's ``faithfulness`` block (the module docstring) for ``classifier`` on its test split ``texts``,
    ``labels``; ``uniform`` is :func:`uniform_gap`'s answer (None: the block says none was measured)."""
    numbers = card_sample(texts, documents, seed=seed, words=words)
    block = {
        "documents": numbers,
        "sample": {"count": documents, "seed": seed, "max_words": words, "of": len(texts)},
        "erase": ERASE,
        "seed": seed,
        "integrated_gradients_steps": steps,
        **card_figures(classifier, texts, labels, numbers, seed=seed, steps=steps),
        "uniform": uniform,
        "note": (
            "AOPC comprehensiveness and flip fractions are means over the documents listed, measured from the "
            "shipped weights on one CPU thread; tests/pretrained/test_shipped_faithfulness.py re-computes them. "
            "The uniform-attention gap needs a training run of the uniform-attention twin, so no test re-computes "
            "it: it is copied from the faithfulness experiment's row named in uniform.source"
            + ("" if uniform else " (none was measured for this model)")
            + "."
        ),
    }
    return block


def uniform_gap(results: Path, name: str) -> dict | None:
    """The learned − uniform-attention accuracy gap of the shipped model ``name`` from the faithfulness experiment
    (``results``: its ``faithfulness.json``, the row whose ``shipped`` is ``name``), with ``source`` naming the row;
    None when no row is that model's."""
    from attnkit.experiments.common import read_json

    table = read_json(results) or {}
    for data, entry in table.get("data", {}).items():
        for model, row in entry.get("models", {}).items():
            if row.get("shipped") == name and row.get("uniform"):
                found = row["uniform"]
                difference = {key: round(found["difference"][key], 2) for key in ("mean", "low", "high")}
                return {
                    "accuracy": found["accuracy"],
                    "uniform_accuracy": found["uniform_accuracy"],
                    "difference": difference,
                    "source": f"docs/results/faithfulness.json: data.{data}.models.{model} (`{entry.get('command')}`)",
                    "uniform_command": row.get("uniform_command"),
                }
    return None


def _rounded(methods: dict) -> dict:
    return {name: {key: round(value, 4) for key, value in figures.items()} for name, figures in methods.items()}
