"""Sequence encoders that honour the mask: a packed bidirectional GRU and a Transformer encoder.

Both map ``x [B, T, D_in]`` and ``mask [B, T]`` (True = real token) to ``[B, T, D_out]``; outputs at padded
positions are zero for the GRU and never read by the attention that follows, and real positions do not
depend on how much padding there is.

The Transformer encoder also runs on *packed* documents (:meth:`TransformerEncoder.forward_packed`): the
real tokens of every document, concatenated — ``x[mask]`` of a padded batch — with their lengths. Every
position-wise op (projections, feed-forward, norms, dropout) then runs once over ``N`` real tokens and never
over padding, and attention runs per document on PyTorch's fused SDPA kernel without any mask. The padded
:meth:`~TransformerEncoder.forward` is its reference (tests compare values and gradients).

Shape glossary:
    B  batch (documents)   T  positions   N  real tokens of all documents (packed)
    D_in  input features   D_out  output features   H  heads   Dh  head features
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from attnkit.masks import lengths_to_mask
from attnkit.models.dropout import Dropout
from attnkit.models.rnn_decoders import make_rnn, run_packed
from attnkit.multihead import MultiHeadAttention
from attnkit.positions import RotaryPositions, SinusoidalPositions

__all__ = ["BiGRUEncoder", "TransformerEncoder", "TransformerEncoderLayer", "encode_packed", "feed_forward", "residual"]


class BiGRUEncoder(nn.Module):
    """Bidirectional GRU over packed sequences: the backward direction starts at each sequence's real end.

    ``hidden_dim`` is per direction (``output_dim = 2 · hidden_dim``). ``packed=True`` (the default and the right
    way) packs the sequences, so padding changes nothing. ``packed=False`` runs the GRU over the whole padded batch,
    as code that does not pack does: the padding's inputs feed the recurrence, the backward direction starts in the
    padding (so real positions depend on how much padding follows them) and the outputs at padded positions are
    whatever the GRU computes there, not zeros: the masking experiment's setting (:mod:`attnkit.experiments.masking`).
    """

    def __init__(
        self, input_dim: int, hidden_dim: int, *, num_layers: int = 1, dropout: float = 0.0, packed: bool = True
    ) -> None:
        super().__init__()
        self.packed = packed
        self.rnn = make_rnn("gru", input_dim, hidden_dim, num_layers=num_layers, dropout=dropout, bidirectional=True)
        self.output_dim = 2 * hidden_dim

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """x ``[B, T, D_in]``, mask ``[B, T]`` (a prefix of each row) -> ``[B, T, 2·hidden]``, zero at padding.

        Rows with no token are run as one zero step and zeroed, so empty sequences are safe. Unpacked
        (``packed=False``): the GRU's outputs everywhere, padding included; ``mask`` is not read.
        """
        if x.shape[0] == 0:  # nothing to encode (e.g. a batch of empty documents)
            return x.new_zeros(*x.shape[:2], self.output_dim)
        if not self.packed:
            return self.rnn(x)[0]  # [B, T, 2·hidden]: the recurrence runs through the padding
        return run_packed(self.rnn, x, mask)[0]  # [B, T, 2·hidden]


def feed_forward(
    dim: int, ff_dim: int | None, dropout: float, *, activation: Callable[[], nn.Module] = nn.GELU
) -> nn.Sequential:
    """The Transformer's position-wise block: ``Linear(D, F) -> activation -> Dropout -> Linear(F, D)``.

    ``F = 4·D`` by default; ``activation`` builds the non-linearity (``nn.GELU`` by default, ``nn.ReLU`` as in
    the original Transformer and ``nn.TransformerEncoderLayer``).
    """
    hidden = ff_dim or 4 * dim
    return nn.Sequential(nn.Linear(dim, hidden), activation(), Dropout(dropout), nn.Linear(hidden, dim))


def residual(
    x: torch.Tensor,
    sublayer: Callable[[torch.Tensor], torch.Tensor],
    norm: nn.Module,
    dropout: nn.Module,
    norm_first: bool,
) -> torch.Tensor:
    """One residual block around ``sublayer``: ``x + dropout(sublayer(norm(x)))`` pre-norm, ``norm(x +
    dropout(sublayer(x)))`` post-norm. x ``[..., D]`` -> ``[..., D]``."""
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))


def _as_lengths(lengths: Sequence[int] | torch.Tensor, tokens: int) -> list[int]:
    """Lengths as Python ints, checked to sum to the packed input's ``N``."""
    lengths = lengths.tolist() if isinstance(lengths, torch.Tensor) else [int(n) for n in lengths]
    if any(n < 0 for n in lengths) or sum(lengths) != tokens:
        raise ValueError(f"lengths must be >= 0 and sum to the packed input's N={tokens}, got {lengths}")
    return lengths


