"""Multi-head attention (layer 3): self- and cross-attention, causal masks, rotary positions, a KV cache.

With the default scaled-dot score and softmax, the context comes from ``F.scaled_dot_product_attention``
and, when ``need_weights=True``, the exact per-head weights are computed alongside (see
:mod:`attnkit.functional.sdpa`). Any other score or distribution runs the generic, readable path
``distribution(score(q, k), mask) @ v`` — also the reference the fast path is tested against (set
``module.fast_path = False`` to force it).

Shape glossary:
    B  batch   H  heads   Tq  query positions   Tk  key positions (including cached ones)
    E  embed_dim   Dh  head_dim = E / H
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attnkit import masks
from attnkit.distributions import Distribution, Softmax
from attnkit.functional.sdpa import scaled_dot_product_attention
from attnkit.kv_cache import KVCache
from attnkit.outputs import AttentionOutput
from attnkit.positions import RotaryPositions
from attnkit.scores import ScaledDotScore, Score

__all__ = ["MultiHeadAttention"]


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


def _linear_rows(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, rows: torch.Tensor | None
) -> torch.Tensor:
    """``F.linear`` on the rows where ``rows`` is True, zeros elsewhere: x ``[B, T, Din]``, rows ``[B, T]`` -> ``[B, T, Dout]``.

    The packed fast path: padded rows cost no matmul work. ``rows=None`` is plain ``F.linear``.
    """
    if rows is None:
        return F.linear(x, weight, bias)
    flat = x.reshape(-1, x.shape[-1])  # [B·T, Din]
    index = rows.reshape(-1).nonzero().squeeze(1)  # [N] real rows
    packed = F.linear(gather_rows(flat, index), weight, bias)  # [N, Dout]
    out = flat.new_zeros(flat.shape[0], weight.shape[0]).index_copy(0, index, packed)
    return out.view(*x.shape[:-1], weight.shape[0])


class MultiHeadAttention(nn.Module):
    """Multi-head attention with one mask polarity (True = attend) and batch-first tensors.

    Args:
        embed_dim: ``E``, query (and output) size.
        num_heads: ``H``; must divide ``E``.
        kdim, vdim: key and value input sizes (default ``E``).
        dropout: dropout on the attention weights (training only).
        bias: biases on the input and output projections.
        score: a :class:`~attnkit.scores.Score` on ``[B, H, T, Dh]`` tensors (default :class:`ScaledDotScore`).
        distribution: a :class:`~attnkit.distributions.Distribution` (default :class:`Softmax`).
        rotary: optional :class:`~attnkit.positions.RotaryPositions` applied to queries and keys.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        *,
        kdim: int | None = None,
        vdim: int | None = None,
        dropout: float = 0.0,
        bias: bool = True,
        score: Score | None = None,
        distribution: Distribution | None = None,
        rotary: RotaryPositions | None = None,
    ) -> None:
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim={embed_dim} is not divisible by num_heads={num_heads}")
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = nn.Linear(kdim or embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(vdim or embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.dropout = dropout
        self.score = score if score is not None else ScaledDotScore()
        self.distribution = distribution if distribution is not None else Softmax()
        self.rotary = rotary
        self._same_input_dims = (kdim or embed_dim) == embed_dim and (vdim or embed_dim) == embed_dim
        # The SDPA path computes exactly ScaledDotScore + Softmax; anything else takes the generic path.
        self.fast_path = type(self.score) is ScaledDotScore and type(self.distribution) is Softmax

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, _ = x.shape
        return x.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)  # [B, H, T, Dh]

    def project_key_value(
        self, key: torch.Tensor, value: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values split into heads: key ``[B, Tk, kdim]``, value ``[B, Tk, vdim]`` -> two ``[B, H, Tk, Dh]``.

        Compute them once and pass them as ``key_value=`` to attend to the same memory many times.
        """
        value = key if value is None else value
        return self._split_heads(self.k_proj(key)), self._split_heads(self.v_proj(value))

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor | None = None,
        value: torch.Tensor | None = None,
        *,
        key_mask: torch.Tensor | None = None,
        query_mask: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
        causal: bool = False,
        need_weights: bool = False,
        cache: KVCache | None = None,
        key_value: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> AttentionOutput:
        """Attend from ``query`` over ``key``/``value`` (self-attention when ``key`` is ``None``).

        Args:
            query: ``[B, Tq, E]``.
            key: ``[B, Tk, kdim]``; ``None`` for self-attention (then ``value`` must be ``None`` too).
            value: ``[B, Tk, vdim]``; defaults to ``key``.
            key_mask: ``[B, Tk]`` bool, True where the key is real (with a cache: all steps held after this one).
            query_mask: ``[B, Tq]`` bool, True where the query is real. Masked queries get a zero output and zero
                weights, and their rows are skipped by the projections (the packed fast path: padding costs
                no matmul work there).
            attn_mask: bool broadcastable to ``[B, H, Tq, Tk]``, True = attend.
            causal: add :func:`attnkit.masks.causal` (bottom-right aligned, right with a cache).
            need_weights: also return the exact weights ``[B, H, Tq, Tk]``.
            cache: a :class:`KVCache` (self-attention only): this step's keys and values are appended and
                attention runs over everything held.
            key_value: keys and values already projected by :meth:`project_key_value` (cross-attention to a
                memory that many queries visit, e.g. a decoder's source); ``key`` and ``value`` must be None.

        Returns:
            ``AttentionOutput(context [B, Tq, E], weights [B, H, Tq, Tk] or None)``.
        """
        if query.dim() != 3 or query.shape[-1] != self.embed_dim:
            raise ValueError(f"query must have shape [B, Tq, E={self.embed_dim}], got {tuple(query.shape)}")
        if key_value is not None:
            if key is not None or value is not None or cache is not None:
                raise ValueError("key_value= replaces key, value and cache: pass none of them with it")
            if self.rotary is not None:
                raise ValueError("key_value= is for cross-attention; this module rotates keys (rotary=)")
        elif key is None:
            if value is not None:
                raise ValueError("value given without key: pass both for cross-attention, neither for self-attention")
            key = value = query
        elif cache is not None:
            raise ValueError("cache= is for self-attention (key=None); cross-attention keys do not grow")
        value = key if value is None else value

        if query_mask is not None and masks.as_bool_mask(query_mask, "query_mask").shape != query.shape[:2]:
            raise ValueError(
                f"query_mask must have shape [B, Tq] = {tuple(query.shape[:2])}, got {tuple(query_mask.shape)}"
            )
        offset = cache.size if cache is not None else 0
        if key_value is not None:
            q = self._split_heads(_linear_rows(query, self.q_proj.weight, self.q_proj.bias, query_mask))
            k, v = key_value
        elif key is query and value is query and self._same_input_dims:
            # self-attention: one [B·T, E] x [E, 3E] matmul, and one gradient for the input instead of three;
            # with both masks, only rows that are a real query or a real key are projected
            weight = torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight])
            bias = (
                None if self.q_proj.bias is None else torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias])
            )
            rows = query_mask | key_mask if query_mask is not None and key_mask is not None and cache is None else None
            q, k, v = (self._split_heads(t) for t in _linear_rows(query, weight, bias, rows).chunk(3, dim=-1))
        else:
            q = self._split_heads(_linear_rows(query, self.q_proj.weight, self.q_proj.bias, query_mask))
            k, v = self.project_key_value(key, value)  # [B, H, Tk, Dh]
        if self.rotary is not None:
            q, k = self.rotary(q, offset=offset), self.rotary(k, offset=offset)
        if cache is not None:
            k, v = cache.update(k, v)  # [B, H, offset + Tq, Dh]

        batch, tq, tk = query.shape[0], q.shape[2], k.shape[2]
        scores_shape = (batch, self.num_heads, tq, tk)
        causal_mask = masks.causal(tq, tk, device=query.device) if causal else None
        mask = masks.attention_mask(scores_shape, key_mask=key_mask, attn_mask=masks.combine(attn_mask, causal_mask))
        dropout = self.dropout if self.training else 0.0
        if self.fast_path:
            context, weights = scaled_dot_product_attention(q, k, v, mask, dropout=dropout, need_weights=need_weights)
        else:
            weights = self.distribution(self.score(q, k), mask, query=q)  # [B, H, Tq, Tk]
            context = F.dropout(weights, dropout, training=dropout > 0) @ v.to(weights.dtype)
        context = context.transpose(1, 2).reshape(batch, tq, self.embed_dim)  # [B, Tq, E]
        output = _linear_rows(context.to(query.dtype), self.out_proj.weight, self.out_proj.bias, query_mask)
        if need_weights and query_mask is not None:
            weights = weights * query_mask[:, None, :, None]
        return AttentionOutput(output, weights if need_weights else None)

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> MultiHeadAttention:
        """Copy an ``nn.MultiheadAttention``'s weights so both give the same outputs.

        Remember the polarity flip: torch's ``key_padding_mask`` is True at *padding*; pass ``key_mask=~it``.
        attnkit is always batch-first. ``add_bias_kv`` and ``add_zero_attn`` are not supported.
        """
        if module.bias_k is not None or module.add_zero_attn:
            raise ValueError("from_torch does not support add_bias_kv or add_zero_attn")
        has_bias = module.in_proj_bias is not None
        new = cls(
            module.embed_dim,
            module.num_heads,
            kdim=module.kdim,
            vdim=module.vdim,
            dropout=module.dropout,
            bias=has_bias,
        )
        with torch.no_grad():
            if module._qkv_same_embed_dim:
                weights = module.in_proj_weight.chunk(3)
            else:
                weights = (module.q_proj_weight, module.k_proj_weight, module.v_proj_weight)
            biases = module.in_proj_bias.chunk(3) if has_bias else (None, None, None)
            for proj, weight, bias in zip((new.q_proj, new.k_proj, new.v_proj), weights, biases, strict=True):
                proj.weight.copy_(weight)
                if bias is not None:
                    proj.bias.copy_(bias)
            new.out_proj.weight.copy_(module.out_proj.weight)
            if has_bias:
                new.out_proj.bias.copy_(module.out_proj.bias)
        return new.to(module.out_proj.weight.device, module.out_proj.weight.dtype)
