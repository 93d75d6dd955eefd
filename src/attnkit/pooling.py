"""Pooling a sequence into one vector (layer 3): query-free attention pooling and its masked baselines.

Attention pooling is attention whose query is learned rather than given (Yang et al. 2016's "context vector";
Lin et al. 2017 with several heads): ``weights = distribution(score(q_h, x), mask)``, ``pooled = weights @ x``.
Every pooling here returns ``AttentionOutput(pooled, weights [B, heads, T])`` so explanation code treats
them alike; the baselines report the weights they implicitly use.

Task scaling (TaSc; Chrysostomou & Aletras, ACL 2021) multiplies the attention weights by a learned,
*non-contextual* score per token before the weighted sum, ``pooled = (weights · s) @ x``: scores from the token's
id and its own word embedding only (:class:`TaskScaling`), which a model hands to :meth:`AttentionPooling.forward`.

Shape glossary:
    B  batch   T  positions   D  features (``dim``)   Dh  hidden size of the score   heads  pooling heads
    V  vocabulary   E  word-embedding features
"""

from __future__ import annotations

import torch
from torch import nn

from attnkit import masks
from attnkit.distributions import Distribution, Softmax
from attnkit.outputs import AttentionOutput
from attnkit.scores import DotScore, Score

__all__ = [
    "AttentionPooling",
    "ConvTaskScaling",
    "FeatTaskScaling",
    "LinTaskScaling",
    "MaxPooling",
    "MeanPooling",
    "TaskScaling",
]


def _one_mask(mask: torch.Tensor | None, key_mask: torch.Tensor | None) -> torch.Tensor | None:
    """``key_mask=`` (the name used everywhere else) or ``mask=`` (the older name): the same ``[B, T]`` bool mask,
    True = real token; passing both is refused."""
    if mask is not None and key_mask is not None:
        raise ValueError("pass key_mask= or mask= (the same mask, True = real token), not both")
    return key_mask if key_mask is not None else mask


def _check_input(x: torch.Tensor, mask: torch.Tensor | None, name: str) -> None:
    if x.dim() != 3:
        raise ValueError(f"{name} expects x of shape [B, T, D], got {tuple(x.shape)}")
    if mask is not None and masks.as_bool_mask(mask, "mask").shape != x.shape[:2]:
        raise ValueError(f"{name}: mask must have shape [B, T] = {tuple(x.shape[:2])}, got {tuple(mask.shape)}")


