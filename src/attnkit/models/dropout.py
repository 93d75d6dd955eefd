"""``Dropout``: ``nn.Dropout`` with the cheap CPU mask of :func:`attnkit.functional.dropout.dropout` (layer 4).

A drop-in for ``nn.Dropout(p)`` in the Transformer stacks, where dropout's random numbers were a large share of a
CPU training step (``docs/benchmarks.md``): the same expected output and gradient, a drop probability rounded to
a multiple of 1/65,536, and ``F.dropout`` itself off the CPU. Shapes: ``[...] -> [...]``.
"""

from __future__ import annotations

import torch
from torch import nn

from attnkit.functional.dropout import dropout, quantized_probability

__all__ = ["Dropout"]


class Dropout(nn.Module):
    """Zero each element with probability ``p`` (in ``[0, 1]``) in training mode, scale the rest by ``1 / (1 - p)``."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        quantized_probability(p)  # raises ValueError outside [0, 1]
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x [...]`` -> ``[...]``: dropped out in training mode, ``x`` itself in eval mode."""
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
