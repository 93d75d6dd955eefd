"""Score functions (layer 2): how well each query matches each key.

Every score maps ``query [B, (H,) Tq, Dq]`` and ``key [B, (H,) Tk, Dk]`` to ``scores [B, (H,) Tq, Tk]``;
any leading dims work, and leading dims of size 1 broadcast (a learned query ``[1, Tq, Dq]`` for pooling).

Shape glossary:
    B  batch   H  heads   Tq  query positions   Tk  key positions
    Dq query features     Dk  key features      Dh  hidden size of the additive score
"""

from __future__ import annotations

import math

import torch
from torch import nn

from attnkit.functional.additive import additive_scores

__all__ = ["AdditiveScore", "CosineScore", "DotScore", "GeneralScore", "ScaledDotScore", "Score"]


def _check_feature_dims(query: torch.Tensor, key: torch.Tensor, name: str) -> None:
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(
            f"{name} needs query and key with the same feature size; got query {tuple(query.shape)} "
            f"and key {tuple(key.shape)}"
        )


class Score(nn.Module):
    """Base class: ``forward(query [..., Tq, Dq], key [..., Tk, Dk]) -> [..., Tq, Tk]``."""

    def forward(self, query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError


class DotScore(Score):
    """``s = qᵀk`` (Luong "dot")."""

    def forward(self, query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
        """query ``[..., Tq, D]``, key ``[..., Tk, D]`` -> ``[..., Tq, Tk]``."""
        _check_feature_dims(query, key, "DotScore")
        return query @ key.transpose(-1, -2)


class ScaledDotScore(Score):
    """``s = qᵀk / √D`` (Vaswani et al. 2017). The score :class:`~attnkit.multihead.MultiHeadAttention`
    recognises and runs on ``F.scaled_dot_product_attention``."""

    def forward(self, query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
        """query ``[..., Tq, D]``, key ``[..., Tk, D]`` -> ``[..., Tq, Tk]``."""
        _check_feature_dims(query, key, "ScaledDotScore")
        return (query * query.shape[-1] ** -0.5) @ key.transpose(-1, -2)


class GeneralScore(Score):
    """``s = qᵀ W k``, bilinear (Luong "general"). ``W`` is ``[Dq, Dk]``; computed as ``(q W) kᵀ``."""

    def __init__(self, query_dim: int, key_dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(query_dim, key_dim))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
        """query ``[..., Tq, Dq]``, key ``[..., Tk, Dk]`` -> ``[..., Tq, Tk]``."""
        return (query @ self.weight) @ key.transpose(-1, -2)


class AdditiveScore(Score):
    """``s = vᵀ tanh(W q + U k)`` (Bahdanau et al. 2015; Luong "concat"; the "perceptron" score).

    Never materialises the ``[B, Tq, Tk, Dh]`` tensor: see :func:`attnkit.functional.additive_scores`.
    For decoders that score many queries against the same keys, :meth:`project_keys` once and pass the
    result as ``projected_key``.
    """

    def __init__(self, query_dim: int, key_dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.query_proj = nn.Linear(query_dim, hidden_dim, bias=True)
        self.key_proj = nn.Linear(key_dim, hidden_dim, bias=False)
        self.v = nn.Parameter(torch.empty(hidden_dim).uniform_(-(hidden_dim**-0.5), hidden_dim**-0.5))

    def project_keys(self, key: torch.Tensor) -> torch.Tensor:
        """``U k``: key ``[..., Tk, Dk]`` -> ``[..., Tk, Dh]``."""
        return self.key_proj(key)

    def forward(
        self, query: torch.Tensor, key: torch.Tensor | None, *, projected_key: torch.Tensor | None = None
    ) -> torch.Tensor:
        """query ``[..., Tq, Dq]``, key ``[..., Tk, Dk]`` (or ``projected_key [..., Tk, Dh]``) -> ``[..., Tq, Tk]``."""
        uk = self.project_keys(key) if projected_key is None else projected_key
        return additive_scores(self.query_proj(query), uk, self.v)


class CosineScore(Score):
    """``s = cos(q, k) / temperature``. Cosine alone lies in [-1, 1], too flat for a softmax; the
    temperature sharpens it. ``learnable=True`` learns ``log(1/temperature)`` (clamped at 1/100)."""

    def __init__(self, temperature: float = 0.1, *, learnable: bool = False, eps: float = 1e-8) -> None:
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        log_scale = torch.tensor(math.log(1.0 / temperature))
        if learnable:
            self.log_scale = nn.Parameter(log_scale)
        else:
            self.register_buffer("log_scale", log_scale)
        self.eps = eps

    def forward(self, query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
        """query ``[..., Tq, D]``, key ``[..., Tk, D]`` -> ``[..., Tq, Tk]``."""
        _check_feature_dims(query, key, "CosineScore")
        q = nn.functional.normalize(query, dim=-1, eps=self.eps)
        k = nn.functional.normalize(key, dim=-1, eps=self.eps)
        scale = self.log_scale.clamp(max=math.log(100.0)).exp()
        return (q @ k.transpose(-1, -2)) * scale
