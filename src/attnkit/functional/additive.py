"""Additive (Bahdanau / concat) scores ``s[q, k] = vᵀ tanh(Wq[q] + Uk[k])`` without the 4-D tensor.

The naive broadcast builds ``tanh(Wq[:, :, None] + Uk[:, None])`` of shape ``[N, Tq, Tk, Dh]`` and autograd
keeps it for backward: at N=8, Tq=Tk=512, Dh=256 that is 2 GiB per copy. :func:`additive_scores` walks over
blocks of query rows, keeps only the ``[N, Tq, Tk]`` scores, and recomputes each block's ``tanh`` in
backward (a custom ``autograd.Function``), so peak memory grows as N·Tq·Tk plus one fixed-size block. The
blocks are sized to stay in cache, which also makes it faster than the naive version on a CPU.

Shape glossary:
    N   flattened leading dims (batch, heads)     Tq  query positions
    Tk  key positions                             Dh  hidden size of the additive score
"""

from __future__ import annotations

import torch

# Elements of one [n, rows, Tk, Dh] block: 2^18 floats = 1 MiB in float32, which stays in L2 cache.
BLOCK_ELEMENTS = 1 << 18


def _blocks(n: int, tq: int, tk: int, dh: int, block_elements: int):
    """Yield ``(batch slice, query-row slice)`` pairs covering ``[n, tq]``, each block about ``block_elements``."""
    per_row = max(tk * dh, 1)
    rows = max(1, min(tq, block_elements // per_row))
    batches = max(1, min(n, block_elements // (per_row * rows))) if rows == tq else 1
    for b0 in range(0, n, batches):
        for q0 in range(0, tq, rows):
            yield slice(b0, b0 + batches), slice(q0, q0 + rows)


def _tanh_blocks(wq: torch.Tensor, uk: torch.Tensor, block_elements: int):
    """Yield ``(batch slice, query-row slice, tanh(wq + uk) [n, rows, Tk, Dh])`` block by block, each block written
    into one reused buffer (so it is only valid until the next one)."""
    (n, tq, dh), tk = wq.shape, uk.shape[1]
    buffer = wq.new_empty(block_elements + tk * dh)
    for bs, qs in _blocks(n, tq, tk, dh, block_elements):
        wq_block, uk_block = wq[bs, qs, None, :], uk[bs, None, :, :]
        shape = (wq_block.shape[0], wq_block.shape[1], tk, dh)
        hidden = buffer[: shape[0] * shape[1] * tk * dh].view(shape)  # [n, rows, Tk, Dh]
        yield bs, qs, torch.add(wq_block, uk_block, out=hidden).tanh_()


class _AdditiveScores(torch.autograd.Function):
    @staticmethod
    def forward(ctx, wq: torch.Tensor, uk: torch.Tensor, v: torch.Tensor, block_elements: int) -> torch.Tensor:
        scores = wq.new_empty(wq.shape[0], wq.shape[1], uk.shape[1])  # [N, Tq, Tk]
        for bs, qs, hidden in _tanh_blocks(wq, uk, block_elements):
            scores[bs, qs] = hidden @ v  # [n, rows, Tk]
        ctx.save_for_backward(wq, uk, v)
        ctx.block_elements = block_elements
        return scores

    @staticmethod
    def backward(ctx, grad_scores: torch.Tensor):
        wq, uk, v = ctx.saved_tensors
        dh = wq.shape[-1]
        grad_scores = grad_scores.contiguous()
        need_wq, need_uk, need_v = ctx.needs_input_grad[:3]
        grad_wq = torch.zeros_like(wq) if need_wq else None
        grad_uk = torch.zeros_like(uk) if need_uk else None
        grad_v = torch.zeros_like(v) if need_v else None
        for bs, qs, hidden in _tanh_blocks(wq, uk, ctx.block_elements):  # recomputed, not stored
            grad_block = grad_scores[bs, qs]  # [n, rows, Tk]
            if need_v:
                grad_v += grad_block.reshape(1, -1).mm(hidden.view(-1, dh)).view(dh)
            # d pre-activation = g · v · (1 - tanh²), in place
            hidden.mul_(hidden).neg_().add_(1).mul_(grad_block[..., None]).mul_(v)
            if need_wq:
                grad_wq[bs, qs] = hidden.sum(dim=2)
            if need_uk:
                grad_uk[bs] += hidden.sum(dim=1)
        return grad_wq, grad_uk, grad_v, None


def additive_scores(
    wq: torch.Tensor, uk: torch.Tensor, v: torch.Tensor, *, block_elements: int = BLOCK_ELEMENTS
) -> torch.Tensor:
    """``scores[..., q, k] = v · tanh(wq[..., q, :] + uk[..., k, :])``, computed block by block: projected queries
    wq ``[..., Tq, Dh]``, projected keys uk ``[..., Tk, Dh]`` (leading dims broadcast), v ``[Dh]`` -> ``[..., Tq, Tk]``.

    Peak extra memory is one block of ``block_elements`` (tune it for the cache, not for correctness).
    """
    if wq.shape[-1] != uk.shape[-1] or v.shape != (wq.shape[-1],):
        raise ValueError(
            f"additive_scores needs wq [..., Tq, Dh], uk [..., Tk, Dh], v [Dh]; got wq {tuple(wq.shape)}, "
            f"uk {tuple(uk.shape)}, v {tuple(v.shape)}"
        )
    lead = torch.broadcast_shapes(wq.shape[:-2], uk.shape[:-2])
    tq, tk, dh = wq.shape[-2], uk.shape[-2], wq.shape[-1]
    dtype = torch.promote_types(torch.promote_types(wq.dtype, uk.dtype), v.dtype)
    wq_flat = wq.to(dtype).expand(*lead, tq, dh).reshape(-1, tq, dh)  # [N, Tq, Dh]
    uk_flat = uk.to(dtype).expand(*lead, tk, dh).reshape(-1, tk, dh)  # [N, Tk, Dh]
    scores = _AdditiveScores.apply(wq_flat.contiguous(), uk_flat.contiguous(), v.to(dtype), block_elements)
    return scores.view(*lead, tq, tk)


def additive_scores_reference(wq: torch.Tensor, uk: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The naive broadcast version (materialises ``[..., Tq, Tk, Dh]``): the readable reference."""
    return torch.tanh(wq[..., :, None, :] + uk[..., None, :, :]) @ v  # [..., Tq, Tk]
