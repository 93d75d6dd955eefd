"""The attribution methods as objects in one table, :data:`METHODS` (layer 5): each has one ``attribute(run)``
giving one score per unit of the run's :class:`~attnkit.explain.faithfulness.subject.Subject`, higher = more
important for the predicted class (as Captum's ``Attribution.attribute``). Imports no torch at module level: the
command line offers the names.

| method | what it is |
|---|---|
| ``attention`` | the model's own attention weights (heads averaged; HAN: word × sentence weight) |
| ``rollout`` | attention rollout through a Transformer encoder, read out by the pooling (Abnar & Zuidema 2020) |
| ``flow`` | attention flow (maximum flow) through the same graph |
| ``gradient_x_input`` | gradient × embedding, summed over features |
| ``integrated_gradients`` | integrated gradients from the zero embedding (with its convergence delta) |
| ``leave_one_out`` | the drop in p(predicted class) when the unit alone is erased |
| ``random`` | seeded random scores: the floor every method must be read against |

A method a subject cannot give (``rollout`` and ``flow`` without an encoder) returns None and is left out of the
results. Adding a method is one class and one line in :data:`METHODS`.

Attention flow is solved with ``scipy.sparse.csgraph.maximum_flow`` on a graph of one node per (layer, position):
an edge ``(l-1, j) -> (l, i)`` has capacity ``Â_l[i, j]`` (as in :func:`~attnkit.explain.rollout.attention_rollout`)
and ``(L, i)`` reaches the output with the pooling's weight ``w_i``. scipy takes integer capacities, so they are
scaled by ``SCALE`` and rounded (a resolution of 1e-6).

Shape glossary:
    L  layers   H  heads   T  units (positions)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from attnkit.explain.faithfulness.erasure import Erasure
    from attnkit.explain.faithfulness.subject import Subject

__all__ = [
    "DEFAULT_METHODS",
    "METHODS",
    "Method",
    "MethodScores",
    "Run",
    "as_methods",
    "attention_flow",
    "method_scores",
]

STEPS = 32  # integrated gradients' Gauss-Legendre nodes in attnkit faithfulness and the Python API
# ... and in explain --faithfulness's panel: 8 nodes keep the HAN's completeness delta under 2.8e-3 of p, at 1/4 the cost
PANEL_STEPS = 8
# integrated gradients double their steps, up to STEPS_CAP, until |completeness delta| <= TOLERANCE x |p(x) - p(0)|
# (at least DELTA_FLOOR: a prediction the path does not change is not chased to the cap); else the figure says so
TOLERANCE = 0.05
DELTA_FLOOR = 1e-3
STEPS_CAP = 256
RANDOM_DRAWS = 10  # the random floor is the mean of this many seeded draws (its spread in the results' extra)


@dataclass
class MethodScores:
    """One method's ``scores [T]`` (float32) and, for integrated gradients, its ``convergence_delta``, the
    ``steps`` it took and whether the delta is within :data:`TOLERANCE` (``converged``)."""

    scores: torch.Tensor
    convergence_delta: float | None = None
    steps: int | None = None
    converged: bool | None = None
    draws: list = field(default_factory=list)  # further score vectors the figures are averaged over (a floor's)


@dataclass
class Run:
    """What a method attributes in: the subject, the erasure (leave-one-out erases that way), the generator that
    ``random`` draws from, IG's ``steps``, and what several methods share (the subject's attention; both gradient
    methods' one forward and backward, given already computed for many documents or computed once here)."""

    subject: Subject
    erasure: Erasure
    generator: torch.Generator
    steps: int = STEPS
    gradients: tuple | None = None
    integrated: bool = True
    _attention: dict | None = field(default=None, repr=False)

    def attention(self) -> dict[str, torch.Tensor]:
        """The subject's ``attention_scores()``, asked once."""
        if self._attention is None:
            self._attention = self.subject.attention_scores()
        return self._attention

    def fused_gradients(self) -> tuple:
        """``(gradient × input, integrated gradients or None)`` of the subject, computed once."""
        from attnkit.explain.faithfulness.gradients import fused_gradients

        if self.gradients is None or (self.integrated and self.gradients[1] is None):
            inputs = self.subject.gradient_inputs()
            self.gradients = fused_gradients(inputs, self.subject.label, steps=self.steps, integrated=self.integrated)
        return self.gradients


@dataclass(frozen=True)
class Method:
    """One attribution method. ``shaded``: a report's panel shades the tokens by it; ``superlative``: how the
    report's sentence calls its top units; ``gradient``: it reads the subject's gradients (batched for many
    documents); ``integrated``: it needs integrated gradients' path; ``floor``: it is the floor the others are read
    against (drawn dashed)."""

    name: str
    help: str = ""
    shaded: bool = False
    superlative: str = ""
    gradient: bool = False
    integrated: bool = False
    floor: bool = False

    def attribute(self, run: Run) -> MethodScores | None:
        """The scores ``[T]`` of ``run.subject``, or None when the subject cannot give this method."""
        raise NotImplementedError

    def describe(self) -> str:
        """``most-attended``, ``top (integrated gradients)``: the report sentence's words for its top units."""
        return self.superlative or f"top ({self.name.replace('_', ' ')})"


