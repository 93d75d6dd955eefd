"""The one result type of every attention module (layer 3): what explain and plotting code consumes.

Shape glossary:
    B  batch   H  heads   Tq  query positions   Tk  key positions   D  feature size
"""

from __future__ import annotations

from typing import NamedTuple

import torch

__all__ = ["AttentionOutput"]


class AttentionOutput(NamedTuple):
    """Context vectors and the attention weights that produced them.

    A tuple ``(context, weights)`` with named fields, so it reads both ways: ``out.context`` / ``out.weights``,
    ``out[0]`` / ``out[1]``, and ``context, weights = attention(...)`` — the shape of ``nn.MultiheadAttention``'s
    return value, which the drop-in from :meth:`attnkit.MultiHeadAttention.from_torch` relies on.

    ``context`` is ``[B, (H,) Tq, D]`` (pooling: ``[B, D]`` or ``[B, H·D]``); ``weights`` ``[B, (H,) Tq, Tk]``
    (pooling: ``[B, H, T]``), rows summing to 1 over kept keys and all-zero for rows with nothing to attend to, or
    ``None`` when a module was asked not to return them.
    """

    context: torch.Tensor
    weights: torch.Tensor | None = None
