"""The faithfulness experiment's measurements of one trained classifier (layer 6): the tests of
:mod:`attnkit.explain.faithfulness` on a seeded sample of test documents, one record per document, and the
summary of those records with bootstrap intervals over the documents.

A document's record: its number in the test split, whether the prediction is right, each method's AOPC
comprehensiveness and sufficiency, flip fraction and Kendall τ with leave-one-out, and Jain & Wallace's
permutation test (median total-variation distance of the output over the shuffles, share of flipped decisions).
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

__all__ = [
    "MEASURE_MINUTES",
    "PERMUTATIONS",
    "TARGET_MINUTES",
    "in_budget",
    "measure_documents",
    "minutes_line",
    "reuse_or_measure",
    "sample_documents",
    "summarise_documents",
    "target_minutes",
    "uniform_difference",
]

IG_STEPS = 16  # integrated gradients' steps in every row of the experiment
TARGET_MINUTES = 10.0  # one data set x model within 10 minutes on one core (training not counted)
# what a row's measurement may spend at the defaults: the rest of the 10 minutes loads the model and runs the
# uniform-attention accuracy pass over the test split
MEASURE_MINUTES = 8.0
PERMUTATIONS = 50  # shuffles of the attention per document (Jain & Wallace used 100)
FIGURES = ("aopc_comprehensiveness", "aopc_sufficiency", "flip_fraction", "tau_leave_one_out")


def sample_documents(count: int, documents: int, *, seed: int = 0) -> list[int]:
    """``documents`` test-document numbers out of ``count``, drawn without replacement with ``seed`` and sorted
    (all of them when ``documents >= count``)."""
    if documents < 1:
        raise ValueError(f"documents must be >= 1, got {documents}")
    if documents >= count:
        return list(range(count))
    return sorted(random.Random(seed).sample(range(count), documents))


def in_budget(numbers: Sequence[int], minutes: float | None, *, seed: int = 0):
    """``numbers`` in a seeded random order, for as long as ``minutes`` last (checked before each one after the
    first; ``None``: all of them, in their own order). Stopping early leaves a random subsample of the sample."""
    if minutes is None:
        yield from numbers
        return
    order = list(numbers)
    random.Random(seed).shuffle(order)
    started = time.perf_counter()
    for index, number in enumerate(order):
        if index and time.perf_counter() - started >= 60 * minutes:
            return
        yield number


def measure_documents(
    classifier,
    texts: Sequence[str],
    labels: Sequence[int],
    numbers: Sequence[int],
    *,
    methods: Sequence[str],
    steps: int = 32,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
    minutes: float | None = None,
) -> list[dict]:
    """One record per test document ``numbers`` (indices into ``texts``/``labels``), erasing by deletion, in
    document order; with ``minutes``, only the documents measured within that budget (:func:`in_budget`);
    ``permutations=0`` leaves the permutation test out."""
    import torch

    from attnkit.explain.faithfulness.baselines import permutation_test
    from attnkit.explain.faithfulness.evaluate import evaluate_subject
    from attnkit.tasks.classify.faithfulness import classifier_subjects

    generator = torch.Generator().manual_seed(seed)
    records = []
    for number in in_budget(numbers, minutes, seed=seed):
        subject = classifier_subjects(classifier, [texts[number]])[0]
        if not subject.tokens:
            continue  # nothing the model read: no erasure to make
        result = evaluate_subject(
            subject, text=texts[number], methods=methods, erase="delete", generator=generator, steps=steps
        )
        permutation = permutation_test(subject, n=permutations, seed=seed + number) if permutations else None
        record: dict = {
            "document": number,
            "tokens": len(subject.tokens),
            "correct": classifier.label_names[labels[number]] == result.label,
            "methods": method_figures([result], raw_tau=True),
        }
        if permutation is not None:
            record["permutation"] = {"median_tvd": permutation.median_tvd, "flipped": permutation.flipped}
        records.append(record)
    return sorted(records, key=lambda record: record["document"])


def method_figures(results: Sequence, *, names: Sequence[str] | None = None, raw_tau: bool = False) -> dict:
    """Each method's :data:`FIGURES` averaged over ``results`` (one document's result, or a translation's steps),
    τ over the steps where it is defined (``raw_tau``: one result's τ as it is, NaN kept)."""
    from attnkit.explain.faithfulness.results import _mean

    names = names or list(dict.fromkeys(name for result in results for name in result.methods))
    figures = {}
    for name in names:
        rows = [result.methods[name] for result in results if name in result.methods]
        taus = [_tau(result, name) for result in results]
        if rows:
            figures[name] = {
                "aopc_comprehensiveness": _mean([r.aopc_comprehensiveness for r in rows]),
                "aopc_sufficiency": _mean([r.aopc_sufficiency for r in rows]),
                "flip_fraction": _mean([r.flip_fraction for r in rows]),
                "tau_leave_one_out": taus[0] if raw_tau else _defined([t for t in taus if t is not None]),
            }
    return figures


def _tau(result, name: str) -> float | None:
    return result.kendall_tau.get(f"{name}|leave_one_out", result.kendall_tau.get(f"leave_one_out|{name}"))


def _defined(values: list[float]) -> float | None:
    """The mean of the values that are not NaN (an undefined τ); None when none is."""
    kept = [v for v in values if v == v]
    return sum(kept) / len(kept) if kept else None


def intervals(records: Sequence[dict], names: Sequence[str], figures: Sequence[str] = FIGURES, *, seed=0) -> dict:
    """``{method: {figure: bootstrap interval over the records that have the method}}``."""
    from attnkit.experiments.bootstrap import bootstrap_interval

    return {
        name: {
            figure: bootstrap_interval([r["methods"][name][figure] for r in records if name in r["methods"]], seed=seed)
            for figure in figures
        }
        for name in names
    }


def uniform_difference(classifier, uniform, texts: Sequence[str], labels: Sequence[int]) -> dict:
    """Wiegreffe & Pinter's baseline on every test document: accuracy (%) of the learned-attention model, of the
    uniform-attention one, and their paired difference with a bootstrap interval over the documents."""
    from attnkit.experiments.bootstrap import bootstrap_interval

    gold = [classifier.label_names[label] for label in labels]
    learned = [p.label == g for p, g in zip(classifier.predict(texts), gold, strict=True)]
    flat = [p.label == g for p, g in zip(uniform.predict(texts), gold, strict=True)]
    difference = bootstrap_interval([100.0 * (a - b) for a, b in zip(learned, flat, strict=True)])
    return {
        "accuracy": round(100 * sum(learned) / len(learned), 2),
        "uniform_accuracy": round(100 * sum(flat) / len(flat), 2),
        "difference": difference,
    }


def summarise_documents(records: Sequence[dict], *, seed: int = 0) -> dict:
    """Each method's figures and the permutation test's, as bootstrap intervals over the documents."""
    from attnkit.experiments.bootstrap import bootstrap_interval

    methods = intervals(records, list(dict.fromkeys(n for record in records for n in record["methods"])), seed=seed)
    shuffled = [record["permutation"] for record in records if "permutation" in record]
    permutation = {
        figure: bootstrap_interval([row[figure] for row in shuffled], seed=seed) for figure in ("median_tvd", "flipped")
    }
    return {
        "documents": len(records),
        "mean_tokens": round(sum(r["tokens"] for r in records) / max(len(records), 1), 1),
        "methods": methods,
        "permutation": permutation if shuffled else None,
    }


def reuse_or_measure(store, settings: dict, measure, *, minutes: float | None = None) -> tuple[list[dict], float]:
    """The records stored at ``store`` (a JSON path) when they were measured with ``settings`` (and the budget
    ``minutes``, when given); else ``measure()``'s records, timed in minutes and stored with those settings."""
    from attnkit.experiments.common import read_json, write_json

    settings = settings if minutes is None else {**settings, "minutes": minutes}
    stored = read_json(store)
    if stored and stored.get("settings") == settings:
        return stored["records"], stored["minutes"]
    clock = Stopwatch()
    records = measure()
    spent = clock.minutes()
    write_json(store, {"settings": settings, "minutes": spent, "records": records})
    return records, spent


class Stopwatch:
    """Minutes since it was made."""

    def __init__(self) -> None:
        self.started = time.perf_counter()

    def minutes(self) -> float:
        """Elapsed minutes, to a tenth."""
        return round((time.perf_counter() - self.started) / 60, 1)


def target_minutes(row: dict, documents: int, minutes: float | None) -> dict:
    """A row's figures against the 10-minute target: the minutes it counts (measuring, and a classifier's
    uniform-attention accuracy pass over the test split; training is reported apart), the budget it measured in."""
    spent = row["minutes"].get("measure", 0.0) + row["minutes"].get("accuracy", 0.0)
    return {
        "target": TARGET_MINUTES,
        "counted": round(spent, 1),
        "budget": minutes,
        "sampled": row.get("sampled", documents),
    }


def minutes_line(row: dict) -> str:
    """``"37 of 200 sampled documents (the 8-minute budget) ..."``: how long a row took against the target."""
    found = row["minutes"]
    budget = f" (the {found['budget']:g}-minute measuring budget)" if found["budget"] is not None else ""
    verdict = "met" if found["counted"] <= found["target"] else "NOT met"
    parts = [
        f"{row['documents']} of {found['sampled']} sampled documents{budget}",
        f"measuring {found.get('measure', 0.0):.1f} min",
    ]
    if "accuracy" in found:
        parts.append(f"uniform accuracy pass {found['accuracy']:.1f} min")
    line = ", ".join(parts) + f": {found['counted']:.1f} min (target <= {found['target']:g}: {verdict})"
    if found.get("train"):
        line += f"; training {found['train']:.1f} min, reported apart"
    return line
