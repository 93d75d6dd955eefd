"""Gradient attributions on the input embeddings through Captum (an optional extra: ``pip install
'attnkit[faithfulness]'``): ``gradient_x_input`` (Shrikumar et al. 2016) and ``integrated_gradients`` (Sundararajan
et al. 2017) from an all-zero embedding (the padding row), with IG's convergence delta — how far the attributions'
sum is from ``f(x) - f(baseline)``, the completeness the method promises (layer 5).

Shape glossary:
    T  units   E  embedding features
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnkit.explain.faithfulness.subject import GradientInputs

__all__ = ["GradientScores", "gradient_x_input", "integrated_gradients"]


@dataclass
class GradientScores:
    """``scores [T]`` per unit; for IG also ``convergence_delta``: ``sum(attributions) - (f(x) - f(0))``."""

    scores: torch.Tensor
    convergence_delta: float | None = None


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
    return GradientScores(inputs.to_units(attributions.detach()).to(torch.float32), abs(delta))
