"""Masked softmax with a defined answer for rows that have nothing to attend to.

Shape glossary: ``...`` any leading dims (B, H, Tq), ``Tk`` the normalised (last) dim.
"""

from __future__ import annotations

import torch

from attnkit.functional._common import compute_dtype, guard_empty_rows
from attnkit.masks import check_mask


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last dim that gives masked positions exactly zero weight: ``scores [..., Tk]``, ``mask``
    bool broadcastable to it (True = attend; None: plain softmax) -> weights ``[..., Tk]`` in ``scores.dtype``.

    Masked scores are set to ``-inf``, so they get weight 0 and gradient 0. A row with no kept position would be
    ``softmax([-inf, ...]) = NaN``: such rows are normalised over an all-kept stand-in and then zeroed, so their
    weights *and* gradients are exactly 0 (:func:`~attnkit.functional._common.guard_empty_rows`, branch-free on
    accelerators and under ``torch.compile``). float16/bfloat16 are computed in float32.
    """
    work = scores.to(compute_dtype(scores.dtype))
    if mask is None:
        return torch.softmax(work, dim=-1).to(scores.dtype)
    check_mask(mask, "mask", scores.shape)
    safe_mask, has_key = guard_empty_rows(mask)
    weights = torch.softmax(work.masked_fill(~safe_mask, float("-inf")), dim=-1)  # [..., Tk]
    if has_key is not None:
        weights = weights.masked_fill(~has_key, 0.0)  # empty rows: zero weights and zero gradient
    return weights.to(scores.dtype)
