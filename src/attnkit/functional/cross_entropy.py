"""The loss and metrics of every single-label classifier (documents, images): an ``Objective`` for
:func:`~attnkit.training.loop.fit` built from a function that gives a batch's logits (layer 2: torch alone, so that
inference evaluates with it without importing training).

Shape glossary:
    B  examples   C  classes
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["CrossEntropyObjective"]


class CrossEntropyObjective:
    """Cross-entropy training and accuracy evaluation (a :class:`~attnkit.training.objective.SummableObjective`).

    Args:
        model: the classifier.
        logits: ``(model, batch) -> logits [B, C]``; the batch carries ``labels [B]``.
        label_smoothing: ``ε`` of the training loss (the target puts ``1 - ε`` on the label and spreads ``ε``);
            evaluation reports the plain cross-entropy.
    """

    def __init__(
        self, model: nn.Module, logits: Callable[[nn.Module, Any], torch.Tensor], *, label_smoothing: float = 0.0
    ) -> None:
        if not 0.0 <= label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must lie in [0, 1), got {label_smoothing}")
        self.model = model
        self.logits = logits
        self.label_smoothing = label_smoothing

    def loss(self, batch: Any) -> torch.Tensor:
        """Mean (label-smoothed) cross-entropy of the batch."""
        return F.cross_entropy(self.logits(self.model, batch), batch.labels, label_smoothing=self.label_smoothing)

    @torch.no_grad()
    def evaluate_sums(self, batches: Iterable[Any]) -> dict[str, float]:
        """Additive statistics over the batches: ``correct``, ``count``, ``loss_sum`` (summed across DDP ranks)."""
        was_training = self.model.training
        self.model.eval()
        correct = count = 0
        loss_sum = 0.0
        try:
            for batch in batches:
                logits = self.logits(self.model, batch)  # [B, C]
                loss_sum += float(F.cross_entropy(logits.float(), batch.labels, reduction="sum"))
                correct += int((logits.argmax(-1) == batch.labels).sum())
                count += len(batch.labels)
        finally:
            self.model.train(was_training)
        return {"correct": float(correct), "count": float(count), "loss_sum": loss_sum}

    @staticmethod
    def metrics_from_sums(sums: Mapping[str, float]) -> dict[str, float]:
        """``accuracy`` (percent, as every attnkit metric but ``loss`` and ``count``), mean ``loss`` and ``count``
        from :meth:`evaluate_sums`' totals."""
        count = max(sums["count"], 1.0)
        accuracy = 100.0 * sums["correct"] / count
        return {"accuracy": accuracy, "loss": sums["loss_sum"] / count, "count": sums["count"]}

    def evaluate(self, batches: Iterable[Any]) -> dict[str, float]:
        """``accuracy``, mean ``loss`` and ``count`` over the batches."""
        return self.metrics_from_sums(self.evaluate_sums(batches))
