"""The gradient attributions on the input embeddings (layer 5): ``gradient_x_input`` (Shrikumar et al. 2016) and
``integrated_gradients`` (Sundararajan et al. 2017) from an all-zero embedding (the padding row), with IG's
convergence delta — how far the attributions' sum is from ``f(x) - f(baseline)``, the completeness the method
promises.

Two paths, compared in the tests: the reference through Captum, one method at a time (:func:`gradient_x_input`,
:func:`integrated_gradients`; ``pip install 'attnkit[faithfulness]'``; imported only there, as it pulls in pyplot),
and what runs, :func:`fused_gradients`: one batch holds the embeddings ``x``, the zero baseline and IG's ``steps``
Gauss-Legendre points ``α_i x`` (Captum's default rule). The rows do not interact (eval mode), so one backward of
the sum of their ``p(label)`` gives each row its own gradient:

    gradient × input = ∇p(x) · x        IG = x · Σ_i w_i ∇p(α_i x)        delta = |Σ IG - (p(x) - p(0))|

Shape glossary:
    T  units   E  embedding features   D  documents   P  rows of the batch per document (2 + steps)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attnkit.explain.faithfulness.subject import BatchedGradientInputs, GradientInputs

__all__ = [
    "GradientScores",
    "fused_gradients",
    "fused_gradients_batched",
    "gauss_legendre",
    "gradient_x_input",
    "integrated_gradients",
]


@dataclass
class GradientScores:
    """``scores [T]`` per unit; for IG also ``convergence_delta``: ``|sum(attributions) - (f(x) - f(0))|``, and
    ``change``: ``f(x) - f(0)``, the prediction's change along the path that the delta is read against."""

    scores: torch.Tensor
    convergence_delta: float | None = None
    change: float | None = None


def _captum():
    try:
        import captum.attr
    except ImportError as error:  # pragma: no cover - depends on the installation
        raise RuntimeError(
            "gradient_x_input and integrated_gradients need Captum: pip install 'attnkit[faithfulness]'"
        ) from error
    return captum.attr


def gradient_x_input(inputs: GradientInputs, label: int) -> GradientScores:
    """The gradient of ``p(label)`` times the embedding, summed over ``E``: ``[T]``."""
    attr = _captum().InputXGradient(inputs.forward)
    with torch.enable_grad():
        embeddings = inputs.embeddings.detach().clone().requires_grad_(True)
        attributions = attr.attribute(embeddings, target=label)  # [1, ..., E]
    return GradientScores(inputs.to_units(attributions.detach()).to(torch.float32))


def integrated_gradients(inputs: GradientInputs, label: int, *, steps: int = 32) -> GradientScores:
    """Integrated gradients of ``p(label)`` from the zero embedding in ``steps`` Gauss-Legendre steps, summed over
    ``E``: ``[T]``, with the convergence delta."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    attr = _captum().IntegratedGradients(inputs.forward)
    embeddings = inputs.embeddings.detach().clone()
    baseline = torch.zeros_like(embeddings)
    with torch.enable_grad():
        attributions = attr.attribute(embeddings, baselines=baseline, target=label, n_steps=steps)  # [1, ..., E]
    # completeness: sum(attributions) = f(x) - f(0), both ends in one forward of two (Captum's
    # return_convergence_delta runs each end alone, under autograd)
    with torch.no_grad():
        ends = inputs.forward(torch.cat([embeddings, baseline]))[:, label].double()  # [2]
    delta = float(attributions.detach().double().sum() - (ends[0] - ends[1]))
    change = float(ends[0] - ends[1])
    return GradientScores(inputs.to_units(attributions.detach()).to(torch.float32), abs(delta), change)


def gauss_legendre(steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """IG's ``alphas [steps]`` in (0, 1) and ``weights [steps]`` summing to 1, as Captum's ``gausslegendre``."""
    import numpy as np

    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    nodes, weights = np.polynomial.legendre.leggauss(steps)
    return torch.tensor(0.5 * (1 + nodes)), torch.tensor(0.5 * weights)


def fused_gradients(
    inputs: GradientInputs, label: int, *, steps: int = 32, integrated: bool = True
) -> tuple[GradientScores, GradientScores | None]:
    """gradient × input and (``integrated``) integrated gradients of ``p(label)`` from the zero embedding in
    ``steps`` Gauss-Legendre steps, each summed over ``E`` to ``[T]``; IG carries its convergence delta."""
    one = BatchedGradientInputs(inputs.embeddings, inputs.forward, lambda a: [inputs.to_units(a)])
    return fused_gradients_batched(one, [label], steps=steps, integrated=integrated)[0]


def fused_gradients_batched(
    inputs: BatchedGradientInputs, labels: Sequence[int], *, steps: int = 32, integrated: bool = True
) -> list[tuple[GradientScores, GradientScores | None]]:
    """:func:`fused_gradients` of ``D`` documents at once (``labels [D]``): every document's input, baseline and
    Gauss-Legendre points in one forward and one backward (rows copy-major: row ``p·D + d`` is document ``d``)."""
    embeddings = inputs.embeddings.detach()  # [D, ..., E]
    documents, features = embeddings.shape[0], (1,) * (embeddings.dim() - 1)
    if len(labels) != documents:
        raise ValueError(f"labels: {len(labels)} for {documents} documents")
    if integrated:
        alphas, weights = gauss_legendre(steps)
        alphas = alphas.to(embeddings.dtype).to(embeddings.device).view(-1, 1, *features)  # [steps, 1, 1, ..., 1]
        scaled = (alphas * embeddings).flatten(0, 1)  # [steps·D, ..., E]
        path = torch.cat([embeddings, torch.zeros_like(embeddings), scaled])  # [P·D, ..., E]
    else:
        path = embeddings.clone()  # [D, ..., E]
    rows = torch.tensor(list(labels), device=embeddings.device).repeat(path.shape[0] // documents)  # [P·D]
    with torch.enable_grad():
        path = path.requires_grad_(True)
        probability = inputs.forward(path).gather(1, rows[:, None])[:, 0]  # [P·D]
        (gradient,) = torch.autograd.grad(probability.sum(), path)  # [P·D, ..., E]
    gradient_x_input = inputs.to_units(gradient[:documents] * embeddings)  # D × [T_d]
    if not integrated:
        return [(GradientScores(scores.to(torch.float32)), None) for scores in gradient_x_input]
    step_sizes = weights.to(gradient.dtype).to(gradient.device).view(-1, 1, *features)  # [steps, 1, 1, ..., 1]
    along = gradient[2 * documents :].unflatten(0, (steps, documents))  # [steps, D, ..., E]
    attributions = (along * step_sizes).sum(0) * embeddings  # [D, ..., E]
    ends = probability.detach()[: 2 * documents].double().view(2, documents)  # p(x), p(0) per document
    totals = attributions.double().flatten(1).sum(1)  # [D]
    changes = ends[0] - ends[1]  # [D]
    deltas = (totals - changes).abs().tolist()  # [D]
    integrated_scores = inputs.to_units(attributions)  # D × [T_d]
    return [
        (GradientScores(gxi.to(torch.float32)), GradientScores(ig.to(torch.float32), delta, change))
        for gxi, ig, delta, change in zip(gradient_x_input, integrated_scores, deltas, changes.tolist(), strict=True)
    ]