class AttentionScores(Method):
    def attribute(self, run: Run) -> MethodScores | None:
        """The subject's attention score of this name, if it has one."""
        import torch

        found = run.attention().get(self.name)
        return None if found is None else MethodScores(found.to(torch.float32))


class Gradients(Method):
    def attribute(self, run: Run) -> MethodScores:
        """The gradient method's scores; integrated gradients with their convergence delta, their steps doubled
        (up to :data:`STEPS_CAP`) until the delta is within :data:`TOLERANCE` of the prediction's change."""
        from attnkit.explain.faithfulness.gradients import fused_gradients

        result, steps = run.fused_gradients()[1 if self.integrated else 0], run.steps
        if not self.integrated:
            return MethodScores(result.scores)
        while not within_tolerance(result) and steps * 2 <= max(STEPS_CAP, run.steps):
            steps *= 2
            result = fused_gradients(run.subject.gradient_inputs(), run.subject.label, steps=steps)[1]
        return MethodScores(result.scores, result.convergence_delta, steps, within_tolerance(result))


class LeaveOneOut(Method):
    def attribute(self, run: Run) -> MethodScores:
        """``p - p(without unit t)`` for each unit, all in one batched pass."""
        import torch

        subject = run.subject
        keep = ~torch.eye(len(subject.tokens), dtype=torch.bool)  # [T, T]: row t erases unit t alone
        erased = subject.probabilities_when(keep, run.erasure)[:, subject.label]  # [T]
        return MethodScores(float(subject.probabilities[subject.label]) - erased)


class RandomScores(Method):
    def attribute(self, run: Run) -> MethodScores:
        """:data:`RANDOM_DRAWS` seeded draws of ``[T]`` uniform scores: the figures are their mean (one draw reads
        far from the floor), the scores shown the first draw's."""
        import torch

        draws = [torch.rand(len(run.subject.tokens), generator=run.generator) for _ in range(RANDOM_DRAWS)]
        return MethodScores(draws[0], draws=draws[1:])


METHODS: dict[str, Method] = {
    method.name: method
    for method in (
        AttentionScores("attention", "the model's own attention", shaded=True, superlative="most-attended"),
        AttentionScores("scaled_attention", "TaSc models: |attention x task score|, what the pooling multiplies"),
        AttentionScores(
            "attention_contribution",
            "--attention-values embeddings models: attention x each word's own part of the predicted class's logit",
        ),
        AttentionScores("rollout", "attention rollout through a Transformer encoder", shaded=True),
        AttentionScores("flow", "attention flow through a Transformer encoder", shaded=True),
        Gradients("gradient_x_input", "gradient x embedding", gradient=True),
        Gradients("integrated_gradients", "integrated gradients", shaded=True, gradient=True, integrated=True),
        LeaveOneOut("leave_one_out", "erasing the unit alone", shaded=True, superlative="most-needed (leave-one-out)"),
        RandomScores("random", "seeded random scores (the floor)", floor=True),
    )
}
DEFAULT_METHODS = tuple(METHODS)


def within_tolerance(result) -> bool:
    """Whether an integrated-gradients result's completeness delta is within :data:`TOLERANCE` of its
    prediction's change (at least :data:`DELTA_FLOOR`); True when it carries no change to read against."""
    if result.change is None or result.convergence_delta is None:
        return True
    return result.convergence_delta <= max(TOLERANCE * abs(result.change), DELTA_FLOOR)


def is_floor(name: str) -> bool:
    """Whether the method called ``name`` in a result is a floor (``random``)."""
    return name in METHODS and METHODS[name].floor