class AttentionPooling(nn.Module):
    """Query-free attention pooling (HAN's word/sentence attention; "AttentionPooling1D").

    By default the score is the additive form of Yang et al. 2016 and Lin et al. 2017,
    ``score_h(x_t) = q_hᵀ tanh(W x_t + b)``, one learned vector ``q_h`` per head. Pass ``score=`` to use any
    :class:`~attnkit.scores.Score` instead: it is called as ``score(queries [1, heads, hidden], x [B, T, D])``.

    ``dim`` is ``D``; ``hidden`` is ``Dh``, the size of the queries and of ``tanh(W x + b)`` (default ``D``); ``heads``
    learned queries give ``pooled [B, heads·D]`` (``[B, D]`` for one). ``positions`` (e.g.
    :class:`~attnkit.positions.SinusoidalPositions`) is applied to ``x`` first; without it word order is ignored.
    """

    def __init__(
        self,
        dim: int,
        *,
        hidden: int | None = None,
        heads: int = 1,
        score: Score | None = None,
        distribution: Distribution | None = None,
        positions: nn.Module | None = None,
    ) -> None:
        super().__init__()
        if heads < 1:
            raise ValueError(f"heads must be >= 1, got {heads}")
        hidden = hidden or dim
        self.heads = heads
        self.key_proj = nn.Linear(dim, hidden) if score is None else None
        self.score = DotScore() if score is None else score
        self.distribution = distribution if distribution is not None else Softmax()
        self.positions = positions
        self.queries = nn.Parameter(torch.empty(heads, hidden).normal_(std=hidden**-0.5))

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        *,
        key_mask: torch.Tensor | None = None,
        scale: torch.Tensor | None = None,
        values: torch.Tensor | None = None,
    ) -> AttentionOutput:
        """Pool ``x [B, T, D]`` under ``key_mask [B, T]`` (True = real token; ``mask=`` is its older name) ->
        ``AttentionOutput(pooled [B, D] or [B, heads·D], weights [B, heads, T])``. An empty sequence pools to zeros
        with all-zero weights.

        ``values [B, T, Dv]`` (default ``x``) are what the weights average while ``x`` alone is scored (e.g. the
        word embeddings under an encoder's states); ``pooled`` then has ``Dv`` features. ``scale [B, T]`` (TaSc)
        multiplies each weight before the sum; the returned weights stay the distribution's.
        """
        mask = _one_mask(mask, key_mask)
        _check_input(x, mask, "AttentionPooling")
        if values is not None and values.shape[:2] != x.shape[:2]:
            raise ValueError(f"AttentionPooling: values must have shape [B, T, Dv] with [B, T] = {tuple(x.shape[:2])}"
                             f", got {tuple(values.shape)}")  # fmt: skip
        if self.positions is not None:
            x = self.positions(x)
        keys = x if self.key_proj is None else torch.tanh(self.key_proj(x))  # [B, T, Dh or D]
        queries = self.queries.unsqueeze(0).to(keys.dtype)  # [1, heads, Dh]
        scores = self.score(queries, keys)  # [B, heads, T]
        mask = masks.attention_mask(scores.shape, key_mask=mask)
        weights = self.distribution(scores, mask, query=queries)  # [B, heads, T]
        scaled = weights if scale is None else weights * scale[:, None, :].to(weights.dtype)  # [B, heads, T]
        pooled = scaled @ (x if values is None else values).to(weights.dtype)  # [B, heads, D or Dv]
        return AttentionOutput(pooled.flatten(1) if self.heads > 1 else pooled.squeeze(1), weights)


def _kept(x: torch.Tensor, mask: torch.Tensor | None, key_mask: torch.Tensor | None, name: str) -> torch.Tensor:
    """The baselines' checked mask ``[B, T]`` (True = real token; all True when none is given)."""
    mask = _one_mask(mask, key_mask)
    _check_input(x, mask, name)
    return torch.ones(x.shape[:2], dtype=torch.bool, device=x.device) if mask is None else mask


class MeanPooling(nn.Module):
    """Masked mean: the unweighted baseline. Weights are ``1/length`` on real tokens."""

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, *, key_mask: torch.Tensor | None = None
    ) -> AttentionOutput:
        """x ``[B, T, D]``, key_mask (or ``mask``) ``[B, T]`` -> ``AttentionOutput(pooled [B, D], weights [B, 1, T])``."""
        kept = _kept(x, mask, key_mask, "MeanPooling")
        counts = kept.sum(dim=1, keepdim=True).clamp(min=1)  # [B, 1]
        weights = (kept.to(x.dtype) / counts.to(x.dtype)).unsqueeze(1)  # [B, 1, T]
        return AttentionOutput((weights @ x).squeeze(1), weights)


class MaxPooling(nn.Module):
    """Masked max over time, per feature (GlobalMaxPooling). Padding never wins; an empty row gives 0.

    Its weights are a saliency: ``weights[b, 0, t]`` is the fraction of features whose maximum is at ``t``.
    """

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, *, key_mask: torch.Tensor | None = None
    ) -> AttentionOutput:
        """x ``[B, T, D]``, key_mask (or ``mask``) ``[B, T]`` -> ``AttentionOutput(pooled [B, D], weights [B, 1, T])``."""
        kept = _kept(x, mask, key_mask, "MaxPooling")
        filled = x.masked_fill(~kept[..., None], float("-inf"))  # [B, T, D]
        values, argmax = filled.max(dim=1)  # [B, D]
        has_token = kept.any(dim=1, keepdim=True)  # [B, 1]
        pooled = torch.where(has_token, values, torch.zeros_like(values))
        hits = torch.zeros(x.shape[0], x.shape[1], dtype=x.dtype, device=x.device)
        hits.scatter_add_(1, argmax, torch.ones_like(values))  # [B, T] features won by each step
        weights = (hits / x.shape[2]) * has_token  # [B, T]
        return AttentionOutput(pooled, weights.unsqueeze(1))


