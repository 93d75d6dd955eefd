"""Per-class precision, recall and F1 and the confusion matrix of a classifier's predictions (layer 5), through
``sklearn.metrics``; what ``attnkit evaluate`` prints for classifiers (and gives as JSON)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["classification_report", "format_report"]


def classification_report(gold: Sequence[int], predicted: Sequence[int], label_names: Sequence[str]) -> dict[str, Any]:
    """Per-class ``precision``/``recall``/``f1``/``support`` (percent, support a count), their macro and
    support-weighted averages, ``accuracy`` (percent) and ``confusion[i][j]``: documents of class ``i`` predicted as
    ``j`` (classes in ``label_names`` order, every class listed even when absent)."""
    from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

    if len(gold) != len(predicted):
        raise ValueError(f"gold has {len(gold)} labels but predicted has {len(predicted)}")
    if not gold:
        raise ValueError("nothing to report: no documents")
    labels = list(range(len(label_names)))
    precision, recall, f1, support = precision_recall_fscore_support(gold, predicted, labels=labels, zero_division=0)
    per_class = {
        name: {**_percentages(precision[i], recall[i], f1[i]), "support": int(support[i])}
        for i, name in enumerate(label_names)
    }
    averages = {}
    for average in ("macro", "weighted"):
        p, r, f, _ = precision_recall_fscore_support(gold, predicted, labels=labels, average=average, zero_division=0)
        averages[average] = _percentages(p, r, f)
    correct = sum(int(g == p) for g, p in zip(gold, predicted, strict=True))
    return {
        "accuracy": round(100 * correct / len(gold), 2),
        "count": len(gold),
        "per_class": per_class,
        "average": averages,
        "labels": list(label_names),
        "confusion": confusion_matrix(gold, predicted, labels=labels).tolist(),
    }


def _percentages(precision: float, recall: float, f1: float) -> dict[str, float]:
    return {
        "precision": round(100 * float(precision), 2),
        "recall": round(100 * float(recall), 2),
        "f1": round(100 * float(f1), 2),
    }


def format_report(report: dict[str, Any]) -> str:
    """The report as a text table: one row per class, the averages, then the confusion matrix."""
    names = report["labels"]
    width = max(12, *(len(name) for name in names))
    lines = [f"{'class':<{width}} {'precision':>9} {'recall':>7} {'F1':>7} {'support':>8}"]
    for name in names:
        row = report["per_class"][name]
        lines.append(
            f"{name:<{width}} {row['precision']:>9.2f} {row['recall']:>7.2f} {row['f1']:>7.2f} {row['support']:>8d}"
        )
    for average, row in report["average"].items():
        label = f"{average} avg"
        lines.append(f"{label:<{width}} {row['precision']:>9.2f} {row['recall']:>7.2f} {row['f1']:>7.2f}")
    lines += ["", "confusion matrix (rows: true class, columns: predicted, in the order above)"]
    cell = max(5, *(len(str(v)) for row in report["confusion"] for v in row), *(len(name) for name in names))
    lines.append(" " * width + " " + " ".join(f"{name:>{cell}}" for name in names))  # whole names, never cut
    for name, row in zip(names, report["confusion"], strict=True):
        lines.append(f"{name:<{width}} " + " ".join(f"{value:>{cell}d}" for value in row))
    return "\n".join(lines)
