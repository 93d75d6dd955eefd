"""Turning what a model returned into a plain float tensor of a known rank, with errors that name the argument."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from attnkit.outputs import AttentionOutput

WeightsLike = torch.Tensor | np.ndarray | Sequence[float] | AttentionOutput


def as_weights(weights: WeightsLike, *, name: str, ndim: int) -> torch.Tensor:
    """``weights`` as a detached float64 CPU tensor with exactly ``ndim`` dimensions.

    An ``AttentionOutput`` is unwrapped; leading dimensions of size 1 (a batch of one) are dropped. A ``ValueError``
    naming ``name`` reports a missing tensor, a wrong rank, or negative / non-finite values.
    """
    if isinstance(weights, AttentionOutput):
        if weights.weights is None:
            raise ValueError(f"{name}: the AttentionOutput carries no weights (ask the module for them)")
        weights = weights.weights
    tensor = torch.as_tensor(
        weights.detach() if isinstance(weights, torch.Tensor) else weights, dtype=torch.float64
    ).cpu()
    while tensor.dim() > ndim and tensor.shape[0] == 1:
        tensor = tensor[0]
    if tensor.dim() != ndim:
        raise ValueError(f"{name}: expected {ndim} dimension(s) (one example), got shape {tuple(tensor.shape)}")
    if not torch.isfinite(tensor).all():
        raise ValueError(f"{name}: weights must be finite, got NaN or inf")
    if (tensor < 0).any():
        raise ValueError(f"{name}: weights must be non-negative, got minimum {tensor.min().item():g}")
    return tensor


def check_length(tokens: Sequence[str], weights: torch.Tensor, *, name: str) -> torch.Tensor:
    """Match a weight row ``[T']`` to ``len(tokens)`` tokens, dropping trailing padding positions (a ``ValueError``
    when there are fewer weights than tokens, or a dropped padding position has weight)."""
    count = len(tokens)
    if weights.shape[-1] < count:
        raise ValueError(f"{name}: {weights.shape[-1]} weight(s) for {count} token(s)")
    padding = weights[..., count:]
    if padding.numel() and padding.abs().max() > 1e-6:
        raise ValueError(
            f"{name}: positions after the {count} token(s) are padding but carry weight "
            f"{padding.abs().max().item():g}; pass one token per weighted position"
        )
    return weights[..., :count]
