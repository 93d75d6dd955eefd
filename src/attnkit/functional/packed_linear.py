"""Linear maps over one storage and over selected rows (layer 2 helpers of :class:`attnkit.MultiHeadAttention`).

* :func:`packed_linear`: ``F.linear(x, cat(weights), cat(biases))`` for weights that lie back to back in one
  storage, read in place: no ``torch.cat`` of the weights in forward, no split of their gradient in backward.
* :func:`packed_view`: that storage as one ``[P, Din]`` view, or None when the parts are not packed.
* :func:`gather_rows` / ``on_rows``: a row-wise map on the kept rows of ``[B, T, D]`` only (zeros elsewhere), with
  a copy rather than a scatter-add in backward.

Written by hand because torch has no linear over a list of weights without concatenating them, and autograd's
``index_select`` backward is a scatter-add several times slower on CPU than the copy that distinct rows allow.

Shape glossary:
    B  batch   T  positions   Din / Dout  features in / out   N  rows kept   P  output rows of the packed weights
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

__all__ = ["gather_rows", "on_rows", "packed_linear", "packed_view"]


class _GatherRows(torch.autograd.Function):
    """``x.index_select(0, index)`` for *distinct* indices, whose backward is a plain copy (``index_copy``)
    instead of autograd's generic ``index_add`` — a scatter-add several times slower on CPU."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(index)
        ctx.rows = x.shape[0]
        return x.index_select(0, index)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (index,) = ctx.saved_tensors
        return grad.new_zeros(ctx.rows, *grad.shape[1:]).index_copy_(0, index, grad), None


def gather_rows(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Rows ``index [N]`` (distinct) of ``x [R, D]`` -> ``[N, D]``, with a copy (not a scatter-add) for backward."""
    return _GatherRows.apply(x, index)


def on_rows(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, rows: torch.Tensor | None) -> torch.Tensor:
    """A row-wise ``fn`` on the rows of x ``[B, T, Din]`` where ``rows [B, T]`` is True, zeros elsewhere -> ``[B, T, Dout]``.

    The packed fast path: skipped rows cost no matmul work. ``rows=None`` (or every row kept) is plain ``fn(x)``.
    """
    if rows is None:
        return fn(x)
    flat = x.reshape(-1, x.shape[-1])  # [B·T, Din]
    index = rows.reshape(-1).nonzero().squeeze(1)  # [N] kept rows
    if index.numel() == flat.shape[0]:
        return fn(x)
    packed = fn(gather_rows(flat, index))  # [N, Dout]
    out = packed.new_zeros(flat.shape[0], packed.shape[-1]).index_copy(0, index, packed)
    return out.view(*x.shape[:-1], packed.shape[-1])


def packed_view(parts: Sequence[torch.Tensor]) -> torch.Tensor | None:
    """``torch.cat(parts)`` as a view, without a copy, if the parts lie back to back in one storage; else None.

    The view is detached: gradients are :class:`_PackedLinear`'s business.
    """
    first = parts[0]
    expected = first.data_ptr()
    for part in parts:
        if (
            part.data_ptr() != expected
            or not part.is_contiguous()
            or part.dtype != first.dtype
            or part.device != first.device
            or part.shape[1:] != first.shape[1:]
        ):
            return None
        expected += part.numel() * part.element_size()
    needed = expected - first.data_ptr() + first.storage_offset() * first.element_size()
    if first.untyped_storage().nbytes() < needed:  # adjacent in memory but not one storage
        return None
    rows = sum(part.shape[0] for part in parts)
    return first.detach().as_strided((rows, *first.shape[1:]), first.stride(), first.storage_offset())


class _PackedLinear(torch.autograd.Function):
    """``F.linear(x, cat(weights), cat(biases))`` for weights (and biases) that lie back to back in one storage.

    ``weight`` and ``bias`` are their :func:`packed_view`: forward multiplies by it in place; backward computes one
    ``[P, Din]`` weight gradient and hands each part its rows (views): no ``torch.cat`` in either direction. The
    parts are saved individually, so an in-place change to any of them before backward raises as it would for
    ``F.linear``. Under autocast, forward's ``F.linear`` runs in the autocast dtype and backward computes in the
    gradient's dtype, as autocast's own linear does (autograd casts each gradient to its input's dtype).
    """

    @staticmethod
    def forward(
        ctx, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, *params: torch.Tensor
    ) -> torch.Tensor:
        parts = len(params) // 2 if bias is not None else len(params)
        ctx.save_for_backward(x, *params[:parts])
        ctx.has_bias, ctx.sizes = bias is not None, [w.shape[0] for w in params[:parts]]
        return F.linear(x, weight, bias)  # [..., P]

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor):
        x, *weights = ctx.saved_tensors
        parts = len(weights)
        needs = ctx.needs_input_grad
        grad_x = grad_weights = grad_biases = None
        dtype = grad.dtype  # the weights' own, or autocast's
        if needs[0]:
            weight = packed_view(weights)
            grad_x = grad @ (torch.cat(weights) if weight is None else weight).to(dtype)  # [..., Din]
        flat = grad.reshape(-1, grad.shape[-1])  # [M, P]
        if any(needs[3 : 3 + parts]):
            grad_weights = (flat.t() @ x.reshape(-1, x.shape[-1]).to(dtype)).split(ctx.sizes)  # P x [., Din]
        if ctx.has_bias and any(needs[3 + parts :]):
            grad_biases = flat.sum(0).split(ctx.sizes)
        grad_weights = grad_weights or (None,) * parts
        grad_biases = grad_biases or (None,) * (parts if ctx.has_bias else 0)
        return (grad_x, None, None, *grad_weights, *grad_biases)


def packed_linear(
    x: torch.Tensor,
    weights: Sequence[torch.Tensor],
    biases: Sequence[torch.Tensor] | None = None,
    packed: tuple[torch.Tensor | None, torch.Tensor | None] | None = None,
) -> torch.Tensor:
    """``F.linear(x, torch.cat(weights), torch.cat(biases))`` -> ``[..., P]``, reading the weights in place when
    they are packed and falling back to the concatenation otherwise.

    ``packed``: their ``(packed_view(weights), packed_view(biases))`` if the caller keeps them (see
    :func:`packed_view`; None where not packed).
    """
    if packed is None:
        packed = packed_view(weights), None if biases is None else packed_view(biases)
    weight, bias = packed
    if weight is None or (biases is not None and bias is None):
        return F.linear(x, torch.cat(weights), None if biases is None else torch.cat(biases))
    params = [*weights, *(biases or ())]
    if torch.is_grad_enabled() and (x.requires_grad or any(t.requires_grad for t in params)):
        return _PackedLinear.apply(x, weight, bias, *params)
    return F.linear(x, weight, bias)
