"""Sparsemax (Martins & Astudillo, 2016): the Euclidean projection of the scores onto the simplex.

``sparsemax(z) = max(z - tau, 0)`` with ``tau`` chosen so the row sums to 1; many weights are exactly 0.
Masked positions are left out of the projection. Shape glossary: ``...`` leading dims, ``Tk`` last dim.
"""

from __future__ import annotations

import torch

from attnkit.functional._common import full_mask, reference_rows, support_function


def _sorted_kept(z: torch.Tensor, kept: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Sort the kept entries of each row in descending order; slots past the kept count hold 0.

    Returns ``(z_sorted [..., Tk], valid [..., Tk])`` where ``valid[k]`` is ``k < number kept``.
    """
    if kept is None:
        z_sorted = torch.sort(z, dim=-1, descending=True).values
        return z_sorted, torch.ones_like(z_sorted, dtype=torch.bool)
    z_sorted = torch.sort(z.masked_fill(~kept, float("-inf")), dim=-1, descending=True).values
    rank = torch.arange(z.shape[-1], device=z.device)  # [Tk]
    valid = rank < kept.sum(dim=-1, keepdim=True)  # [..., Tk]
    return z_sorted.masked_fill(~valid, 0.0), valid


def _row_max(z: torch.Tensor, kept: torch.Tensor | None) -> torch.Tensor:
    """Max over kept entries of each row (0 for rows with none): a shift that keeps the sort stable."""
    if kept is None:
        return z.amax(dim=-1, keepdim=True)
    masked_max = z.masked_fill(~kept, float("-inf")).amax(dim=-1, keepdim=True)
    return torch.where(torch.isfinite(masked_max), masked_max, torch.zeros_like(masked_max))


def _sparsemax_forward(z: torch.Tensor, kept: torch.Tensor | None) -> torch.Tensor:
    z = z - _row_max(z, kept)
    z_sorted, valid = _sorted_kept(z, kept)  # [..., Tk]
    k = torch.arange(1, z.shape[-1] + 1, device=z.device, dtype=z.dtype)  # [Tk]
    cumsum = z_sorted.cumsum(dim=-1)
    in_support = valid & (1 + k * z_sorted > cumsum)  # a prefix of each row
    support_size = in_support.sum(dim=-1, keepdim=True)  # [..., 1]
    tau = (cumsum.gather(-1, (support_size - 1).clamp(min=0)) - 1) / support_size.clamp(min=1).to(z.dtype)
    weights = (z - tau).clamp(min=0)
    return weights if kept is None else weights.masked_fill(~kept, 0.0)


_Sparsemax = support_function("_Sparsemax", _sparsemax_forward, lambda weights: (weights > 0).to(weights.dtype))


def sparsemax(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Masked sparsemax over the last dim (sort-based, exact; custom backward): ``scores [..., Tk]``, ``mask``
    bool broadcastable to it (True = attend) -> sparse weights ``[..., Tk]`` summing to 1 over kept positions, 0 for
    rows with none kept."""
    return _Sparsemax.apply(scores, full_mask(scores, mask))


def sparsemax_reference(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Slow, readable reference: one row at a time, the textbook algorithm, plain autograd.

    For each row: sort the kept scores ``z_(1) >= z_(2) >= ...``; the support size ``k*`` is the largest
    ``k`` with ``1 + k z_(k) > sum_{j<=k} z_(j)``; ``tau = (sum_{j<=k*} z_(j) - 1) / k*``.
    """
    flat, kept = reference_rows(scores, mask)
    rows = []
    for z, keep in zip(flat, kept, strict=True):
        out = torch.zeros_like(z)
        if keep.any():
            zk = z[keep]
            z_sorted = torch.sort(zk, descending=True).values
            k_star, total = 0, 0.0
            for k in range(1, len(zk) + 1):
                if 1 + k * z_sorted[k - 1] > z_sorted[:k].sum():
                    k_star, total = k, z_sorted[:k].sum()
            tau = (total - 1) / k_star
            out = out.masked_scatter(keep, torch.clamp(zk - tau, min=0))
        rows.append(out)
    return torch.stack(rows).reshape(scores.shape)
