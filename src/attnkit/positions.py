"""Position information (layer 3): attention is permutation-invariant until positions are added.

Additive embeddings (:class:`SinusoidalPositions`, :class:`LearnedPositions`, :class:`Sinusoidal2DPositions`)
return ``x + P``; :class:`RotaryPositions` rotates queries and keys inside attention instead.
``offset`` is the absolute position of ``x``'s first step (the KV-cache length when decoding).

Shape glossary:
    B  batch   T  positions   D  features   H  heads   Dh  head features   Hg, Wg  grid height and width
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["LearnedPositions", "RotaryPositions", "Sinusoidal2DPositions", "SinusoidalPositions", "sinusoidal_table"]


def sinusoidal_table(length: int, dim: int, *, base: float = 10000.0, device=None) -> torch.Tensor:
    """Vaswani et al.'s table: ``P[t, 2i] = sin(t / base^(2i/D))``, ``P[t, 2i+1] = cos(...)``. -> ``[T, D]``."""
    if dim % 2:
        raise ValueError(f"sinusoidal positions need an even dim, got {dim}")
    position = torch.arange(length, device=device, dtype=torch.float32)[:, None]  # [T, 1]
    inv_freq = torch.exp(torch.arange(0, dim, 2, device=device, dtype=torch.float32) * (-math.log(base) / dim))
    table = torch.empty(length, dim, device=device)
    table[:, 0::2] = torch.sin(position * inv_freq)
    table[:, 1::2] = torch.cos(position * inv_freq)
    return table


class SinusoidalPositions(nn.Module):
    """Fixed sinusoidal embeddings added to the input; any length (the table grows on demand)."""

    def __init__(self, dim: int, *, base: float = 10000.0, scale_input: bool = False) -> None:
        super().__init__()
        self.dim, self.base = dim, base
        self.input_scale = math.sqrt(dim) if scale_input else 1.0
        self.register_buffer("table", sinusoidal_table(0, dim, base=base), persistent=False)

    def forward(self, x: torch.Tensor, *, offset: int = 0) -> torch.Tensor:
        """x ``[B, T, D]`` -> ``x·scale + P[offset : offset + T]`` ``[B, T, D]``."""
        length = offset + x.shape[-2]
        if self.table.shape[0] < length:
            self.table = sinusoidal_table(
                max(length, 2 * self.table.shape[0]), self.dim, base=self.base, device=x.device
            )
        return x * self.input_scale + self.table[offset:length].to(x.dtype)


class LearnedPositions(nn.Module):
    """A learned embedding per position up to ``max_len``; longer inputs raise ``ValueError``."""

    def __init__(self, max_len: int, dim: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(max_len, dim)
        nn.init.normal_(self.embedding.weight, std=0.02)

    def forward(self, x: torch.Tensor, *, offset: int = 0) -> torch.Tensor:
        """x ``[B, T, D]`` -> ``x + E[offset : offset + T]``."""
        length = offset + x.shape[-2]
        if length > self.embedding.num_embeddings:
            raise ValueError(
                f"LearnedPositions holds {self.embedding.num_embeddings} positions; input of shape "
                f"{tuple(x.shape)} at offset {offset} needs {length}"
            )
        positions = torch.arange(offset, length, device=x.device)
        return x + self.embedding(positions).to(x.dtype)


class Sinusoidal2DPositions(nn.Module):
    """2-D sinusoidal embeddings for a feature grid: half the channels encode the row, half the column."""

    def __init__(self, dim: int, *, base: float = 10000.0) -> None:
        super().__init__()
        if dim % 4:
            raise ValueError(f"2-D sinusoidal positions need dim divisible by 4, got {dim}")
        self.dim, self.base = dim, base

    def table(self, height: int, width: int, device=None) -> torch.Tensor:
        """-> ``[Hg, Wg, D]``."""
        half = self.dim // 2
        rows = sinusoidal_table(height, half, base=self.base, device=device)  # [Hg, D/2]
        cols = sinusoidal_table(width, half, base=self.base, device=device)  # [Wg, D/2]
        return torch.cat([rows[:, None].expand(height, width, half), cols[None].expand(height, width, half)], -1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x ``[B, Hg, Wg, D]`` -> ``x + P`` (same shape)."""
        return x + self.table(x.shape[-3], x.shape[-2], device=x.device).to(x.dtype)


class RotaryPositions(nn.Module):
    """Rotary position embeddings (Su et al. 2021), applied to queries and keys per head.

    Pairs of features ``(x[2i], x[2i+1])`` are rotated by angle ``t / base^(2i/Dh)``, so ``q_tᵀ k_s`` depends
    on ``t - s`` only. ``MultiHeadAttention(rotary=RotaryPositions(head_dim))`` applies it with the cache offset.
    """

    def __init__(self, head_dim: int, *, base: float = 10000.0) -> None:
        super().__init__()
        if head_dim % 2:
            raise ValueError(f"rotary positions need an even head_dim, got {head_dim}")
        inv_freq = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x: torch.Tensor, *, offset: int = 0) -> torch.Tensor:
        """x ``[B, H, T, Dh]`` -> rotated ``[B, H, T, Dh]`` (positions ``offset .. offset + T - 1``)."""
        t = torch.arange(offset, offset + x.shape[-2], device=x.device, dtype=torch.float32)
        angles = t[:, None] * self.inv_freq  # [T, Dh/2]
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
        even, odd = x[..., 0::2], x[..., 1::2]
        rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)  # [B, H, T, Dh/2, 2]
        return rotated.flatten(-2)
