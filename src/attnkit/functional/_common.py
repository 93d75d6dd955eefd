"""Helpers shared by the masked distributions: precision and mask handling."""

from __future__ import annotations

import torch

from attnkit.masks import check_mask

LOW_PRECISION = (torch.float16, torch.bfloat16)


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """float32 for half-precision inputs (their exp/cumsum overflow or lose the sum), else ``dtype``."""
    return torch.float32 if dtype in LOW_PRECISION else dtype


def full_mask(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor | None:
    """Check ``mask`` against ``scores`` and expand it to the scores' shape (a view, no copy)."""
    if mask is None:
        return None
    return check_mask(mask, "mask", scores.shape).expand(scores.shape)


def host_reads_are_free(t: torch.Tensor) -> bool:
    """True in eager mode on the CPU, where ``bool(t)`` neither synchronises a device nor breaks a compiled graph:
    the masked paths may then skip their empty-row guard when no row is empty (same values and gradients)."""
    return t.device.type == "cpu" and not torch.compiler.is_compiling()
