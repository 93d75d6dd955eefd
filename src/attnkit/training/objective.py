"""What :func:`attnkit.training.loop.fit` needs from a model: its loss and its evaluation (layer 5)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

import torch
from torch import nn

__all__ = ["Batch", "Objective", "SummableObjective", "is_summable"]

Batch = Any  # whatever the caller's collate function yields: a dict of tensors, a batch dataclass with .to(), ...


@runtime_checkable
class Objective(Protocol):
    """A model with its training loss and its evaluation.

    ``loss`` must run the model as ``self.model(...)``: during training steps under DDP, ``fit`` temporarily
    points ``objective.model`` at the DistributedDataParallel wrapper, which averages gradients over ranks only for
    calls that go through it. ``evaluate`` always sees the plain model, in eval mode, under ``torch.no_grad()``.
    """

    model: nn.Module

    def loss(self, batch: Batch) -> torch.Tensor:
        """The scalar mean loss of ``batch``."""
        ...

    def evaluate(self, batches: Iterable[Batch]) -> dict[str, float]:
        """Metrics over a whole split, e.g. ``{"accuracy": 91.0, "loss": 0.27}`` (rates in percent)."""
        ...


@runtime_checkable
class SummableObjective(Protocol):
    """Optional: evaluation as additive statistics, so that metrics combine exactly across ranks (needed by DDP).

    ``fit`` computes ``metrics_from_sums(sums over all ranks of evaluate_sums(shard))``. Accuracy, for instance:
    ``evaluate_sums`` returns ``{"correct": 91.0, "count": 100.0, "loss_sum": 27.3}`` and ``metrics_from_sums``
    turns the totals into ``{"accuracy": 100 * correct / count, "loss": loss_sum / count}``. Corpus BLEU and chrF
    (n-gram matches and totals), WER and PER (error and reference counts) are additive in the same way. When a
    objective has both methods, ``fit`` uses them in one process too, so one and N processes share one code path.
    """

    def evaluate_sums(self, batches: Iterable[Batch]) -> dict[str, float]:
        """Additive statistics of these batches."""
        ...

    def metrics_from_sums(self, sums: Mapping[str, float]) -> dict[str, float]:
        """The metrics of a split from the statistics summed over all of it."""
        ...


def is_summable(objective: object) -> bool:
    """True when ``objective`` has both methods of :class:`SummableObjective`."""
    return callable(getattr(objective, "evaluate_sums", None)) and callable(
        getattr(objective, "metrics_from_sums", None)
    )
