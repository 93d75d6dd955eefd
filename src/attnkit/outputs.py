"""The one result type of every attention module (layer 3): what explain and plotting code consumes.

Shape glossary:
    B  batch   H  heads   Tq  query positions   Tk  key positions   D  feature size
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["AttentionOutput"]


@dataclass
class AttentionOutput:
    """Context vectors and the attention weights that produced them.

    Attributes:
        context: ``[B, (H,) Tq, D]`` for query/key attention; ``[B, D]`` or ``[B, H·D]`` for pooling.
        weights: ``[B, (H,) Tq, Tk]`` (pooling: ``[B, H, T]``), rows summing to 1 over kept keys and
            all-zero for rows with nothing to attend to; ``None`` when a module was asked not to return them.
    """

    context: torch.Tensor
    weights: torch.Tensor | None = None

    def __iter__(self):
        """Unpack as ``context, weights = attention(...)``."""
        yield self.context
        yield self.weights
