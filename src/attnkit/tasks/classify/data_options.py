"""A small helper of the classify train command: the data summary training prints (``--delimiter`` is
:func:`attnkit.tasks.options.delimiter_option`, shared with seq2seq)."""

from __future__ import annotations

__all__ = ["data_summary"]


def data_summary(name: str, data, valid_fraction: float) -> str:
    """What training will read, as seq2seq prints it: documents per split and per class, e.g.
    ``fine-foods: 9000 training (10% carved for validation), 1000 test documents; classes: neg 4500/500, ...``."""
    from collections import Counter

    train, test = Counter(data.train_labels), Counter(data.test_labels)
    classes = ", ".join(
        f"{label} {train[i]}" + (f"/{test[i]}" if data.test_labels else "") for i, label in enumerate(data.label_names)
    )
    per_class = "training/test" if data.test_labels else "training"
    return (
        f"{name}: {len(data.train_labels)} training ({valid_fraction:.0%} carved for validation), "
        f"{len(data.test_labels)} test documents; {len(data.label_names)} classes ({per_class}): {classes}"
    )
