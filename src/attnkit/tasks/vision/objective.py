"""The objective a visual-attention classifier trains on: cross-entropy, with accuracy as its metric (layer 5).

    fit(vision_objective(model), train_batches, valid_batches, fit_config)

Shape glossary:
    B  images   K  classes
"""

from __future__ import annotations

from attnkit.models.visual import VisualAttentionClassifier
from attnkit.training.cross_entropy import CrossEntropyObjective

__all__ = ["vision_objective"]


def vision_objective(model: VisualAttentionClassifier) -> CrossEntropyObjective:
    """Cross-entropy training and accuracy evaluation of a visual-attention classifier: logits ``[B, K]`` of the
    batch's images (an :class:`~attnkit.training.objective.Objective` for ``fit``)."""
    return CrossEntropyObjective(model, lambda model, batch: model(batch.images).logits)
