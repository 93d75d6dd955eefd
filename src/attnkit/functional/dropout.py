"""Dropout whose random mask is cheap to draw on a CPU (layer 2; torch only).

On a CPU, ``F.dropout`` draws one float from the Mersenne Twister per element (``bernoulli_``); :func:`keep_mask`
instead draws 64 random bits per four elements and compares each 16-bit lane with a threshold: 4× fewer draws
(timings: ``docs/benchmarks.md``).

The one difference from ``F.dropout``: the drop probability is rounded to a multiple of 1/65,536 (0.1 becomes
0.100006), and the survivors are scaled by ``1 / (1 - p)`` of that rounded ``p``, so the expected value of every
element is still its input (in float16 and bfloat16 up to the scale's rounding). Off the CPU, where ``F.dropout``
is one fused kernel, :func:`dropout` calls ``F.dropout``.

Shape glossary: ``x`` any shape ``[...]``; the mask has the same shape.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

__all__ = ["dropout", "keep_mask", "keep_mask_reference", "quantized_probability"]

LANES = 4  # 16-bit lanes per int64 draw
LEVELS = 1 << 16  # a lane takes one of 65,536 values


def quantized_probability(p: float) -> float:
    """The drop probability :func:`keep_mask` realises for ``p``: ``round(p · 65536) / 65536``."""
    _check_probability(p)
    return round(p * LEVELS) / LEVELS


def keep_mask(shape: torch.Size | tuple[int, ...], p: float, *, device: torch.device | str = "cpu") -> torch.Tensor:
    """A boolean mask of ``shape``, each element True (kept) with probability ``1 - quantized_probability(p)``,
    independently. Draws from torch's default generator of ``device`` (``torch.manual_seed`` makes it repeatable).
    """
    drop_levels = round(_check_probability(p) * LEVELS)
    count = math.prod(shape)
    words = -(-count // LANES)  # ceil: four 16-bit lanes per int64
    bits = torch.empty(words, dtype=torch.int64, device=device).random_(-(2**63), 2**63 - 1)
    lanes = bits.view(torch.int16)[:count]  # [count], uniform over -32768 .. 32767
    return (lanes >= drop_levels - LEVELS // 2).view(shape)  # P(kept) = 1 - drop_levels / 65536


def keep_mask_reference(shape: torch.Size | tuple[int, ...], p: float, *, device: torch.device | str = "cpu"):
    """The readable twin of :func:`keep_mask`: one uniform float per element, kept when ``u >= p`` (rounded ``p``)."""
    return torch.rand(shape, device=device) >= quantized_probability(p)


def dropout(x: torch.Tensor, p: float, training: bool = True, *, mask: torch.Tensor | None = None) -> torch.Tensor:
    """``x [...]`` with each element zeroed with probability ``p`` and the rest scaled by ``1 / (1 - p)`` -> the
    same shape and dtype (``training=False``: ``x`` itself). On the CPU ``p`` is rounded (module docstring).
    ``mask``: a boolean keep-mask broadcastable to ``x`` to use instead of a fresh one (tests, reproducing a step).
    """
    _check_probability(p)
    if not training or p == 0.0:
        return x
    if mask is None and x.device.type != "cpu":
        return F.dropout(x, p, training=True)
    q = quantized_probability(p)
    if q >= 1.0:
        return x * 0.0
    if mask is None:
        mask = keep_mask(x.shape, p, device=x.device)
    factor = mask.to(x.dtype).mul_(1.0 / (1.0 - q))  # [...]: 0 or 1 / (1 - q); one product forward and backward
    return x * factor


def _check_probability(p: float) -> float:
    """``p`` itself when it lies in ``[0, 1]``; raises ``ValueError`` otherwise."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability p must lie in [0, 1], got {p}")
    return p
