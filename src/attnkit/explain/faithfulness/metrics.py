"""Faithfulness metrics of one prediction (layer 5): ERASER's comprehensiveness, sufficiency and AOPC (DeYoung et
al. 2020), the fraction erased before the decision flips (Serrano & Smith 2019), and agreement between methods
(Kendall's τ-b, equal to ``scipy.stats.kendalltau``'s; top-k overlap), and the deletion / insertion AUCs of the
saliency literature (Petsiuk et al. 2018: units leave, or enter, one at a time, most important first).

Per-data-set means (:func:`method_means`, :func:`permutation_summary`) are what a results table reports.

Shape glossary:
    T  units   K  erasure sizes
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from itertools import combinations

import torch

from attnkit.explain.faithfulness.results import DocumentFaithfulness, PermutationResult

__all__ = [
    "REFERENCE",
    "aopc",
    "comprehensiveness",
    "curve_auc",
    "deletion_insertion_auc",
    "flip_fraction",
    "kendall_tau",
    "kendall_taus",
    "method_means",
    "permutation_summary",
    "ranking",
    "sufficiency",
    "support",
    "top_k_overlap",
]


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
    """Kendall's τ-b between two methods' scores over the same units, the statistic of ``scipy.stats.kendalltau``
    (equal to it, tested; computed here in float64 over all pairs, without importing scipy); NaN when either is
    constant or there are fewer than two units (scipy's answer)."""
    a, b = _as_list(a), _as_list(b)
    if len(a) != len(b):
        raise ValueError(f"kendall_tau: {len(a)} scores against {len(b)}")
    return kendall_taus({"a": a, "b": b})["a|b"]


def kendall_taus(scores: dict[str, Sequence[float] | torch.Tensor]) -> dict[str, float]:
    """Kendall's τ-b (see :func:`kendall_tau`) of every pair of the named scores, ``{"A|B": τ}`` in the order of
    ``itertools.combinations``: each method's pairwise signs ``[T, T]`` are built once.

    τ-b = (concordant - discordant) / sqrt((pairs - ties in A) · (pairs - ties in B)), over the unordered pairs.
    """
    names = list(scores)
    signs = {name: _pair_signs(scores[name]) for name in names}  # each [T, T]
    sizes = {signs[name].shape[0] for name in names}
    if len(sizes) > 1:
        raise ValueError(f"kendall_taus: scores of different lengths {sorted(sizes)}")
    units = sizes.pop() if sizes else 0
    pairs = units * (units - 1) / 2
    untied = {name: float(signs[name].abs().sum()) / 2 for name in names}  # pairs minus ties
    taus = {}
    for first, second in combinations(names, 2):
        denominator = math.sqrt(untied[first] * untied[second])
        if pairs < 1 or denominator == 0.0:
            taus[f"{first}|{second}"] = math.nan
            continue
        agreement = float((signs[first] * signs[second]).sum()) / 2  # concordant - discordant
        taus[f"{first}|{second}"] = min(1.0, max(-1.0, agreement / denominator))
    return taus


def _pair_signs(values: Sequence[float] | torch.Tensor) -> torch.Tensor:
    """``sign(v_i - v_j)`` for every pair: ``[T]`` -> ``[T, T]`` float64."""
    v = torch.as_tensor(_as_list(values), dtype=torch.float64)
    return torch.sign(v[:, None] - v[None, :])


def top_k_overlap(
    a: Sequence[float] | torch.Tensor, b: Sequence[float] | torch.Tensor, k: int, *, generator=None
) -> float:
    """``|top_k(a) ∩ top_k(b)| / k``, ``k`` capped at the unit count; ties broken as :func:`ranking` breaks them
    (by position, earlier first; with ``generator``, in a seeded random order)."""
    a, b = torch.as_tensor(_as_list(a)), torch.as_tensor(_as_list(b))
    if a.shape != b.shape:
        raise ValueError(f"top_k_overlap: {a.numel()} scores against {b.numel()}")
    k = min(k, a.numel())
    if k < 1:
        raise ValueError("top_k_overlap: need k >= 1 and at least one unit")
    top_a = set(ranking(a, generator=generator)[:k].tolist())
    top_b = set(ranking(b, generator=generator)[:k].tolist())
    return len(top_a & top_b) / k


def ranking(scores: torch.Tensor, *, generator: torch.Generator | None = None) -> torch.Tensor:
    """Unit indices from the highest score to the lowest: ``[T]`` -> ``[T]``. Tied units (a sparse attention's
    zeros) come in a random order drawn from ``generator`` — never left to right, which would make "the top 50 %"
    of a sparse method the text's first words; without a generator, in reading order (stable)."""
    values = torch.as_tensor(scores, dtype=torch.float64)
    if generator is None:
        return torch.sort(values, descending=True, stable=True).indices
    shuffle = torch.randperm(values.numel(), generator=generator)  # [T]
    return shuffle[torch.sort(values[shuffle], descending=True, stable=True).indices]


def support(scores: Sequence[float] | torch.Tensor) -> int:
    """How many units a method scores at all (nonzero): a sparse attention's support."""
    return int((torch.as_tensor(scores) != 0).sum())


def _as_list(values) -> list[float]:
    return [float(v) for v in (values.tolist() if isinstance(values, torch.Tensor) else values)]


def curve_auc(curve: torch.Tensor) -> float:
    """The area under ``curve [T + 1]`` read at evenly spaced fractions 0, 1/T, ..., 1 (trapezoids).

    >>> curve_auc(torch.tensor([1.0, 0.0]))
    0.5
    """
    if curve.numel() < 2:
        raise ValueError(f"curve_auc: need at least two points, got {curve.numel()}")
    return float((curve[:-1] + curve[1:]).sum() / (2 * (curve.numel() - 1)))


def deletion_insertion_auc(subject, scores: Sequence[float], erase="delete") -> tuple[float, float]:
    """The deletion and insertion AUCs of p(predicted class) of a
    :class:`~attnkit.explain.faithfulness.subject.Subject` when its units leave / enter (``erase``: how they
    leave) one at a time in the order of ``scores [T]`` (highest first), read at fractions 0, 1/T, ..., 1
    (trapezoids): ``2 (T + 1)`` variants in batched forwards."""
    units = len(subject.tokens)
    rank = torch.empty(units, dtype=torch.long)
    ties = torch.Generator().manual_seed(0)
    rank[ranking(torch.as_tensor(scores), generator=ties)] = torch.arange(units)  # [T] each unit's place in the order
    top = rank[None, :] < torch.arange(units + 1)[:, None]  # [T + 1, T]: row k holds the top k units
    p = subject.probabilities_when(torch.cat([~top, top]), erase)[:, subject.label].double()  # [2 (T + 1)]
    return curve_auc(p[: units + 1]), curve_auc(p[units + 1 :])


REFERENCE = "leave_one_out"  # the method every other's Kendall τ is reported against


def method_means(results: Sequence[DocumentFaithfulness]) -> dict[str, dict[str, float]]:
    """``{method: {"aopc_comprehensiveness", "aopc_sufficiency", "flip_fraction", "tau_leave_one_out",
    "documents"}}``: means over the predictions that have the method (τ over those where it is defined; NaN when
    none is)."""
    names = [name for result in results for name in result.methods]
    summary = {}
    for name in dict.fromkeys(names):
        found = [r.methods[name] for r in results if name in r.methods]
        taus = [_tau(r, name) for r in results if name in r.methods]
        taus = [tau for tau in taus if not math.isnan(tau)]
        summary[name] = {
            "aopc_comprehensiveness": statistics.fmean(m.aopc_comprehensiveness for m in found),
            "aopc_sufficiency": statistics.fmean(m.aopc_sufficiency for m in found),
            "flip_fraction": statistics.fmean(m.flip_fraction for m in found),
            "tau_leave_one_out": statistics.fmean(taus) if taus else math.nan,
            "documents": len(found),
        }
    return summary


def permutation_summary(tests: Sequence[PermutationResult | None]) -> dict[str, float]:
    """Jain & Wallace's figures over a data set: the median of the per-prediction median TVDs and the mean share
    of flipped predictions (predictions without attention to shuffle are left out)."""
    found = [test for test in tests if test is not None]
    if not found:
        raise ValueError("permutation_summary: no permutation test results")
    return {
        "median_tvd": statistics.median(test.median_tvd for test in found),
        "flipped": statistics.fmean(test.flipped for test in found),
        "documents": len(found),
    }


def _tau(result: DocumentFaithfulness, name: str, reference: str = REFERENCE) -> float:
    if name == reference:
        return 1.0
    for pair in (f"{name}|{reference}", f"{reference}|{name}"):
        if pair in result.kendall_tau:
            return result.kendall_tau[pair]
    return math.nan
