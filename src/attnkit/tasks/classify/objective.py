"""The objective a document classifier trains on: cross-entropy, with accuracy as its metric (layer 5).

    fit(classification_objective(model, label_smoothing=0.1), train_batches, valid_batches, fit_config)

Shape glossary:
    B  documents   C  classes
"""

from __future__ import annotations

from torch import nn

from attnkit.data.batching import EncodedDataset
from attnkit.tasks.classify.encoding import TextEncoder, forward_batch, make_batches
from attnkit.training.cross_entropy import CrossEntropyObjective
from attnkit.training.precision import autocast, device_of, on_device

__all__ = ["classification_objective", "evaluate_encoded"]


def classification_objective(model: nn.Module, *, label_smoothing: float = 0.0) -> CrossEntropyObjective:
    """Cross-entropy training (label-smoothed by ``label_smoothing``) and accuracy evaluation of a document
    classifier whose batches :func:`~attnkit.tasks.classify.encoding.forward_batch` turns into logits ``[B, C]``
    (an :class:`~attnkit.training.objective.Objective` for ``fit``)."""
    return CrossEntropyObjective(
        model, lambda model, batch: forward_batch(model, batch).logits, label_smoothing=label_smoothing
    )


def evaluate_encoded(
    model: nn.Module,
    encoder: TextEncoder,
    texts: list[str],
    labels: list[int],
    *,
    batch_size: int = 64,
    precision: str = "fp32",
) -> dict[str, float]:
    """Accuracy, loss and count of ``model`` on ``texts``/``labels`` (length-bucketed batches, no shuffling), on the
    model's device, under autocast in ``precision``."""
    if not texts:
        raise ValueError("nothing to evaluate: the test split is empty")
    dataset = EncodedDataset(encoder.encode(texts), labels)
    batches = make_batches(dataset, encoder.collate(), batch_size, shuffle=False)
    device = device_of(model)
    with autocast(device, precision):
        return classification_objective(model).evaluate(on_device(batches(0), device))
