"""Attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers").

Shape glossary:
    B  batch   L  layers   H  heads   T  positions (self-attention, so queries and keys are the same tokens)

Raw attention in a deep layer mixes tokens that have already been mixed below it. Rollout follows the mixing
down to the input: each layer's attention is averaged over heads, the residual connection is modelled by adding
the identity, rows are renormalised to sum to 1, and the layers are multiplied from the first to the last:

    Â_l = rownorm(mean_h A_l + I)                   # [B, T, T]
    R   = Â_L @ Â_{L-1} @ ... @ Â_1                  # [B, T, T]

``R[b, i, j]`` is how much input token ``j`` flows into position ``i`` after the last layer.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from attnkit import masks

__all__ = ["attention_rollout"]


def attention_rollout(layer_weights: Sequence[torch.Tensor], *, key_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Roll self-attention weights out through the layers: one ``[B, H, T, T]`` (or single-head ``[B, T, T]``)
    tensor per layer, first layer first -> ``[B, T, T]`` float32 (float64 for float64 inputs).

    ``key_mask`` is ``[B, T]`` bool, **True = real token** (Hugging Face's int ``attention_mask`` needs ``.bool()``).
    Every row of a real position sums to 1; rows and columns of padded positions are 0.
    """
    if len(layer_weights) == 0:
        raise ValueError("layer_weights: need at least one layer, got an empty sequence")
    layers = [_heads_averaged(w, index) for index, w in enumerate(layer_weights)]
    batch, positions, _ = layers[0].shape
    for index, layer in enumerate(layers):
        if layer.shape != layers[0].shape:
            raise ValueError(
                f"layer_weights[{index}]: shape {tuple(layer.shape)} differs from layer 0's "
                f"{tuple(layers[0].shape)} (after averaging heads)"
            )
    keep = _keep_mask(key_mask, batch, positions, device=layers[0].device)  # [B, T]
    keep = keep.to(layers[0].dtype)
    pair_keep = keep[:, :, None] * keep[:, None, :]  # [B, T, T]
    identity = torch.diag_embed(keep)  # [B, T, T], zero on padding

    rollout = None
    for layer in layers:
        residual = layer * pair_keep + identity  # [B, T, T]
        row_sums = residual.sum(dim=-1, keepdim=True)  # [B, T, 1]
        residual = residual / row_sums.clamp_min(torch.finfo(residual.dtype).tiny)
        rollout = residual if rollout is None else residual @ rollout  # [B, T, T]
    return rollout


def _heads_averaged(weights: torch.Tensor, index: int) -> torch.Tensor:
    """``[B, H, T, T]`` or ``[B, T, T]`` -> ``[B, T, T]`` in float32 or float64."""
    if weights.dim() == 3:
        weights = weights.unsqueeze(1)  # [B, 1, T, T]
    if weights.dim() != 4 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(
            f"layer_weights[{index}]: expected self-attention weights [B, H, T, T] or [B, T, T], "
            f"got shape {tuple(weights.shape)}"
        )
    dtype = torch.float64 if weights.dtype == torch.float64 else torch.float32
    return weights.to(dtype).mean(dim=1)  # [B, T, T]


def _keep_mask(key_mask: torch.Tensor | None, batch: int, positions: int, *, device) -> torch.Tensor:
    if key_mask is None:
        return torch.ones(batch, positions, dtype=torch.bool, device=device)
    masks.as_bool_mask(key_mask, "key_mask")
    if tuple(key_mask.shape) != (batch, positions):
        raise ValueError(
            f"key_mask: expected shape {(batch, positions)} to match the weights, got {tuple(key_mask.shape)}"
        )
    return key_mask.to(device)
