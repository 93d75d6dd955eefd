"""The objective a document classifier trains on: cross-entropy, with accuracy as its metric (layer 5), plus, with
``encoder_diversity`` λ > 0, λ × the conicity of the encoders' states (Diversity LSTM;
:func:`~attnkit.models.diversity.diversity_penalty`).

    fit(classification_objective(model, label_smoothing=0.1), train_batches, valid_batches, fit_config)

Shape glossary:
    B  documents   C  classes
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from attnkit.data.batching import EncodedDataset
from attnkit.functional.cross_entropy import CrossEntropyObjective
from attnkit.models.diversity import diversity_penalty
from attnkit.runtime.devices import autocast, device_of, on_device
from attnkit.tasks.classify.encoding import TextEncoder, forward_batch, make_batches

__all__ = ["DiverseEncoderObjective", "classification_objective", "evaluate_encoded"]


def classification_objective(
    model: nn.Module, *, label_smoothing: float = 0.0, encoder_diversity: float = 0.0
) -> CrossEntropyObjective:
    """Cross-entropy training (label-smoothed by ``label_smoothing``, plus ``encoder_diversity`` × the diversity
    penalty when it is above 0) and accuracy evaluation of a document classifier whose batches
    :func:`~attnkit.tasks.classify.encoding.forward_batch` turns into logits ``[B, C]`` (an
    :class:`~attnkit.training.objective.Objective` for ``fit``). Evaluation reports the plain cross-entropy."""
    if encoder_diversity < 0:
        raise ValueError(f"encoder_diversity must be >= 0, got {encoder_diversity}")
    if encoder_diversity:
        return DiverseEncoderObjective(model, label_smoothing=label_smoothing, weight=encoder_diversity)
    return CrossEntropyObjective(model, _logits, label_smoothing=label_smoothing)


def _logits(model: nn.Module, batch: Any) -> torch.Tensor:
    return forward_batch(model, batch).logits


class DiverseEncoderObjective(CrossEntropyObjective):
    """Cross-entropy + ``weight`` × :func:`~attnkit.models.diversity.diversity_penalty` of the states the model's
    output carries (``encoded``: HAN's two BiGRUs, a pooled model's encoder), from one forward."""

    def __init__(self, model: nn.Module, *, label_smoothing: float = 0.0, weight: float) -> None:
        super().__init__(model, _logits, label_smoothing=label_smoothing)
        self.weight = weight

    def loss(self, batch: Any) -> torch.Tensor:
        """Mean (label-smoothed) cross-entropy of the batch plus the weighted conicity of its encoder states."""
        out = forward_batch(self.model, batch)
        loss = F.cross_entropy(out.logits, batch.labels, label_smoothing=self.label_smoothing)
        return loss + self.weight * diversity_penalty(out.encoded).to(loss.dtype)


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