class TransformerEncoderLayer(nn.Module):
    """Self-attention + feed-forward, each with a residual; pre-norm (default) or post-norm.

    ``ff_dim`` defaults to ``4·dim``; ``dropout`` is on both residual branches and inside the feed-forward block;
    ``attention_dropout`` on the attention weights (default 0 keeps the fused SDPA kernel: any attention dropout
    sends PyTorch's SDPA to its slow math path, which materialises every ``[T, T]`` weight matrix —
    ``nn.TransformerEncoderLayer`` does this by default); ``rotary``: optional positions for the self-attention;
    ``activation`` builds the feed-forward non-linearity (``nn.ReLU`` as in torch's layer).
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
        activation: Callable[[], nn.Module] = nn.GELU,
    ) -> None:
        super().__init__()
        self.attention = MultiHeadAttention(dim, heads, dropout=attention_dropout, rotary=rotary)
        self.feed_forward = feed_forward(dim, ff_dim, dropout, activation=activation)
        self.norm_attention, self.norm_ff = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.dropout = Dropout(dropout)
        self.norm_first = norm_first

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None, *, need_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x ``[B, T, D]``, mask ``[B, T]`` -> ``(x [B, T, D], weights [B, H, T, T] or None)``."""
        weights = []

        def attend(h: torch.Tensor) -> torch.Tensor:
            out = self.attention(h, key_mask=mask, need_weights=need_weights)
            weights.append(out.weights)
            return out.context

        return self._blocks(x, attend), weights[0]

    def forward_packed(self, x: torch.Tensor, lengths: Sequence[int] | torch.Tensor) -> torch.Tensor:
        """Packed documents x ``[N, D]`` with ``lengths [B]`` (summing to N) -> ``[N, D]``.

        The same layer as :meth:`forward` on the padded batch, at the real positions only; see
        :meth:`MultiHeadAttention.forward_packed <attnkit.MultiHeadAttention.forward_packed>`.
        """
        lengths = _as_lengths(lengths, x.shape[0])
        return self._blocks(x, lambda h: self.attention.forward_packed(h, lengths))

    def _blocks(self, x: torch.Tensor, attend: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        """The attention block around ``attend``, then the feed-forward block: x ``[..., D]`` -> ``[..., D]``."""
        x = residual(x, attend, self.norm_attention, self.dropout, self.norm_first)
        return residual(x, self.feed_forward, self.norm_ff, self.dropout, self.norm_first)


def run_layers(
    layers: Sequence[TransformerEncoderLayer], x: torch.Tensor, mask: torch.Tensor | None, need_weights: bool
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """x ``[B, T, D]``, mask ``[B, T]`` through every layer -> ``(x [B, T, D], per-layer weights if asked)``."""
    all_weights = []
    for layer in layers:
        x, weights = layer(x, mask, need_weights=need_weights)
        if weights is not None:
            all_weights.append(weights)
    return x, all_weights


class TransformerEncoder(nn.Module):
    """Sinusoidal positions + a stack of :class:`TransformerEncoderLayer` (+ a final norm when pre-norm).

    Runs on a padded batch (:meth:`forward`) or on packed documents (:meth:`forward_packed`, the fast way to
    train on documents of very different lengths). Arguments as :class:`TransformerEncoderLayer`.
    """

    def __init__(
        self,
        dim: int,
        heads: int,
        num_layers: int,
        *,
        ff_dim: int | None = None,
        dropout: float = 0.1,
        attention_dropout: float = 0.0,
        norm_first: bool = True,
        activation: Callable[[], nn.Module] = nn.GELU,
    ) -> None:
        super().__init__()
        self.positions = SinusoidalPositions(dim)
        self.layers = nn.ModuleList(
            TransformerEncoderLayer(
                dim,
                heads,
                ff_dim=ff_dim,
                dropout=dropout,
                attention_dropout=attention_dropout,
                norm_first=norm_first,
                activation=activation,
            )
            for _ in range(num_layers)
        )
        self.final_norm = nn.LayerNorm(dim) if norm_first else nn.Identity()
        self.output_dim = dim

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None, *, need_weights: bool = False
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """x ``[B, T, D]``, mask ``[B, T]`` -> ``(encoded [B, T, D], per-layer weights [B, H, T, T] if asked)``."""
        x, all_weights = run_layers(self.layers, self.positions(x), mask, need_weights)
        return self.final_norm(x), all_weights

    def forward_packed(self, x: torch.Tensor, lengths: Sequence[int] | torch.Tensor) -> torch.Tensor:
        """Packed documents x ``[N, D]`` (``padded[mask]`` for a prefix ``mask``), ``lengths [B]`` (summing to ``N``,
        0 allowed) -> ``[N, D]``, equal to ``forward(padded, mask)[0][mask]``; no attention weights."""
        lengths = _as_lengths(lengths, x.shape[0])
        if lengths:  # positions restart at 0 in every document: one gather from the table, not one add per document
            table = self.positions(x.new_zeros(1, max(lengths), x.shape[-1]))[0]  # [T, D] (x · 1 + P)
            counts = torch.tensor(lengths, device=x.device)
            starts = torch.repeat_interleave(counts.cumsum(0) - counts, counts)  # [N] first row of each token's doc
            x = x + table[torch.arange(x.shape[0], device=x.device) - starts]
        for layer in self.layers:
            x = layer.forward_packed(x, lengths)
        return self.final_norm(x)


def encode_packed(encoder: TransformerEncoder, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The Transformer encoder over the real tokens only: x ``[B, T, E]``, mask ``[B, T]`` -> ``[B, T, D]``.

    When each row's mask is a prefix (padding at the end, as the collate functions make it), the real tokens are
    packed and encoded with :meth:`TransformerEncoder.forward_packed` (no projection, feed-forward or attention
    work on padding) and scattered back, zeros at padded positions; the real positions equal the padded
    :meth:`TransformerEncoder.forward`'s. Any other mask goes through the padded forward.
    """
    lengths = mask.sum(-1)  # [B]
    if not torch.equal(lengths_to_mask(lengths, mask.shape[1]), mask):
        return encoder(x, mask)[0]
    encoded = encoder.forward_packed(x[mask], lengths)  # [N, D]
    return encoded.new_zeros(*mask.shape, encoded.shape[-1]).index_put((mask,), encoded)  # [B, T, D]
