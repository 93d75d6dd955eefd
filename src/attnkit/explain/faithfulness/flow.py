"""Attention flow (Abnar & Zuidema 2020): the maximum flow from each input token to the output through the
layers' attention graph, solved with ``scipy.sparse.csgraph.maximum_flow`` (layer 5).

The graph has one node per (layer, position): layer 0 is the input, layer ``l`` the output of encoder layer
``l``. An edge from ``(l-1, j)`` to ``(l, i)`` has capacity ``Â_l[i, j]``, the layer's heads-averaged attention
with the residual added and rows renormalised (as in :func:`~attnkit.explain.rollout.attention_rollout`). The
output node (the pooling) is reached from ``(L, i)`` with capacity ``w_i``, the pooling's weight. A token's flow
is the most that can pass from its input node to the output. scipy's solver takes integer capacities, so they
are scaled by ``SCALE`` and rounded (a resolution of 1e-6).

Shape glossary:
    L  layers   H  heads   T  positions
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

__all__ = ["SCALE", "attention_flow", "residual_attention"]

SCALE = 1_000_000


def residual_attention(weights: torch.Tensor) -> torch.Tensor:
    """One layer's ``[H, T, T]`` (or ``[T, T]``) weights -> ``rownorm(mean_h A + I)`` ``[T, T]`` float64."""
    layer = weights.to(torch.float64)
    layer = layer.mean(dim=0) if layer.dim() == 3 else layer  # [T, T]
    layer = layer + torch.eye(layer.shape[-1], dtype=torch.float64)
    return layer / layer.sum(dim=-1, keepdim=True)


def attention_flow(layer_weights: Sequence[torch.Tensor], output_weights: torch.Tensor) -> torch.Tensor:
    """The flow from every input position to the output.

    Args:
        layer_weights: one ``[H, T, T]`` (or ``[T, T]``) per layer, first layer first, over the real tokens only
            (one example, no padding).
        output_weights: ``[T]``, how the output reads the last layer (the pooling's weights; a one-hot row for a
            ``[CLS]`` token).

    Returns:
        ``[T]`` float64: each input token's maximum flow to the output (at most ``sum(output_weights)``).
    """
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
