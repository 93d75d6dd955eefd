"""Masked softmax with a defined answer for rows that have nothing to attend to.

Shape glossary: ``...`` any leading dims (B, H, Tq), ``Tk`` the normalised (last) dim.
"""

from __future__ import annotations

import torch

from attnkit.functional._common import compute_dtype
from attnkit.masks import check_mask


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last dim that gives masked positions exactly zero weight.

    Masked scores are set to ``-inf`` before the softmax, so they get weight 0 and gradient 0. A row with no
    kept position would be ``softmax([-inf, ...]) = NaN``; such rows are normalised over an all-kept
    stand-in (finite) and then zeroed by ``masked_fill``, so their weights *and* gradients are exactly 0.
    float16/bfloat16 are computed in float32.

    Args:
        scores: ``[..., Tk]``.
        mask: bool broadcastable to ``scores``, True = attend. ``None``: plain softmax.

    Returns:
        ``[..., Tk]`` weights in ``scores.dtype``.
    """
    work = scores.to(compute_dtype(scores.dtype))
    if mask is None:
        return torch.softmax(work, dim=-1).to(scores.dtype)
    check_mask(mask, "mask", scores.shape)
    has_key = mask.any(dim=-1, keepdim=True)  # [..., 1]
    all_rows_have_keys = bool(has_key.all())
    fill_mask = mask if all_rows_have_keys else (mask | ~has_key)
    weights = torch.softmax(work.masked_fill(~fill_mask, float("-inf")), dim=-1)  # [..., Tk]
    if not all_rows_have_keys:
        weights = weights.masked_fill(~has_key, 0.0)
    return weights.to(scores.dtype)
