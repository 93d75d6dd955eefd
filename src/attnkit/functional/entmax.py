"""1.5-entmax (Peters, Niculae & Martins, 2019), exact sort-based algorithm, masked.

``entmax15(z) = [z/2 - tau]_+^2`` with ``tau`` chosen so the row sums to 1: sparser than softmax, smoother
than sparsemax. Shape glossary: ``...`` leading dims, ``Tk`` the normalised (last) dim.
"""

from __future__ import annotations

import torch

from attnkit.functional._common import full_mask, reference_rows, support_function
from attnkit.functional.sparsemax import _row_max, _sorted_kept


def _entmax15_forward(z: torch.Tensor, kept: torch.Tensor | None) -> torch.Tensor:
    x = (z - _row_max(z, kept)) / 2
    x_sorted, valid = _sorted_kept(x, kept)  # [..., Tk]
    rho = torch.arange(1, z.shape[-1] + 1, device=z.device, dtype=z.dtype)  # [Tk]
    mean = x_sorted.cumsum(dim=-1) / rho
    mean_sq = (x_sorted**2).cumsum(dim=-1) / rho
    delta = (1 - rho * (mean_sq - mean**2)) / rho
    tau = mean - torch.sqrt(delta.clamp(min=0))  # candidate thresholds, one per support size
    support_size = (valid & (tau <= x_sorted)).sum(dim=-1, keepdim=True)  # [..., 1]
    tau_star = tau.gather(-1, (support_size - 1).clamp(min=0))
    weights = (x - tau_star).clamp(min=0) ** 2
    return weights if kept is None else weights.masked_fill(~kept, 0.0)


# d weights / d x is 2·sqrt(w) on the support, and d/dz = (1/2) d/dx: the factors cancel.
_Entmax15 = support_function("_Entmax15", _entmax15_forward, torch.sqrt)


def entmax15(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Masked 1.5-entmax over the last dim (exact; custom backward): ``scores [..., Tk]``, ``mask`` bool
    broadcastable to it (True = attend) -> weights ``[..., Tk]`` summing to 1 over kept positions, 0 for rows with
    none kept."""
    return _Entmax15.apply(scores, full_mask(scores, mask))


def entmax15_reference(scores: torch.Tensor, mask: torch.Tensor | None = None, iters: int = 80) -> torch.Tensor:
    """Slow, readable reference, one row at a time, plain autograd.

    ``p_i = max(z_i/2 - tau, 0)^2`` and ``sum_i p_i`` falls as ``tau`` rises: bisection finds the support
    ``S = {i : z_i/2 > tau}``; on that support ``sum_S (x_i - tau)^2 = 1`` has the closed form
    ``tau = mean_S(x) - sqrt((1 - |S| var_S(x)) / |S|)``, through which autograd differentiates.
    """
    flat, kept = reference_rows(scores, mask)
    rows = []
    for z, keep in zip(flat, kept, strict=True):
        out = torch.zeros_like(z)
        if keep.any():
            x = z[keep] / 2
            lo, hi = x.max().detach() - 1, x.max().detach()
            for _ in range(iters):
                mid = (lo + hi) / 2
                if ((x.detach() - mid).clamp(min=0) ** 2).sum() >= 1:
                    lo = mid
                else:
                    hi = mid
            support = x.detach() > (lo + hi) / 2
            xs, k = x[support], int(support.sum())
            tau = xs.mean() - torch.sqrt((1 - k * (xs.pow(2).mean() - xs.mean() ** 2)) / k)
            out = out.masked_scatter(keep, (x - tau).clamp(min=0) ** 2)
        rows.append(out)
    return torch.stack(rows).reshape(scores.shape)
