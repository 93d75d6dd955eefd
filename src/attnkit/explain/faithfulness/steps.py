"""One text's faithfulness when its prediction is many tokens (a translation, a pronunciation): the per-step results
of the same source averaged into one :class:`DocumentFaithfulness`, so that a report shows one panel per text
(layer 5).

Every step tests the same source units with the same erasure sizes, so each figure — a method's scores, its
comprehensiveness and sufficiency at each k, the probabilities after erasing its top 1, 2, 3 units, AOPC, flip
fraction, Kendall τ — is the mean of the steps' figures, and ``probability`` is the mean p(emitted token).

Shape glossary:
    T  source units   N  steps (emitted tokens)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from attnkit.explain.faithfulness.results import DocumentFaithfulness, MethodResult

__all__ = ["EMITTED", "mean_over_steps"]

EMITTED = "each emitted token"  # the label of the averaged result: p(each emitted token)


def mean_over_steps(steps: Sequence[DocumentFaithfulness], *, text: str) -> DocumentFaithfulness:
    """The mean of ``steps`` (the results of one source, one per emitted token) as one result labelled
    :data:`EMITTED`; a method is kept when every step has it.

    Raises:
        ValueError: no steps, or steps over different source tokens or erasures.
    """
    if not steps:
        raise ValueError("mean_over_steps: no steps")
    first = steps[0]
    if any(step.tokens != first.tokens or step.erase != first.erase for step in steps):
        raise ValueError("mean_over_steps: the steps test different sources or erasures")
    names = [name for name in first.methods if all(name in step.methods for step in steps)]
    methods = {name: _mean_method([step.methods[name] for step in steps]) for name in names}
    pairs = [pair for pair in first.kendall_tau if all(pair in step.kendall_tau for step in steps)]
    return DocumentFaithfulness(
        text=text,
        label=EMITTED,
        probability=_mean([step.probability for step in steps]),
        tokens=list(first.tokens),
        erase=first.erase,
        methods=methods,
        kendall_tau={pair: _mean([step.kendall_tau[pair] for step in steps]) for pair in pairs},
        top_k_overlap={},
    )


def _mean_method(found: Sequence[MethodResult]) -> MethodResult:
    first = found[0]
    deltas = [f.convergence_delta for f in found if f.convergence_delta is not None]
    return MethodResult(
        scores=_columns([f.scores for f in found]),  # [T]
        comprehensiveness={k: _mean([f.comprehensiveness[k] for f in found]) for k in first.comprehensiveness},
        sufficiency={k: _mean([f.sufficiency[k] for f in found]) for k in first.sufficiency},
        aopc_comprehensiveness=_mean([f.aopc_comprehensiveness for f in found]),
        aopc_sufficiency=_mean([f.aopc_sufficiency for f in found]),
        flip_fraction=_mean([f.flip_fraction for f in found]),
        erased_probability=_columns([f.erased_probability for f in found]),
        kept_probability=_columns([f.kept_probability for f in found]),
        counts=list(first.counts),
        top_probability={n: _mean([f.top_probability[n] for f in found]) for n in first.top_probability},
        convergence_delta=max(deltas) if deltas else None,
    )


def _columns(rows: Sequence[Sequence[float]]) -> list[float]:
    """The mean of each column of equally long rows."""
    return [_mean(list(column)) for column in zip(*rows, strict=True)]


def _mean(values: Sequence[float]) -> float:
    """The mean of the values that are not NaN (an undefined τ); NaN when none is."""
    kept = [v for v in values if not math.isnan(v)]
    return sum(kept) / len(kept) if kept else math.nan