class TaskScaling(nn.Module):
    """A learned, non-contextual score per token that multiplies attention weights (TaSc).

    ``forward(token_ids [B, T], embeddings [B, T, E], mask [B, T]) -> scores [B, T]``, 0 at padding. A token's
    score is read from its own id and its own word embedding (the embedding layer's output, before any encoder,
    dropout or bigram feature): changing its neighbours never changes it (for :class:`ConvTaskScaling`, only
    the neighbours inside its window can). Parameters start as in the authors' code:
    ``uniform(-1/sqrt(V), 1/sqrt(V))``.
    """

    def forward(
        self, token_ids: torch.Tensor, embeddings: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError


def _vocabulary_parameter(*shape: int) -> nn.Parameter:
    bound = shape[0] ** -0.5
    return nn.Parameter(torch.empty(*shape).uniform_(-bound, bound))


class LinTaskScaling(TaskScaling):
    """Lin-TaSc: a learned scalar ``u_w`` per vocabulary word; ``s_i = Σ_k u_{w_i} · e_ik`` (the scaled
    embedding summed over its features)."""

    def __init__(self, vocab_size: int) -> None:
        super().__init__()
        self.u = _vocabulary_parameter(vocab_size)  # [V]

    def forward(self, token_ids: torch.Tensor, embeddings: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """token_ids ``[B, T]``, embeddings ``[B, T, E]``, mask ``[B, T]`` -> scores ``[B, T]``."""
        scores = self.u[token_ids] * embeddings.sum(-1)  # [B, T]
        return scores * mask.to(scores.dtype)


class FeatTaskScaling(TaskScaling):
    """Feat-TaSc: a learned vector ``U_w`` per vocabulary word; ``s_i = Σ_k U_{w_i, k} · e_ik`` (``V × E``
    parameters: as many as the embedding table)."""

    def __init__(self, vocab_size: int, embed_dim: int) -> None:
        super().__init__()
        self.u = _vocabulary_parameter(vocab_size, embed_dim)  # [V, E]

    def forward(self, token_ids: torch.Tensor, embeddings: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """token_ids ``[B, T]``, embeddings ``[B, T, E]``, mask ``[B, T]`` -> scores ``[B, T]``."""
        scores = (self.u[token_ids] * embeddings).sum(-1)  # [B, T]
        return scores * mask.to(scores.dtype)


class ConvTaskScaling(TaskScaling):
    """Conv-TaSc: a 1-D convolution over the Lin-scaled embeddings ``u_{w_i} · e_i``, summed over its channels.

    With the authors' ``kernel_size=1`` (the default) a score is non-contextual like the others; a wider odd
    kernel lets each score read the ``kernel_size // 2`` words on either side (its receptive field, never more;
    padding holds zeros, so how much padding follows a document changes nothing). The authors' code has 15
    ``channels``.
    """

    def __init__(self, vocab_size: int, embed_dim: int, *, channels: int = 15, kernel_size: int = 1) -> None:
        super().__init__()
        if kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be odd and >= 1, got {kernel_size}")
        self.u = _vocabulary_parameter(vocab_size)  # [V]
        self.conv = nn.Conv1d(embed_dim, channels, kernel_size, padding=kernel_size // 2)

    def forward(self, token_ids: torch.Tensor, embeddings: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """token_ids ``[B, T]``, embeddings ``[B, T, E]``, mask ``[B, T]`` -> scores ``[B, T]``."""
        kept = mask.to(embeddings.dtype)
        scaled = (self.u[token_ids] * kept)[..., None] * embeddings  # [B, T, E], zero at padding
        scores = self.conv(scaled.transpose(1, 2)).sum(1)  # [B, T]
        return scores * kept
