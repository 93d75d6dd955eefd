"""Where a Transformer encoder-decoder's tokens are: one object per position scheme (layer 4).

A name (``"sinusoidal"``, ``"learned"``, ``"rotary"``: what configs and the CLI store) becomes a scheme once, in
:func:`position_scheme`; :class:`~attnkit.models.transformer.seq2seq.TransformerSeq2Seq` takes the scheme and asks it
for its modules instead of branching on the name.

    scheme = position_scheme("rotary")
    source, target = scheme.added(dim=256, max_len=1024)   # tables added to the embeddings (None, None here)
    rotary = scheme.rotary(head_dim=64)                     # per-layer rotation of queries and keys (or None)
"""

from __future__ import annotations

from torch import nn

from attnkit.positions import LearnedPositions, RotaryPositions, SinusoidalPositions

__all__ = ["LEARNED", "POSITION_SCHEMES", "ROTARY", "SINUSOIDAL", "PositionScheme", "position_scheme"]


class PositionScheme:
    """How a Transformer encoder-decoder knows token order: tables added to the source and target embeddings
    (:meth:`added`), a rotation inside every self-attention (:meth:`rotary`), or both. The base class has neither."""

    name = "none"

    def added(self, dim: int, max_len: int) -> tuple[nn.Module | None, nn.Module | None]:
        """The modules added to the source and target embeddings ``[B, T, D]``; ``None`` for none."""
        return None, None

    def rotary(self, head_dim: int) -> RotaryPositions | None:
        """A fresh rotation for one self-attention layer over heads of size ``head_dim``; ``None`` for none."""
        return None

    def __repr__(self) -> str:
        return f"position_scheme({self.name!r})"


class _Sinusoidal(PositionScheme):
    name = "sinusoidal"

    def added(self, dim: int, max_len: int) -> tuple[nn.Module | None, nn.Module | None]:
        table = SinusoidalPositions(dim)  # parameter-free: one module serves both sides
        return table, table


class _Learned(PositionScheme):
    name = "learned"

    def added(self, dim: int, max_len: int) -> tuple[nn.Module | None, nn.Module | None]:
        return LearnedPositions(max_len, dim), LearnedPositions(max_len, dim)


class _Rotary(PositionScheme):
    name = "rotary"

    def rotary(self, head_dim: int) -> RotaryPositions | None:
        return RotaryPositions(head_dim)


SINUSOIDAL, LEARNED, ROTARY = _Sinusoidal(), _Learned(), _Rotary()
POSITION_SCHEMES: dict[str, PositionScheme] = {scheme.name: scheme for scheme in (SINUSOIDAL, LEARNED, ROTARY)}


def position_scheme(name: str) -> PositionScheme:
    """The scheme a config's ``positions`` name means.

    Raises:
        ValueError: a name that is none of :data:`POSITION_SCHEMES`.
    """
    if name not in POSITION_SCHEMES:
        raise ValueError(f"positions must be one of {tuple(POSITION_SCHEMES)}, got {name!r}")
    return POSITION_SCHEMES[name]