def as_methods(methods: Sequence[Any] | None) -> list[Method]:
    """The :class:`Method` objects that names (the boundary: command line, Python API) or objects stand for, in
    :data:`METHODS` order (objects not in the table after them), without repeats; None: every method."""
    if methods is None:
        return list(METHODS.values())
    if isinstance(methods, str):
        methods = [methods]
    unknown = [m for m in methods if not isinstance(m, Method) and m not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {', '.join(map(str, unknown))}; choose from {', '.join(METHODS)}")
    if not methods:
        raise ValueError(f"no methods given; choose from {', '.join(METHODS)}")
    given = [m if isinstance(m, Method) else METHODS[m] for m in methods]
    table = [m for m in METHODS.values() if m in given]
    return table + [m for m in dict.fromkeys(given) if m not in table]


def method_scores(
    subject: Subject,
    methods: Sequence[Any],
    *,
    erase: Any,
    generator: torch.Generator,
    steps: int = STEPS,
    gradients: tuple | None = None,
) -> dict[str, MethodScores]:
    """Each requested method's scores for ``subject`` (methods it cannot give are left out), in table order.

    ``erase`` is how ``leave_one_out`` erases; ``generator`` draws ``random``; ``steps`` are IG's; ``gradients``
    (optional) are this subject's ``(gradient × input, integrated gradients)`` already computed with those steps
    (:func:`~attnkit.explain.faithfulness.gradients.fused_gradients_batched`, many documents at once).
    """
    from attnkit.explain.faithfulness.erasure import as_erasure

    chosen = as_methods(methods)
    integrated = any(method.integrated for method in chosen)
    run = Run(subject, as_erasure(erase), generator, steps, gradients, integrated)
    found = {method.name: method.attribute(run) for method in chosen}
    return {name: scores for name, scores in found.items() if scores is not None}


SCALE = 1_000_000


def residual_attention(weights: torch.Tensor) -> torch.Tensor:
    """One layer's ``[H, T, T]`` (or ``[T, T]``) weights -> ``rownorm(mean_h A + I)`` ``[T, T]`` float64."""
    import torch

    layer = weights.to(torch.float64)
    layer = layer.mean(dim=0) if layer.dim() == 3 else layer  # [T, T]
    layer = layer + torch.eye(layer.shape[-1], dtype=torch.float64)
    return layer / layer.sum(dim=-1, keepdim=True)


def attention_flow(
    layer_weights: Sequence[torch.Tensor], output_weights: torch.Tensor, *, key_mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Each input token's maximum flow to the output (Abnar & Zuidema 2020): ``[T]`` float64, at most
    ``sum(output_weights)``.

    ``layer_weights`` are one ``[H, T, T]`` (or ``[T, T]``) per layer over one example's real tokens, and
    ``output_weights [T]`` how the output reads the last layer (the pooling's weights; one-hot for ``[CLS]``). A
    batch is taken as :func:`~attnkit.explain.rollout.attention_rollout` takes it: ``[B, H, T, T]`` per layer,
    ``output_weights [B, T]``, ``key_mask [B, T]`` (True = real token) -> ``[B, T]``, 0 at padding.
    """
    if output_weights.dim() == 2:
        return _batched_flow(layer_weights, output_weights, key_mask)
    if key_mask is not None:
        raise ValueError("attention_flow: key_mask is for a batch (output_weights [B, T]); one example has no padding")
    import numpy as np
    import torch
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import maximum_flow

    if not layer_weights:
        raise ValueError("attention_flow: need at least one layer")
    layers = [residual_attention(w) for w in layer_weights]
    positions = layers[0].shape[-1]
    if output_weights.shape != (positions,):
        raise ValueError(f"output_weights: expected shape ({positions},), got {tuple(output_weights.shape)}")
    sink = (len(layers) + 1) * positions
    rows, cols, caps = [], [], []
    grid = np.arange(positions)
    for index, layer in enumerate(layers):
        capacity = np.rint(layer.numpy() * SCALE).astype(np.int32)  # [T(to), T(from)]
        to, source = np.meshgrid(grid, grid, indexing="ij")
        rows.append((index * positions + source).ravel())
        cols.append(((index + 1) * positions + to).ravel())
        caps.append(capacity.ravel())
    rows.append(len(layers) * positions + grid)
    cols.append(np.full(positions, sink))
    caps.append(np.rint(output_weights.to(torch.float64).numpy() * SCALE).astype(np.int32))
    rows, cols, caps = np.concatenate(rows), np.concatenate(cols), np.concatenate(caps)
    keep = caps > 0
    graph = csr_array((caps[keep], (rows[keep], cols[keep])), shape=(sink + 1, sink + 1))
    flows = [maximum_flow(graph, source, sink).flow_value for source in range(positions)]
    return torch.tensor(flows, dtype=torch.float64) / SCALE


def _batched_flow(
    layer_weights: Sequence[torch.Tensor], output_weights: torch.Tensor, key_mask: torch.Tensor | None
) -> torch.Tensor:
    """:func:`attention_flow` of each example of a batch over its real tokens, padded back with zeros: ``[B, T]``."""
    import torch

    batch, positions = output_weights.shape
    if key_mask is None:
        key_mask = torch.ones(batch, positions, dtype=torch.bool)
    if key_mask.dtype != torch.bool or key_mask.shape != (batch, positions):
        raise ValueError(
            f"key_mask: expected a bool [{batch}, {positions}], got {key_mask.dtype} {tuple(key_mask.shape)}"
        )
    flows = torch.zeros(batch, positions, dtype=torch.float64)
    for b in range(batch):
        real = key_mask[b].nonzero().squeeze(-1)  # [t]
        if len(real):
            layers = [w[b][..., real[:, None], real] for w in layer_weights]  # per layer [H, t, t]
            flows[b, real] = attention_flow(layers, output_weights[b, real])
    return flows
