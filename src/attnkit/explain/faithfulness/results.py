"""The faithfulness of one prediction, as numbers: :class:`DocumentFaithfulness` and its JSON (layer 5).

``to_json()`` gives the schema of ``attnkit faithfulness --json``, one object per input text::

    {"text", "label", "probability", "tokens",
     "methods": {NAME: {"scores": [per token], "comprehensiveness": {"1": …, "5": …, "10": …, "20": …, "50": …},
                        "sufficiency": {…}, "aopc_comprehensiveness", "aopc_sufficiency", "flip_fraction"}},
     "kendall_tau": {"A|B": …}}

``integrated_gradients`` also carries its ``convergence_delta``. A τ that is undefined (a constant method, one
token) is ``null``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DocumentFaithfulness", "MethodResult", "PermutationResult"]


@dataclass
class MethodResult:
    """One method on one prediction.

    Attributes:
        scores: ``[T]`` per unit.
        comprehensiveness, sufficiency: by percent (``"1"``, ``"5"``, ...), ``p(pred)`` minus the probability
            with the top k % erased / kept alone.
        erased_probability, kept_probability: those probabilities themselves, in the same order (for curves).
        counts: how many units each percent is.
        top_probability: ``{n: p(pred) with the top n units erased}`` for n = 1, 2, 3 (the report's sentence).
        flip_fraction: the fraction erased, most important first, when the decision first changes (1.0: never).
        convergence_delta: integrated gradients only.
        extra: further figures a task measures (a grid's ``deletion_auc``, ``insertion_auc``), printed and in the
            JSON beside the others.
    """

    scores: list[float]
    comprehensiveness: dict[str, float]
    sufficiency: dict[str, float]
    aopc_comprehensiveness: float
    aopc_sufficiency: float
    flip_fraction: float
    erased_probability: list[float]
    kept_probability: list[float]
    counts: list[int]
    top_probability: dict[int, float] = field(default_factory=dict)
    convergence_delta: float | None = None
    extra: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The method's object of the JSON schema."""
        out = {
            "scores": [round(s, 6) for s in self.scores],
            "comprehensiveness": _rounded(self.comprehensiveness),
            "sufficiency": _rounded(self.sufficiency),
            "aopc_comprehensiveness": round(self.aopc_comprehensiveness, 6),
            "aopc_sufficiency": round(self.aopc_sufficiency, 6),
            "flip_fraction": round(self.flip_fraction, 6),
        }
        if self.convergence_delta is not None:
            out["convergence_delta"] = self.convergence_delta
        return out | _rounded(self.extra)


@dataclass
class PermutationResult:
    """Jain & Wallace's permutation test on one prediction: ``n`` shuffles of the attention among real units;
    ``median_tvd``: the median total-variation distance of the output distribution; ``flipped``: the share of
    shuffles that change the predicted class."""

    n: int
    median_tvd: float
    flipped: float


@dataclass
class DocumentFaithfulness:
    """Everything the tests found on one prediction (see the module docstring for its JSON)."""

    text: str
    label: str
    probability: float
    tokens: list[str]
    erase: str
    methods: dict[str, MethodResult]
    kendall_tau: dict[str, float]
    top_k_overlap: dict[str, float]
    details: dict[str, list] = field(default_factory=dict)
    permutation: PermutationResult | None = None

    def to_json(self) -> dict[str, Any]:
        """One object of ``attnkit faithfulness --json``."""
        return {
            "text": self.text,
            "label": self.label,
            "probability": round(self.probability, 6),
            "tokens": list(self.tokens),
            "methods": {name: result.to_json() for name, result in self.methods.items()},
            "kendall_tau": {pair: _finite(tau) for pair, tau in self.kendall_tau.items()},
        }


def _rounded(values: dict[str, float]) -> dict[str, float]:
    return {key: round(value, 6) for key, value in values.items()}


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 6)
