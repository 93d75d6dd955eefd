"""The objective a visual-attention classifier trains on: cross-entropy, with accuracy as its metric (layer 5).

    fit(vision_objective(model), train_batches, valid_batches, fit_config)

Shape glossary:
    B  images   K  classes
"""

from __future__ import annotations

import torch

from attnkit.data.images import image_batches
from attnkit.functional.cross_entropy import CrossEntropyObjective
from attnkit.models.visual import VisualAttentionClassifier
from attnkit.runtime.devices import autocast, device_of, on_device

__all__ = ["evaluate_vision", "vision_objective"]


def vision_objective(model: VisualAttentionClassifier) -> CrossEntropyObjective:
    """Cross-entropy training and accuracy evaluation of a visual-attention classifier: logits ``[B, K]`` of the
    batch's images (an :class:`~attnkit.training.objective.Objective` for ``fit``)."""
    return CrossEntropyObjective(model, lambda model, batch: model(batch.images).logits)


def evaluate_vision(
    model: VisualAttentionClassifier,
    images: torch.Tensor,
    labels: torch.Tensor,
    *,
    batch_size: int = 256,
    precision: str = "fp32",
) -> dict[str, float]:
    """``accuracy``, mean ``loss`` and ``count`` of ``model`` on ``images [N, C, H, W]``, ``labels [N]`` (on the
    model's device, under autocast in ``precision``)."""
    if len(images) == 0:
        raise ValueError("nothing to evaluate: no images")
    device = device_of(model)
    with autocast(device, precision):
        return vision_objective(model).evaluate(
            on_device(image_batches(images, labels, batch_size, shuffle=False)(0), device)
        )
