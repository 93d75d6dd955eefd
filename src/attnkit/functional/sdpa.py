"""Scaled dot-product attention on PyTorch's fused kernel, with exact weights when asked.

The readable reference is ``Attention(ScaledDotScore(), Softmax())``: ``masked_softmax(q kᵀ/√Dh, mask) @ v``.
This module is its fast twin:

* no weights: ``F.scaled_dot_product_attention`` with the boolean mask (True = attend).
* weights, inference: the scores are written once into the output buffer and turned into weights in place,
  a few heads at a time so each block stays in cache (``baddbmm`` folds the scale and the mask in the
  matmul), then multiplied with ``v``. Faulting in the fresh ``[B, H, Tq, Tk]`` buffer is a large part of the
  call; ``THP_MEM_ALLOC_ENABLE=1`` backs it with huge pages (``docs/benchmarks.md``).
* weights, training (or half precision, or traced by ``torch.compile``): ``masked_softmax``'s formula through
  autograd, so gradients are exact, with the mask folded into the score matmul (``baddbmm``).

Rows with nothing to attend to are normalised over an all-kept stand-in and then zeroed, so they give
zero context, zero weights and zero gradient on every PyTorch version and dtype. This is branch-free (no value
read back to the host, no device synchronisation) on accelerators and traces into one graph under
``torch.compile``; eager on the CPU, a mask without empty rows skips the guard (same values and gradients).

Shape glossary:
    B  batch   H  heads   Tq  query positions   Tk  key positions   Dh  head features
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attnkit.functional._common import LOW_PRECISION, compute_dtype, guard_empty_rows

# Heads per block in the inference path: [block, Tq, Tk] float32 scores (2 x 512 x 512 = 2 MiB, in L2 per core).
HEADS_PER_BLOCK = 2


def _additive_mask(mask: torch.Tensor | None, bias: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """The float mask added to the scores: ``bias`` (or 0) where ``mask`` is True, ``-inf`` where it is False."""
    if mask is None:
        return None if bias is None else bias.to(dtype)
    base = torch.zeros((), dtype=dtype, device=mask.device) if bias is None else bias.to(dtype)
    return base.where(mask, float("-inf"))  # broadcast to the shapes of both


def _per_head(t: torch.Tensor, batch: int, heads: int) -> torch.Tensor:
    """``t`` broadcastable to ``[B, H, R, X]`` (``R`` 1 or Tq) as ``[B·H, R, X]`` (a copy only where broadcast)."""
    return t.expand(batch, heads, *t.shape[-2:]).reshape(batch * heads, *t.shape[-2:])


def _weights_inference(q, k, v, additive: torch.Tensor | None, has_key: torch.Tensor | None):
    """Blocked, in-place weights and context (no autograd): q ``[B, H, Tq, Dh]``, k, v ``[B, H, Tk, Dh]``, the
    additive mask broadcastable to ``[B, H, Tq, Tk]``, ``has_key [.., Tq|1, 1]`` (empty rows: zeroed in the block,
    while it is in cache) -> ``(context [B, H, Tq, Dh], weights [B, H, Tq, Tk])``."""
    batch, heads, tq, dh = q.shape
    tk = k.shape[2]
    n = batch * heads
    q_flat = q.reshape(n, tq, dh)
    k_t = k.reshape(n, tk, dh).transpose(1, 2)  # [N, Dh, Tk]
    v_flat = v.reshape(n, tk, dh)
    additive = None if additive is None else _per_head(additive, batch, heads)  # [N, 1|Tq, Tk]
    keep = None if has_key is None else _per_head(has_key.to(q.dtype), batch, heads)  # [N, 1|Tq, 1]
    weights = torch.empty(n, tq, tk, dtype=q.dtype, device=q.device)  # [N, Tq, Tk]
    context = torch.empty(n, tq, dh, dtype=q.dtype, device=q.device)  # [N, Tq, Dh]
    for start in range(0, n, HEADS_PER_BLOCK):
        block = slice(start, start + HEADS_PER_BLOCK)
        scores = weights[block]  # [h, Tq, Tk] view into the output: scale·q kᵀ + mask bias, written once
        if additive is None:
            torch.baddbmm(scores, q_flat[block], k_t[block], beta=0.0, alpha=dh**-0.5, out=scores)
        else:
            torch.baddbmm(additive[block], q_flat[block], k_t[block], alpha=dh**-0.5, out=scores)
        torch.softmax(scores, dim=-1, out=scores)
        if keep is not None:
            scores.mul_(keep[block])  # empty rows: zero weights, hence zero context
        torch.bmm(scores, v_flat[block], out=context[block])
    return context.view(batch, heads, tq, dh), weights.view(batch, heads, tq, tk)


def _weights_autograd(q, k, v, additive: torch.Tensor | None, has_key: torch.Tensor | None, dropout: float):
    """``masked_softmax``'s weights through autograd, the mask folded into the score matmul (``baddbmm``), so the
    zeroing of empty rows costs no extra pass over the scores -> ``(context [B, H, Tq, Dh], weights [B, H, Tq, Tk])``.
    Half precision: scores in it, softmax in float32, weights returned in it."""
    batch, heads, tq, dh = q.shape
    tk = k.shape[2]
    q_flat, k_t = q.reshape(batch * heads, tq, dh), k.reshape(batch * heads, tk, dh).transpose(1, 2)
    if additive is None:
        scores = torch.bmm(q_flat * dh**-0.5, k_t)  # [N, Tq, Tk]
    else:
        scores = torch.baddbmm(_per_head(additive, batch, heads), q_flat, k_t, alpha=dh**-0.5)
    weights = torch.softmax(scores.view(batch, heads, tq, tk), dim=-1, dtype=compute_dtype(q.dtype))
    if has_key is not None:
        weights = weights.masked_fill(~has_key, 0.0)  # empty rows: zero weights and zero gradient
    weights = weights.to(q.dtype)
    return F.dropout(weights, dropout, training=dropout > 0) @ v.to(weights.dtype), weights


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    bias: torch.Tensor | None = None,
    dropout: float = 0.0,
    need_weights: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``softmax(q kᵀ / √Dh + bias)`` under ``mask``, times ``v``: q ``[B, H, Tq, Dh]``, k, v ``[B, H, Tk, Dh]``
    -> ``(context [B, H, Tq, Dh], weights [B, H, Tq, Tk] before dropout, or None without need_weights)``.

    ``mask`` (True = attend) and ``bias`` (finite float, added to the scores; block with ``mask``) broadcast to
    ``[B, H, Tq, Tk]``. Pass ``dropout=0.0`` in eval.
    """
    safe_mask, has_key = guard_empty_rows(mask)
    if not need_weights:
        attn_mask = safe_mask if bias is None else _additive_mask(safe_mask, bias, q.dtype)
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout)
        if has_key is None:
            return context, None
        return (context * has_key if context.requires_grad else context.mul_(has_key)), None
    additive = _additive_mask(safe_mask, bias, q.dtype)
    needs_grad = torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad)
    if needs_grad or dropout > 0 or q.dtype in LOW_PRECISION or torch.compiler.is_compiling():
        return _weights_autograd(q, k, v, additive, has_key, dropout)
    return _weights_inference(q, k, v, additive, has_key)
