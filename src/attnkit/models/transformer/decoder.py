"""The Transformer's decoder layer (layer 4): causal self-attention, cross-attention, feed-forward.

Cross-attention keys and values are projected once per source (:func:`project_memory`) and visited at every step
(:func:`attend_memory`); when decoding, :meth:`TransformerDecoderLayer.decode_token` takes one new position per row
through :class:`~attnkit.kv_cache.KVCache`. Used by :class:`~attnkit.models.transformer.seq2seq.TransformerSeq2Seq`.

Shape glossary:
    B  batch (N = B·beams rows when decoding)   S  source positions   T  target positions
    D  model size   H  heads   Dh  head size D/H
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from attnkit.kv_cache import KVCache
from attnkit.models.dropout import Dropout
from attnkit.models.encoders import feed_forward, residual
from attnkit.multihead import MultiHeadAttention
from attnkit.positions import RotaryPositions

__all__ = ["MemoryKV", "TransformerDecoderLayer", "attend_memory", "project_memory"]

MemoryKV = tuple[torch.Tensor, torch.Tensor]  # cross-attention keys and values [B, H, S, Dh]


def project_memory(attention: MultiHeadAttention, memory: torch.Tensor) -> MemoryKV:
    """Cross-attention keys and values of ``memory [B, S, D]``: ``([B, H, S, Dh], [B, H, S, Dh])``."""
    return attention.project_key_value(memory)


def attend_memory(
    attention: MultiHeadAttention,
    query: torch.Tensor,
    memory_kv: MemoryKV,
    memory_mask: torch.Tensor | None,
    *,
    need_weights: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``attention(query, memory, key_mask=memory_mask)`` with the keys and values already projected.

    query ``[B, Tq, D]``, memory_kv from :func:`project_memory`, memory_mask ``[B, S]`` bool (None: all real) ->
    ``(context [B, Tq, D], weights [B, H, Tq, S] or None)``.
    """
    out = attention(query, key_value=memory_kv, key_mask=memory_mask, need_weights=need_weights)
    return out.context, out.weights


class TransformerDecoderLayer(nn.Module):
    """Causal self-attention, cross-attention over the encoder's output, feed-forward; each with a residual.

    Options as :class:`~attnkit.models.encoders.TransformerEncoderLayer`'s; ``rotary`` applies to the
    self-attention only (cross-attention has no positions).
    """

    def __init__(
        self,
        dim: int,
        heads: int,
        *,
        ff_dim: int | None = None,
        dropout: float = 0.1,
        attention_dropout: float = 0.0,
        norm_first: bool = True,
        rotary: RotaryPositions | None = None,
    ) -> None:
        super().__init__()
        self.self_attention = MultiHeadAttention(dim, heads, dropout=attention_dropout, rotary=rotary)
        self.cross_attention = MultiHeadAttention(dim, heads, dropout=attention_dropout)
        self.feed_forward = feed_forward(dim, ff_dim, dropout)
        self.norm_self, self.norm_cross, self.norm_ff = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.dropout = Dropout(dropout)
        self.norm_first = norm_first

    def project_memory(self, memory: torch.Tensor) -> MemoryKV:
        """This layer's cross-attention keys and values of ``memory [B, S, D]`` (compute once per source)."""
        return project_memory(self.cross_attention, memory)

    def forward(
        self,
        x: torch.Tensor,
        memory_kv: MemoryKV,
        memory_mask: torch.Tensor | None,
        *,
        cache: KVCache | None = None,
        need_weights: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """x ``[B, T, D]`` -> ``(x [B, T, D], self weights [B, H, T, T'] , cross weights [B, H, T, S])``.

        With ``cache``, ``x`` holds the new steps only and self-attention runs over every cached step
        (``T' = cached + T``); the weights are None unless ``need_weights``.
        """

        weights: dict[str, torch.Tensor | None] = {}

        def self_attend(h: torch.Tensor) -> torch.Tensor:
            out = self.self_attention(h, causal=True, cache=cache, need_weights=need_weights)
            weights["self"] = out.weights
            return out.context

        def cross_attend(h: torch.Tensor) -> torch.Tensor:
            context, weights["cross"] = attend_memory(
                self.cross_attention, h, memory_kv, memory_mask, need_weights=need_weights
            )
            return context

        x = self._residual_blocks(x, self_attend, cross_attend)
        return x, weights["self"], weights["cross"]

    def decode_token(
        self, x: torch.Tensor, memory_kv: MemoryKV, memory_mask: torch.Tensor | None, cache: KVCache
    ) -> torch.Tensor:
        """One new target position per row, for inference: x ``[N, D]`` -> ``[N, D]``, appending to ``cache``.

        The values of ``self(x[:, None], memory_kv, memory_mask, cache=cache)[0][:, 0]`` (the tests hold them
        equal) through :meth:`MultiHeadAttention.decode_self` and :meth:`~MultiHeadAttention.decode_cross`, which
        skip the general path's checks and mask building. memory_mask: ``[N, S]`` bool, or None when every source
        position is real.
        """

        def self_attend(h: torch.Tensor) -> torch.Tensor:
            return self.self_attention.decode_self(h, cache)

        def cross_attend(h: torch.Tensor) -> torch.Tensor:
            return self.cross_attention.decode_cross(h, memory_kv, memory_mask)

        return self._residual_blocks(x, self_attend, cross_attend)

    def _residual_blocks(
        self,
        x: torch.Tensor,
        self_attend: Callable[[torch.Tensor], torch.Tensor],
        cross_attend: Callable[[torch.Tensor], torch.Tensor],
    ) -> torch.Tensor:
        """The three residual blocks around ``self_attend``, ``cross_attend`` and the feed-forward, pre- or
        post-norm: x ``[..., D]`` -> ``[..., D]``."""
        x = residual(x, self_attend, self.norm_self, self.dropout, self.norm_first)
        x = residual(x, cross_attend, self.norm_cross, self.dropout, self.norm_first)
        return residual(x, self.feed_forward, self.norm_ff, self.dropout, self.norm_first)
