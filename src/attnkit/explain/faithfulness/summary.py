"""Per-data-set figures from per-prediction results (layer 5): each method's mean AOPC comprehensiveness and
sufficiency, flip fraction and Kendall τ with leave-one-out, and the permutation test over many predictions —
what a results table reports (bootstrap intervals are the experiment's)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from attnkit.explain.faithfulness.results import DocumentFaithfulness, PermutationResult

__all__ = ["REFERENCE", "method_means", "permutation_summary"]

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
