"""Which units each erasure removes or keeps, as ``keep`` masks (layer 5).

``ERASURES`` are the ways a unit leaves the input (the subject applies them):

- ``delete`` (default): the unit leaves the sequence; lengths shrink, an RNN never reads it, positions close up.
- ``mask``: the unit stays in the sequence (an RNN still reads it, positions do not move) but is masked out of
  every attention.
- ``unk``: the unit is replaced by the unknown token.

Shape glossary:
    T  units   K  erasure sizes   N  variants
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from attnkit.explain.faithfulness.names import ERASURES, PERCENTS

__all__ = ["ERASURES", "PERCENTS", "check_erasure", "flip_counts", "keep_top", "top_counts"]


def check_erasure(erase: str) -> str:
    """``erase`` if it is one of :data:`ERASURES`; else a ``ValueError`` naming the choices."""
    if erase not in ERASURES:
        raise ValueError(f"unknown erasure {erase!r}; choose from {', '.join(ERASURES)}")
    return erase


def top_counts(units: int, percents: Sequence[int] = PERCENTS) -> list[int]:
    """How many units the top ``k`` % are: ``ceil(k/100 · units)``, at least 1, at most ``units``.

    >>> top_counts(30)
    [1, 2, 3, 6, 15]
    """
    return [min(units, max(1, math.ceil(p * units / 100 - 1e-9))) for p in percents]


def keep_top(order: torch.Tensor, counts: Sequence[int], *, keep: bool) -> torch.Tensor:
    """Masks that erase (``keep=False``: comprehensiveness) or keep only (``keep=True``: sufficiency) the first
    ``count`` units of ``order`` (unit indices, most important first): order ``[T]`` -> ``[K, T]`` bool."""
    units = order.numel()
    rank = torch.empty(units, dtype=torch.long)
    rank[order] = torch.arange(units)  # [T] each unit's place in the order
    top = rank[None, :] < torch.tensor(list(counts), dtype=torch.long)[:, None]  # [K, T]
    return top if keep else ~top


def flip_counts(units: int, *, most: int = 50) -> list[int]:
    """The erasure sizes at which the flip search looks: every size for ``units <= most``, else every
    ``ceil(units / most)``-th (and ``units``), so a long document costs at most ``most + 1`` forwards."""
    step = max(1, math.ceil(units / most))
    counts = list(range(step, units + 1, step))
    return counts if counts and counts[-1] == units else [*counts, units]
