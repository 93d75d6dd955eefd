"""The objective a document classifier trains on: cross-entropy, with accuracy as its metric (layer 5).

    fit(classification_objective(model, label_smoothing=0.1), train_batches, valid_batches, fit_config)

Shape glossary:
    B  documents   C  classes
"""

from __future__ import annotations

from torch import nn

from attnkit.tasks.classify.encoding import forward_batch
from attnkit.training.cross_entropy import CrossEntropyObjective

__all__ = ["classification_objective"]


def classification_objective(model: nn.Module, *, label_smoothing: float = 0.0) -> CrossEntropyObjective:
    """Cross-entropy training (label-smoothed by ``label_smoothing``) and accuracy evaluation of a document
    classifier whose batches :func:`~attnkit.tasks.classify.encoding.forward_batch` turns into logits ``[B, C]``
    (an :class:`~attnkit.training.objective.Objective` for ``fit``)."""
    return CrossEntropyObjective(
        model, lambda model, batch: forward_batch(model, batch).logits, label_smoothing=label_smoothing
    )
