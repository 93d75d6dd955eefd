"""Faithfulness metrics of one prediction (layer 5): ERASER's comprehensiveness, sufficiency and AOPC (DeYoung et
al. 2020), the fraction erased before the decision flips (Serrano & Smith 2019), and agreement between methods
(Kendall's τ through ``scipy.stats.kendalltau``, top-k overlap).

Shape glossary:
    T  units   K  erasure sizes
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

__all__ = ["aopc", "comprehensiveness", "flip_fraction", "kendall_tau", "sufficiency", "top_k_overlap"]


def comprehensiveness(full: float, erased: torch.Tensor) -> list[float]:
    """``p(pred | x) - p(pred | x without the top k)`` for each k: erased ``[K]`` probabilities of the predicted
    class -> ``[K]``. High = the method found what the prediction needs."""
    return [full - float(p) for p in erased]


def sufficiency(full: float, kept: torch.Tensor) -> list[float]:
    """``p(pred | x) - p(pred | only the top k)`` for each k: kept ``[K]`` -> ``[K]``. Low = the top k suffice."""
    return [full - float(p) for p in kept]


def aopc(values: Sequence[float]) -> float:
    """Area over the perturbation curve: the mean of a metric over the erasure sizes (ERASER's AOPC over its bins)."""
    if not values:
        raise ValueError("aopc: no values")
    return sum(values) / len(values)


def flip_fraction(counts: Sequence[int], labels: Sequence[int], label: int, units: int) -> float:
    """The fraction of the units erased (most important first) when the predicted class first changes: the
    first ``counts[i] / units`` whose ``labels[i] != label``; 1.0 when no erasure changes the decision."""
    if units < 1:
        raise ValueError("flip_fraction: no units")
    for count, predicted in zip(counts, labels, strict=True):
        if predicted != label:
            return count / units
    return 1.0


def kendall_tau(a: Sequence[float] | torch.Tensor, b: Sequence[float] | torch.Tensor) -> float:
    """Kendall's τ-b between two methods' scores over the same units (``scipy.stats.kendalltau``); NaN when
    either is constant or there are fewer than two units (scipy's answer), returned as ``nan``."""
    from scipy.stats import kendalltau

    a, b = _as_list(a), _as_list(b)
    if len(a) != len(b):
        raise ValueError(f"kendall_tau: {len(a)} scores against {len(b)}")
    if len(a) < 2:
        return math.nan
    return float(kendalltau(a, b).statistic)


def top_k_overlap(a: Sequence[float] | torch.Tensor, b: Sequence[float] | torch.Tensor, k: int) -> float:
    """``|top_k(a) ∩ top_k(b)| / k`` (ties broken by position, earlier first), ``k`` capped at the unit count."""
    a, b = torch.as_tensor(_as_list(a)), torch.as_tensor(_as_list(b))
    if a.shape != b.shape:
        raise ValueError(f"top_k_overlap: {a.numel()} scores against {b.numel()}")
    k = min(k, a.numel())
    if k < 1:
        raise ValueError("top_k_overlap: need k >= 1 and at least one unit")
    top_a = set(ranking(a)[:k].tolist())
    top_b = set(ranking(b)[:k].tolist())
    return len(top_a & top_b) / k


def ranking(scores: torch.Tensor) -> torch.Tensor:
    """Unit indices from the highest score to the lowest; ties keep their order (stable): ``[T]`` -> ``[T]``."""
    return torch.sort(torch.as_tensor(scores, dtype=torch.float64), descending=True, stable=True).indices


def _as_list(values) -> list[float]:
    return [float(v) for v in (values.tolist() if isinstance(values, torch.Tensor) else values)]
