"""Helpers shared by the masked distributions: precision and mask handling."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
    """True in eager mode on the CPU, where ``bool(t)`` neither synchronises a device nor breaks a compiled graph."""
    return t.device.type == "cpu" and not torch.compiler.is_compiling()


def guard_empty_rows(mask: torch.Tensor | None) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """``(mask with its empty rows opened up, has_key [..., 1])`` for a mask ``[..., Tk]``; both None without one.

    A row with no kept key would normalise to NaN; opened up (all kept, finite) it normalises, and the caller zeroes
    it with ``has_key``. Branch-free on accelerators and under ``torch.compile`` (nothing read back to the host,
    whether or not a row is empty). Eager on the CPU, where that read is free, a mask without empty rows comes back
    as it is with ``has_key`` None: no stand-in and no zeroing pass (what that pass cost is in
    ``docs/benchmarks.md``).
    """
    if mask is None:
        return None, None
    has_key = mask.any(dim=-1, keepdim=True)  # [..., 1]
    if host_reads_are_free(has_key) and bool(has_key.all()):
        return mask, None
    return mask | ~has_key, has_key


def support_function(
    name: str,
    forward: Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor],
    slope: Callable[[torch.Tensor], torch.Tensor],
) -> type[torch.autograd.Function]:
    """An exact sparse distribution as the autograd function ``name``: ``apply(scores [..., Tk], kept [..., Tk] |
    None)``.

    ``forward(scores, kept)`` runs in :func:`compute_dtype` and its weights come back in the scores' dtype.
    ``slope(weights)`` is ``d weights / d scores`` on the support up to a constant (0 off it); the backward pass
    gives ``g·s - (Σ g·s / Σ s)·s`` in the scores' dtype."""

    def forward_pass(ctx: Any, scores: torch.Tensor, kept: torch.Tensor | None) -> torch.Tensor:
        weights = forward(scores.to(compute_dtype(scores.dtype)), kept)
        ctx.save_for_backward(weights)
        ctx.input_dtype = scores.dtype
        return weights.to(scores.dtype)

    def backward_pass(ctx: Any, grad_weights: torch.Tensor) -> tuple[torch.Tensor, None]:
        (weights,) = ctx.saved_tensors
        s = slope(weights)
        grad = grad_weights.to(s.dtype) * s
        correction = grad.sum(dim=-1, keepdim=True) / s.sum(dim=-1, keepdim=True).clamp(min=1e-30)
        return (grad - correction * s).to(ctx.input_dtype), None

    methods = {"forward": staticmethod(forward_pass), "backward": staticmethod(backward_pass)}
    return type(name, (torch.autograd.Function,), methods)


def reference_rows(scores: torch.Tensor, mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """What the row-at-a-time references walk: ``scores [..., Tk]`` as rows ``[R, Tk]`` and the kept mask of each
    row ``[R, Tk]`` (all True without ``mask``)."""
    flat = scores.reshape(-1, scores.shape[-1])
    kept = full_mask(scores, mask)
    return flat, torch.ones_like(flat, dtype=torch.bool) if kept is None else kept.reshape(flat.shape)
