"""The classifier's data: a built-in data set or labelled files read as one :class:`TextClassificationData`, the
summary training prints (layer 5; no torch)."""

from __future__ import annotations

from pathlib import Path

from attnkit.data.classification import TextClassificationData, data_set_names, load_data_set
from attnkit.data.classify.files import load_files

__all__ = ["data_summary", "load_data"]


def data_summary(name: str, data, valid_fraction: float) -> str:
    """What training will read, as seq2seq prints it: documents per split and per class, e.g.
    ``fine-foods: 9000 training (10% carved for validation), 1000 test documents; classes: neg 4500/500, ...``."""
    from collections import Counter

    train, test = Counter(data.train_labels), Counter(data.test_labels)
    classes = ", ".join(
        f"{label} {train[i]}" + (f"/{test[i]}" if data.test_labels else "") for i, label in enumerate(data.label_names)
    )
    per_class = "training/test" if data.test_labels else "training"
    carved = f"{valid_fraction:.0%} carved for validation" if valid_fraction else "no validation"
    return (
        f"{name}: {len(data.train_labels)} training ({carved}), "
        f"{len(data.test_labels)} test documents; {len(data.label_names)} classes ({per_class}): {classes}"
    )


def load_data(
    data: str,
    *,
    test_path: str | None = None,
    text_column: str = "text",
    label_column: str = "label",
    min_labels: int = 2,
    delimiter: str | None = None,
    max_chars: int | None = None,
) -> TextClassificationData:
    """A built-in data set name, or a CSV/TSV/JSONL training file (with an optional test file) holding at least
    ``min_labels`` distinct labels (a file to evaluate on may hold one), each text cut to ``max_chars`` characters."""
    if data in data_set_names():
        if test_path is not None:
            raise ValueError(f"--test is for user files; the built-in data set {data!r} has its own test split")
        if delimiter is not None:
            raise ValueError(f"--delimiter is for user files; the built-in data set {data!r} needs none")
        return load_data_set(data)
    if not Path(data).exists():
        raise FileNotFoundError(f"{data}: neither a built-in data set ({', '.join(data_set_names())}) nor a file")
    columns = {"text_column": text_column, "label_column": label_column, "delimiter": delimiter}
    return load_files(data, test_path, min_labels=min_labels, max_chars=max_chars, **columns)
