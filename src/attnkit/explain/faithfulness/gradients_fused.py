"""``gradient_x_input`` and ``integrated_gradients`` of one prediction from one forward and one backward (layer 5):
the fast path of :mod:`~attnkit.explain.faithfulness.gradients`, which runs them through Captum one method at a
time (and stays the readable reference: ``tests/explain/test_faithfulness_gradients_fused.py`` compares the two).

One batch holds the embeddings themselves (gradient × input's point, and IG's path end), the zero baseline (IG's
path start, for the convergence delta) and IG's ``steps`` Gauss-Legendre points ``α_i x`` — Captum's default rule,
the same nodes and weights (``numpy.polynomial.legendre.leggauss`` rescaled to [0, 1]). The rows do not interact
(the model runs in eval mode), so one backward of the sum of their ``p(label)`` gives each row its own gradient:

    gradient × input = ∇p(x) · x        IG = x · Σ_i w_i ∇p(α_i x)        delta = |Σ IG - (p(x) - p(0))|

Captum is not imported here: its import pulls in matplotlib's pyplot (about a second and a half of CPU).

Shape glossary:
    T  units   E  embedding features   P  rows of the batch (2 + steps)
"""

from __future__ import annotations

import torch

from attnkit.explain.faithfulness.gradients import GradientScores
from attnkit.explain.faithfulness.subject import GradientInputs

__all__ = ["fused_gradients", "gauss_legendre"]


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
    embeddings = inputs.embeddings.detach()  # [1, ..., E]
    features = (1,) * (embeddings.dim() - 1)
    if integrated:
        alphas, weights = gauss_legendre(steps)
        scaled = alphas.to(embeddings.dtype).to(embeddings.device).view(-1, *features) * embeddings  # [steps, ..., E]
        path = torch.cat([embeddings, torch.zeros_like(embeddings), scaled])  # [P, ..., E]
    else:
        path = embeddings.clone()  # [1, ..., E]
    with torch.enable_grad():
        path = path.requires_grad_(True)
        probability = inputs.forward(path)[:, label]  # [P]
        (gradient,) = torch.autograd.grad(probability.sum(), path)  # [P, ..., E]
    gradient_x_input = GradientScores(inputs.to_units(gradient[:1] * embeddings).to(torch.float32))
    if not integrated:
        return gradient_x_input, None
    step_sizes = weights.to(gradient.dtype).to(gradient.device).view(-1, *features)  # [steps, 1, ..., 1]
    attributions = (gradient[2:] * step_sizes).sum(0, keepdim=True) * embeddings  # [1, ..., E]
    ends = probability.detach()[:2].double()  # p(x), p(0)
    delta = float(attributions.double().sum() - (ends[0] - ends[1]))
    ig = GradientScores(inputs.to_units(attributions).to(torch.float32), abs(delta))
    return gradient_x_input, ig
