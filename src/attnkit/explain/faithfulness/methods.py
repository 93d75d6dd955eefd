"""The attribution methods: one score per unit of a :class:`~attnkit.explain.faithfulness.subject.Subject`, higher
= more important for the predicted class (layer 5).

| method | what it is |
|---|---|
| ``attention`` | the model's own attention weights (heads averaged; HAN: word × sentence weight) |
| ``rollout`` | attention rollout through a Transformer encoder, read out by the pooling (Abnar & Zuidema 2020) |
| ``flow`` | attention flow (maximum flow) through the same graph |
| ``gradient_x_input`` | gradient × embedding, summed over features |
| ``integrated_gradients`` | integrated gradients from the zero embedding (with its convergence delta) |
| ``leave_one_out`` | the drop in p(predicted class) when the unit alone is erased |
| ``random`` | seeded random scores: the floor every method must be read against |

Both gradient methods come from one forward and backward (:mod:`~attnkit.explain.faithfulness.gradients_fused`),
equal to Captum's (:mod:`~attnkit.explain.faithfulness.gradients`, the reference; tested).

``rollout`` and ``flow`` exist only where an encoder mixes the units by attention; a subject that cannot give a
method simply leaves it out of its results.

Shape glossary:
    T  units
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attnkit.explain.faithfulness.names import METHODS, parse_methods
from attnkit.explain.faithfulness.subject import Subject

__all__ = ["DEFAULT_METHODS", "METHODS", "MethodScores", "check_methods", "method_scores"]

DEFAULT_METHODS = METHODS


@dataclass
class MethodScores:
    """One method's ``scores [T]`` (float32) and, for integrated gradients, its ``convergence_delta``."""

    scores: torch.Tensor
    convergence_delta: float | None = None


def check_methods(methods: Sequence[str]) -> list[str]:
    """``methods`` in :data:`METHODS` order, without repeats; a ``ValueError`` names an unknown one."""
    return parse_methods(",".join(methods))


def method_scores(
    subject: Subject,
    methods: Sequence[str],
    *,
    erase: str,
    generator: torch.Generator,
    steps: int = 32,
    gradients: tuple | None = None,
) -> dict[str, MethodScores]:
    """Each requested method's scores for ``subject`` (methods it cannot give are left out), in ``methods`` order.

    ``erase`` is how ``leave_one_out`` erases; ``generator`` draws ``random``; ``steps`` are IG's; ``gradients``
    (optional) are this subject's ``(gradient × input, integrated gradients)`` already computed with those steps
    (:func:`~attnkit.explain.faithfulness.gradients_fused.fused_gradients_batched`, many documents at once).
    """
    from attnkit.explain.faithfulness.gradients_fused import fused_gradients

    units = len(subject.tokens)
    label = subject.label
    found: dict[str, MethodScores] = {}
    attention = subject.attention_scores() if {"attention", "rollout", "flow"} & set(methods) else {}
    gradient_methods = {"gradient_x_input", "integrated_gradients"} & set(methods)
    fused = gradients  # both gradient methods from one forward and backward
    for method in check_methods(methods):
        if method in attention:
            found[method] = MethodScores(attention[method].to(torch.float32))
        elif method in gradient_methods:
            if fused is None or (method == "integrated_gradients" and fused[1] is None):
                integrated = "integrated_gradients" in gradient_methods
                fused = fused_gradients(subject.gradient_inputs(), label, steps=steps, integrated=integrated)
            result = fused[0] if method == "gradient_x_input" else fused[1]
            found[method] = MethodScores(result.scores, result.convergence_delta)
        elif method == "leave_one_out":
            keep = ~torch.eye(units, dtype=torch.bool)  # [T, T]: row t erases unit t alone
            erased = subject.probabilities_when(keep, erase)[:, label]  # [T]
            found[method] = MethodScores(float(subject.probabilities[label]) - erased)
        elif method == "random":
            found[method] = MethodScores(torch.rand(units, generator=generator))
    return found
