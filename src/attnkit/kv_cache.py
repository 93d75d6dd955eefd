"""A preallocated key/value cache for incremental decoding (layer 3).

Shape glossary:
    B  batch   H  heads   L  max_len (capacity)   T  steps added in one update   Dh  head features
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["KVCache"]


class KVCache(nn.Module):
    """Keys and values of the steps decoded so far, in buffers allocated once.

    ``update(k, v)`` writes ``T`` new steps after the ones already held and returns views of everything held;
    it raises ``ValueError`` rather than grow past ``max_len``. ``reset()`` empties it; ``reorder(indices)``
    gathers batch rows (beam search). The buffers are ``[B, H, L, Dh]``.
    """

    def __init__(
        self,
        batch_size: int,
        max_len: int,
        num_heads: int,
        head_dim: int,
        *,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        shape = (batch_size, num_heads, max_len, head_dim)
        self.register_buffer("keys", torch.zeros(shape, dtype=dtype, device=device), persistent=False)
        self.register_buffer("values", torch.zeros(shape, dtype=dtype, device=device), persistent=False)
        self.size = 0

    @property
    def max_len(self) -> int:
        """Capacity ``L``."""
        return self.keys.shape[2]

    def update(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append ``keys, values [B, H, T, Dh]``; return all held keys and values ``[B, H, size, Dh]`` (views)."""
        held_keys, held_values = self.keys, self.values  # one module attribute lookup each (decoding calls this a lot)
        batch, heads, capacity, head_dim = held_keys.shape
        steps = keys.shape[2] if keys.dim() == 4 else 0
        if keys.shape != values.shape:
            raise ValueError(f"keys {tuple(keys.shape)} and values {tuple(values.shape)} must have one shape")
        if keys.shape != (batch, heads, steps, head_dim):
            expected = (batch, heads, steps, head_dim)
            raise ValueError(
                f"KVCache.update expects keys of shape [B, H, T, Dh] = {expected}, got {tuple(keys.shape)}"
            )
        start = self.size
        end = start + steps
        if end > capacity:
            raise ValueError(f"KVCache overflow: holding {start} steps, adding {steps}, capacity {capacity}")
        held_keys.narrow(2, start, steps).copy_(keys)
        held_values.narrow(2, start, steps).copy_(values)
        self.size = end
        return held_keys.narrow(2, 0, end), held_values.narrow(2, 0, end)

    def reset(self) -> None:
        """Forget every step (the buffers are kept and overwritten)."""
        self.size = 0

    def reorder(self, indices: torch.Tensor) -> None:
        """Keep batch rows ``indices [B]`` (in that order), e.g. the surviving beams."""
        self.keys[:, :, : self.size] = self.keys[indices, :, : self.size]
        self.values[:, :, : self.size] = self.values[indices, :, : self.size]
