"""Distribution functions (layer 2): turn scores into attention weights under a mask.

``forward(scores [B, (H,) Tq, Tk], mask=None, *, query=None, query_positions=None) -> weights`` (same shape).
Rows sum to 1 over kept positions; masked positions are exactly 0; a row with nothing kept is all zeros with
zero gradient; float16/bfloat16 are computed in float32. ``query`` and ``query_positions`` are only read by the
local distributions (Luong et al. 2015, §3.2), which decide *where* to look from the query.

Shape glossary:
    B  batch   H  heads   Tq  query positions   Tk  key positions   Dq  query features
"""

from __future__ import annotations

import torch
from torch import nn

from attnkit import masks
from attnkit.functional import entmax15, masked_softmax, sparsemax
from attnkit.functional._common import compute_dtype

__all__ = ["Distribution", "Entmax15", "LocalM", "LocalP", "Softmax", "Sparsemax", "Uniform"]


class Distribution(nn.Module):
    """Base class of every distribution (see the module docstring for the contract)."""

    def forward(
        self,
        scores: torch.Tensor,
        mask: torch.Tensor | None = None,
        *,
        query: torch.Tensor | None = None,
        query_positions: torch.Tensor | None = None,
    ) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError


class Softmax(Distribution):
    """Masked softmax: dense weights."""

    def forward(self, scores, mask=None, *, query=None, query_positions=None):
        """scores ``[..., Tk]``, mask broadcastable -> weights ``[..., Tk]``."""
        return masked_softmax(scores, mask)


class Sparsemax(Distribution):
    """Masked sparsemax (Martins & Astudillo 2016): exact zeros for low scores."""

    def forward(self, scores, mask=None, *, query=None, query_positions=None):
        """scores ``[..., Tk]``, mask broadcastable -> weights ``[..., Tk]``."""
        return sparsemax(scores, mask)


class Entmax15(Distribution):
    """Masked 1.5-entmax (Peters et al. 2019): between softmax and sparsemax."""

    def forward(self, scores, mask=None, *, query=None, query_positions=None):
        """scores ``[..., Tk]``, mask broadcastable -> weights ``[..., Tk]``."""
        return entmax15(scores, mask)


class Uniform(Distribution):
    """Equal weight on every kept position, whatever the scores: ``mask / count`` (Wiegreffe & Pinter 2019's
    uniform-attention baseline). A row with nothing kept is all zeros; the scores get no gradient."""

    def forward(self, scores, mask=None, *, query=None, query_positions=None):
        """scores ``[..., Tk]``, mask broadcastable -> weights ``[..., Tk]``."""
        kept = _expand_mask(scores, mask).to(compute_dtype(scores.dtype))  # [..., Tk]
        return kept / kept.sum(dim=-1, keepdim=True).clamp_min(1.0)


def _expand_mask(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    if mask is None:
        return torch.ones_like(scores, dtype=torch.bool)
    return masks.check_mask(mask, "mask", scores.shape).expand(scores.shape)


class LocalM(Distribution):
    """Luong's local-m: softmax inside a window ``[p_t - D, p_t + D]`` (``D = window``) around the monotonic
    position ``p_t = t``, the query's own position (``query_positions``, default ``0 .. Tq-1``; pass the step index
    when decoding one position at a time)."""

    def __init__(self, window: int) -> None:
        super().__init__()
        if window < 0:
            raise ValueError(f"window must be >= 0, got {window}")
        self.window = window

    def forward(self, scores, mask=None, *, query=None, query_positions=None):
        """scores ``[B, (H,) Tq, Tk]``; ``query_positions`` ``[Tq]`` or ``[B, (H,) Tq]`` -> weights."""
        tq, tk = scores.shape[-2], scores.shape[-1]
        if query_positions is None:
            query_positions = torch.arange(tq, device=scores.device)  # [Tq]
        in_window = masks.window(tq, tk, self.window, self.window, centers=query_positions)  # [.., Tq, Tk]
        return masked_softmax(scores, masks.combine(mask, in_window))


class LocalP(Distribution):
    """Luong's local-p: a predicted centre ``p_t = S · sigmoid(v_pᵀ tanh(W_p h_t))`` and a Gaussian around it.

    ``S`` is the last kept key position of the row (source length − 1). Weights are the softmax, inside
    ``[p_t - D, p_t + D]``, of ``score - (s - p_t)² / (2σ²)`` with ``σ = D/2``. Luong et al. multiply the
    window's softmax by the Gaussian without renormalising; here the Gaussian enters as a log-prior inside
    the softmax, which is that product renormalised, so rows sum to 1 as for every distribution here.
    Gradients reach ``W_p`` and ``v_p`` through the Gaussian term. ``D = window``; ``hidden_dim`` is the size of
    ``W_p``'s output (default ``Dq``).
    """

    def __init__(self, window: int, query_dim: int, hidden_dim: int | None = None) -> None:
        super().__init__()
        if window < 1:
            raise ValueError(f"LocalP needs window >= 1 (σ = window/2 > 0), got {window}")
        self.window = window
        self.position_proj = nn.Linear(query_dim, hidden_dim or query_dim, bias=False)  # W_p
        self.position_score = nn.Linear(hidden_dim or query_dim, 1, bias=False)  # v_p

    def predict_centers(self, query: torch.Tensor, source_last: torch.Tensor) -> torch.Tensor:
        """``p_t``: query ``[B, (H,) Tq, Dq]``, source_last ``[B, (H,) Tq]`` (float) -> ``[B, (H,) Tq]``."""
        gate = torch.sigmoid(self.position_score(torch.tanh(self.position_proj(query)))).squeeze(-1)
        return source_last * gate

    def forward(self, scores, mask=None, *, query=None, query_positions=None):
        """scores ``[B, (H,) Tq, Tk]``, query ``[B, (H,) Tq, Dq]`` (required) -> weights."""
        if query is None:
            raise ValueError("LocalP needs the query (h_t) to predict where to look: pass query=")
        tk = scores.shape[-1]
        kept = _expand_mask(scores, mask)  # [B, (H,) Tq, Tk]
        positions = torch.arange(tk, device=scores.device, dtype=scores.dtype)  # [Tk]
        # last kept position of each row (0 for an empty row, which is zeroed by the mask anyway)
        source_last = (kept * positions).amax(dim=-1)  # [B, (H,) Tq]
        work_dtype = compute_dtype(scores.dtype)
        centers = self.predict_centers(query.to(work_dtype), source_last.to(work_dtype))  # [B, (H,) Tq]
        sigma = self.window / 2
        offset = positions.to(work_dtype) - centers[..., None]  # [B, (H,) Tq, Tk]
        in_window = offset.detach().abs() <= self.window
        prior = -(offset**2) / (2 * sigma**2)
        return masked_softmax(scores.to(work_dtype) + prior, kept & in_window).to(scores.dtype)
