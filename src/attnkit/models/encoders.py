"""Sequence encoders that honour the mask: a packed bidirectional GRU and a Transformer encoder.

Both map ``x [B, T, D_in]`` and ``mask [B, T]`` (True = real token) to ``[B, T, D_out]``; outputs at padded
positions are zero for the GRU and never read by the attention that follows, and real positions do not
depend on how much padding there is.

Shape glossary:
    B  batch   T  positions   D_in  input features   D_out  output features
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from attnkit.multihead import MultiHeadAttention
from attnkit.positions import RotaryPositions, SinusoidalPositions

__all__ = ["BiGRUEncoder", "TransformerEncoder", "TransformerEncoderLayer", "feed_forward"]


class BiGRUEncoder(nn.Module):
    """Bidirectional GRU over packed sequences: the backward direction starts at each sequence's real end.

    Args:
        input_dim: ``D_in``.
        hidden_dim: per direction; ``output_dim = 2 · hidden_dim``.
        num_layers, dropout: as in ``nn.GRU``.
    """

    def __init__(self, input_dim: int, hidden_dim: int, *, num_layers: int = 1, dropout: float = 0.0) -> None:
        super().__init__()
        self.rnn = nn.GRU(
            input_dim,
            hidden_dim,
            num_layers=num_layers,
            dropout=dropout if num_layers > 1 else 0.0,
            batch_first=True,
            bidirectional=True,
        )
        self.output_dim = 2 * hidden_dim

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """x ``[B, T, D_in]``, mask ``[B, T]`` (a prefix of each row) -> ``[B, T, 2·hidden]``, zero at padding.

        Rows with no token are run as one zero step and zeroed, so empty sequences are safe.
        """
        if x.shape[0] == 0:  # nothing to encode (e.g. a batch of empty documents)
            return x.new_zeros(*x.shape[:2], self.output_dim)
        lengths = mask.sum(dim=1)
        packed = pack_padded_sequence(x, lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])  # [B, T, 2·hidden]
        return out * mask[..., None].to(out.dtype)


def feed_forward(dim: int, ff_dim: int | None, dropout: float) -> nn.Sequential:
    """The Transformer's position-wise block: ``Linear(D, F) -> GELU -> Dropout -> Linear(F, D)``, ``F = 4·D`` by default."""
    hidden = ff_dim or 4 * dim
    return nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, dim))


class TransformerEncoderLayer(nn.Module):
    """Self-attention + feed-forward, each with a residual; pre-norm (default) or post-norm.

    Args:
        dim: model size. heads: attention heads. ff_dim: feed-forward size (default ``4·dim``).
        dropout: on residual branches. attention_dropout: on attention weights (default 0: keeps the
            SDPA fast kernel; attention dropout forces PyTorch's slow math path).
        norm_first: pre-norm (True) or post-norm (False).
        rotary: optional :class:`~attnkit.positions.RotaryPositions` for the self-attention.
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
        self.attention = MultiHeadAttention(dim, heads, dropout=attention_dropout, rotary=rotary)
        self.feed_forward = feed_forward(dim, ff_dim, dropout)
        self.norm_attention, self.norm_ff = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None, *, need_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x ``[B, T, D]``, mask ``[B, T]`` -> ``(x [B, T, D], weights [B, H, T, T] or None)``."""
        if self.norm_first:
            attended = self.attention(self.norm_attention(x), key_mask=mask, need_weights=need_weights)
            x = x + self.dropout(attended.context)
            x = x + self.dropout(self.feed_forward(self.norm_ff(x)))
        else:
            attended = self.attention(x, key_mask=mask, need_weights=need_weights)
            x = self.norm_attention(x + self.dropout(attended.context))
            x = self.norm_ff(x + self.dropout(self.feed_forward(x)))
        return x, attended.weights


class TransformerEncoder(nn.Module):
    """Sinusoidal positions + a stack of :class:`TransformerEncoderLayer` (+ a final norm when pre-norm)."""

    def __init__(
        self,
        dim: int,
        heads: int,
        num_layers: int,
        *,
        ff_dim: int | None = None,
        dropout: float = 0.1,
        norm_first: bool = True,
    ) -> None:
        super().__init__()
        self.positions = SinusoidalPositions(dim)
        self.layers = nn.ModuleList(
            TransformerEncoderLayer(dim, heads, ff_dim=ff_dim, dropout=dropout, norm_first=norm_first)
            for _ in range(num_layers)
        )
        self.final_norm = nn.LayerNorm(dim) if norm_first else nn.Identity()
        self.output_dim = dim

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None, *, need_weights: bool = False
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """x ``[B, T, D]``, mask ``[B, T]`` -> ``(encoded [B, T, D], per-layer weights [B, H, T, T] if asked)``."""
        x = self.positions(x)
        all_weights = []
        for layer in self.layers:
            x, weights = layer(x, mask, need_weights=need_weights)
            if weights is not None:
                all_weights.append(weights)
        return self.final_norm(x), all_weights
