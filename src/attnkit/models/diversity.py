"""Encoder diversity (layer 4): the conicity penalty of Diversity LSTM (Mohankumar et al., ACL 2020, "Towards
Transparent and Explainable Attention Models").

When an encoder's states all point the same way, attention over them can weigh any token and give the same
context: the weights then explain nothing. Diversity LSTM adds ``λ · conicity`` to the training loss, where a
sequence's conicity is the mean, over its real tokens, of ``|cos(h_t, mean of its h)|`` (the "alignment to
mean"; the absolute value as in the authors' code). Padding never counts: it is not in the mean state and has no
term. A sequence with fewer than two real tokens has no spread to measure and is left out (its conicity is 1 or
undefined and carries no gradient).

Their Orthogonal LSTM is not offered: an orthogonalised cell would run step by step in Python instead of
PyTorch's fused packed ``nn.GRU``.

Shape glossary:
    N  sequences   T  positions   D  state features
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch
import torch.nn.functional as F

__all__ = ["EncodedStates", "conicity", "conicity_reference", "diversity_penalty"]


class EncodedStates(NamedTuple):
    """An encoder's states ``[N, T, D]`` and which of them are real tokens, ``mask [N, T]`` (True = real)."""

    states: torch.Tensor
    mask: torch.Tensor


def conicity(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Each sequence's conicity: states ``[N, T, D]``, mask ``[N, T]`` -> ``[N]`` (0 for fewer than 2 real tokens).

    Computed in float32 (at least) for all sequences at once; :func:`conicity_reference` is its readable twin.
    """
    work = states.to(torch.promote_types(states.dtype, torch.float32))
    kept = mask.to(work.dtype)  # [N, T]
    counts = kept.sum(1)  # [N]
    mean = (work * kept[..., None]).sum(1) / counts.clamp_min(1)[:, None]  # [N, D]
    cosine = F.cosine_similarity(work, mean[:, None, :].expand_as(work), dim=-1, eps=1e-8)  # [N, T]
    per_sequence = (cosine.abs() * kept).sum(1) / counts.clamp_min(1)  # [N]
    return torch.where(counts >= 2, per_sequence, torch.zeros_like(per_sequence))


def conicity_reference(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The textbook computation, one sequence and one token at a time (slow): the reference of :func:`conicity`."""
    values = []
    for row, kept in zip(states.double(), mask, strict=True):
        real = row[kept]  # [n, D]
        if len(real) < 2:
            values.append(row.sum() * 0)
            continue
        mean = real.mean(0)
        cosines = [torch.dot(h, mean) / (h.norm() * mean.norm()).clamp_min(1e-8) for h in real]
        values.append(torch.stack(cosines).abs().mean())
    return torch.stack(values)


def diversity_penalty(encoded: Sequence[EncodedStates]) -> torch.Tensor:
    """The penalty of a batch: for each encoder level (HAN: words within sentences, sentences within documents;
    pooled: tokens), the mean conicity of its sequences that have at least 2 real tokens, then the mean over the
    levels that have any. A scalar; 0 (with a gradient path) when no sequence qualifies."""
    levels = []
    for states, mask in encoded:
        counted = mask.sum(1) >= 2  # [N]
        if counted.any():
            levels.append(conicity(states, mask)[counted].mean())
    if not levels:
        return encoded[0].states.new_zeros((), dtype=torch.float32) if encoded else torch.zeros(())
    return torch.stack(levels).mean()
