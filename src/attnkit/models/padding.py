"""Three ways attention pooling can treat padding: the variants of the masking experiment (layer 4).

``masked``
    The mask goes into the distribution: padded positions get exactly 0 before normalisation (attnkit's way).
``unmasked``
    No mask at all: padded positions (zero embeddings) are scored like tokens and take weight, as in most HAN
    code online. A sequence's output then depends on how much padding its batch gave it.
``renormalised``
    Softmax over every position, then multiplied by the mask and renormalised (another common recipe). Equal to
    ``masked`` in exact arithmetic; in floating point it differs only by rounding (and it underflows to an all-zero
    row, not a NaN, when every kept score is far below a padded one).

Shape glossary:
    B  batch   heads  pooling heads   T  positions   D  features
"""

from __future__ import annotations

import torch
from torch import nn

from attnkit import masks
from attnkit.distributions import Distribution
from attnkit.outputs import AttentionOutput

__all__ = ["PADDING_MODES", "RenormalisedSoftmax", "UnmaskedPooling"]

PADDING_MODES = ("masked", "unmasked", "renormalised")


class RenormalisedSoftmax(Distribution):
    """``softmax(scores) * mask / sum(softmax(scores) * mask)``: mask applied after the softmax, not inside it.

    Computed in float32 for half-precision inputs. A row with nothing kept is all zeros.
    """

    def forward(self, scores, mask=None, *, query=None, query_positions=None):
        """scores ``[..., T]``, mask broadcastable (True = keep) -> weights ``[..., T]``."""
        weights = torch.softmax(scores.float(), dim=-1)  # every position, padding included
        if mask is not None:
            kept = masks.check_mask(mask, "mask", scores.shape)
            weights = weights * kept
            total = weights.sum(dim=-1, keepdim=True)
            weights = weights / torch.where(total > 0, total, torch.ones_like(total))
        return weights.to(scores.dtype)


class UnmaskedPooling(nn.Module):
    """Runs ``pooling`` without the mask, so padded positions are pooled like tokens (the ``unmasked`` variant);
    ``pooling`` takes ``(x [B, T, D], mask [B, T] | None)`` and its ``heads`` attribute is forwarded."""

    def __init__(self, pooling: nn.Module) -> None:
        super().__init__()
        self.pooling = pooling
        self.heads = getattr(pooling, "heads", 1)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, **options: torch.Tensor | None
    ) -> AttentionOutput:
        """x ``[B, T, D]``; ``mask`` is ignored on purpose; ``options`` (``scale [B, T]`` of TaSc, ``values [B, T,
        Dv]``) are passed on -> ``AttentionOutput(pooled, weights [B, heads, T])``."""
        given = {name: value for name, value in options.items() if value is not None}
        return self.pooling(x, None, **given)
