"""Scaled dot-product attention on PyTorch's fused kernel, with exact weights when asked.

The readable reference is ``Attention(ScaledDotScore(), Softmax())``: ``masked_softmax(q kᵀ/√Dh, mask) @ v``.
This module is its fast twin:

* no weights: ``F.scaled_dot_product_attention`` with the boolean mask (True = attend).
* weights, inference: the scores are written once into the output buffer and turned into weights in place,
  a few heads at a time so each block stays in cache (``baddbmm`` folds the scale and the mask in the
  matmul), then multiplied with ``v`` — close to SDPA's own time.
* weights, training: the plain autograd formula (``masked_softmax``), so gradients are exact.

Rows with nothing to attend to are normalised over an all-kept stand-in and then zeroed, so they give
zero context, zero weights and zero gradient on every PyTorch version and dtype.

Shape glossary:
    B  batch   H  heads   Tq  query positions   Tk  key positions   Dh  head features
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attnkit.functional._common import LOW_PRECISION
from attnkit.functional.softmax import masked_softmax

# Heads per block in the inference path: [block, Tq, Tk] float32 scores (4 x 512 x 512 = 4 MiB).
HEADS_PER_BLOCK = 4


def _guard_empty_rows(mask: torch.Tensor | None) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """Return ``(mask with empty rows opened up, has_key [.., Tq, 1])``; ``has_key`` is None if no row is empty."""
    if mask is None:
        return None, None
    has_key = mask.any(dim=-1, keepdim=True)
    if bool(has_key.all()):
        return mask, None
    return mask | ~has_key, has_key


def _weights_inference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None):
    """Blocked, in-place weights and context (no autograd). q ``[B, H, Tq, Dh]`` -> ``([B,H,Tq,Dh], [B,H,Tq,Tk])``."""
    batch, heads, tq, dh = q.shape
    tk = k.shape[2]
    n = batch * heads
    q_flat = (q * dh**-0.5).reshape(n, tq, dh)
    k_t = k.reshape(n, tk, dh).transpose(1, 2)  # [N, Dh, Tk]
    v_flat = v.reshape(n, tk, dh)
    bias = None
    if mask is not None:
        mask_rows = mask.shape[-2]  # 1 (key padding) or Tq
        bias = torch.zeros(mask.shape, dtype=q.dtype, device=q.device).masked_fill_(~mask, float("-inf"))
        bias = bias.expand(batch, heads, mask_rows, tk).reshape(n, mask_rows, tk)
    weights = torch.empty(n, tq, tk, dtype=q.dtype, device=q.device)
    context = torch.empty(n, tq, dh, dtype=q.dtype, device=q.device)
    for start in range(0, n, HEADS_PER_BLOCK):
        block = slice(start, start + HEADS_PER_BLOCK)
        scores = weights[block]  # [h, Tq, Tk] view into the output
        if bias is None:
            torch.bmm(q_flat[block], k_t[block], out=scores)
        else:
            torch.baddbmm(bias[block], q_flat[block], k_t[block], out=scores)
        torch.softmax(scores, dim=-1, out=scores)
        torch.bmm(scores, v_flat[block], out=context[block])
    return context.view(batch, heads, tq, dh), weights.view(batch, heads, tq, tk)


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    dropout: float = 0.0,
    need_weights: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``softmax(q kᵀ / √Dh)`` under ``mask``, times ``v``; the weights too if ``need_weights``.

    Args:
        q: ``[B, H, Tq, Dh]``; k, v: ``[B, H, Tk, Dh]``.
        mask: bool broadcastable to ``[B, H, Tq, Tk]``, True = attend.
        dropout: dropout probability on the weights (pass 0.0 in eval).
        need_weights: return the weights ``[B, H, Tq, Tk]`` (before dropout).

    Returns:
        ``(context [B, H, Tq, Dh], weights or None)``.
    """
    safe_mask, has_key = _guard_empty_rows(mask)
    if not need_weights:
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=safe_mask, dropout_p=dropout)
        return (context if has_key is None else context * has_key), None

    needs_grad = torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad)
    if needs_grad or dropout > 0 or q.dtype in LOW_PRECISION:
        weights = masked_softmax((q * q.shape[-1] ** -0.5) @ k.transpose(-1, -2), mask)  # [B, H, Tq, Tk]
        dropped = F.dropout(weights, dropout, training=dropout > 0)
        return dropped @ v.to(weights.dtype), weights
    context, weights = _weights_inference(q, k, v, safe_mask)
    if has_key is not None:
        context.mul_(has_key)
        weights.mul_(has_key)
    return context, weights
