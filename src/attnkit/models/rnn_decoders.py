"""The recurrent pieces of :class:`~attnkit.models.rnn_seq2seq.RNNSeq2Seq`: a packed encoder and three decoders.

* :class:`RNNEncoder` — GRU or LSTM, uni- or bidirectional, packed by the source mask.
* :class:`LuongDecoder` — Luong et al. 2015: ``h_t = RNN([e_{t-1}; h̃_{t-1}], h_{t-1})`` (input feeding),
  ``c_t = attend(h_t)``, ``h̃_t = tanh(W_c [c_t; h_t])``.
* :class:`BahdanauDecoder` — Bahdanau et al. 2015: ``c_t = attend(s_{t-1})``, ``s_t = RNN([e_{t-1}; c_t], s_{t-1})``,
  output ``tanh(W_o [s_t; c_t; e_{t-1}])``.
* :class:`PlainDecoder` — no attention: the encoder's final state is the only link (the bottleneck baseline).

The attention itself is an :class:`~attnkit.attention.Attention` built outside (see
:func:`~attnkit.models.rnn_seq2seq.build_rnn_attention`). Every decoder takes one step at a time from a
:class:`RNNDecodingState`; the attention decoders are inherently sequential (the context feeds the next input).

Shape glossary:
    B  batch (N = B·beams rows when decoding)   S  source positions   T  target positions   L  layers
    E  embedding size   D  hidden size (decoder state = encoder output)   Dk  attention key size
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from attnkit.attention import Attention
from attnkit.scores import AdditiveScore, Score

__all__ = [
    "CELLS",
    "BahdanauDecoder",
    "LuongDecoder",
    "PlainDecoder",
    "PreprojectedAdditiveScore",
    "RNNDecodingState",
    "RNNEncoder",
    "RNNState",
]

CELLS = ("gru", "lstm")
RNNState = torch.Tensor | tuple[torch.Tensor, torch.Tensor]  # GRU h [L, B, D]; LSTM (h, c)


class _LSTM(nn.LSTM):
    """``nn.LSTM`` computing in float32 under CPU autocast, as ``nn.GRU`` does there: CPU autocast sends the LSTM
    to oneDNN in bf16/fp16, which fails on CPUs without native support ("could not create a primitive descriptor
    for the LSTM forward propagation primitive"). GPUs keep autocast's own LSTM; the parameters are nn.LSTM's."""

    def forward(self, x, hx=None):
        """``nn.LSTM.forward(x, hx)``; in float32, without autocast, when CPU autocast is on."""
        if not torch.is_autocast_enabled("cpu") or self.weight_ih_l0.device.type != "cpu":
            return super().forward(x, hx)
        x = x._replace(data=x.data.float()) if isinstance(x, PackedSequence) else x.float()
        hx = None if hx is None else tuple(h.float() for h in hx)
        with torch.autocast("cpu", enabled=False):
            return super().forward(x, hx)


def make_rnn(cell: str, input_dim: int, hidden_dim: int, *, num_layers: int, dropout: float, bidirectional=False):
    """A batch-first ``nn.GRU`` or ``nn.LSTM`` (``cell`` in :data:`CELLS`; the LSTM computes in float32 under CPU
    autocast, see :class:`_LSTM`)."""
    if cell not in CELLS:
        raise ValueError(f"cell must be one of {CELLS}, got {cell!r}")
    if num_layers < 1:
        raise ValueError(f"num_layers must be >= 1, got {num_layers}")
    rnn_class = nn.GRU if cell == "gru" else _LSTM
    return rnn_class(
        input_dim,
        hidden_dim,
        num_layers=num_layers,
        dropout=dropout if num_layers > 1 else 0.0,
        batch_first=True,
        bidirectional=bidirectional,
    )


def run_packed(rnn: nn.RNNBase, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, RNNState]:
    """``rnn`` over x ``[B, S, E]`` packed by mask ``[B, S]`` (a prefix per row) -> ``(outputs [B, S, D], final)``.

    Outputs are zero at padding; an empty row runs one padding step (packing needs a length of at least 1).
    """
    lengths = mask.sum(dim=1).clamp(min=1).cpu()
    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out, final = rnn(packed)
    out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])  # [B, S, D]
    return out * mask[..., None].to(out.dtype), final


def top_hidden(hidden: RNNState) -> torch.Tensor:
    """The last layer's hidden state ``h`` ``[B, D]`` (for an LSTM, not the cell)."""
    return (hidden[0] if isinstance(hidden, tuple) else hidden)[-1]


def map_hidden(hidden: RNNState, fn: Callable[[torch.Tensor], torch.Tensor]) -> RNNState:
    """``fn`` on a recurrent state ``[L, B, D]``, or on each of an LSTM's ``(h, c)``."""
    return tuple(fn(h) for h in hidden) if isinstance(hidden, tuple) else fn(hidden)


class PreprojectedAdditiveScore(Score):
    """An :class:`~attnkit.scores.AdditiveScore` whose ``key`` argument is already projected (``U k``).

    Decoders call :meth:`project_keys` once per source and hand the result to
    :class:`~attnkit.attention.Attention` as its keys (the values stay the encoder outputs), so the
    ``[B, S, Dh]`` projection is not redone at every step.
    """

    def __init__(self, additive: AdditiveScore) -> None:
        super().__init__()
        self.additive = additive

    def project_keys(self, key: torch.Tensor) -> torch.Tensor:
        """``U k``: ``[B, S, D] -> [B, S, Dh]``."""
        return self.additive.project_keys(key)

    def forward(self, query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
        """query ``[B, Tq, Dq]``, projected key ``[B, S, Dh]`` -> scores ``[B, Tq, S]``."""
        return self.additive(query, None, projected_key=key)


def attention_keys(attention: Attention | None, memory: torch.Tensor) -> torch.Tensor | None:
    """The keys an attention reads: projected once for a :class:`PreprojectedAdditiveScore`, else ``memory``."""
    if attention is None:
        return None
    if isinstance(attention.score, PreprojectedAdditiveScore):
        return attention.score.project_keys(memory)  # [B, S, Dh]
    return memory


class RNNEncoder(nn.Module):
    """A GRU or LSTM over packed sources: padding never enters, outputs are zero at padded positions.

    ``output_dim`` ``D`` is the size of each output and of the final state (bidirectional: ``D/2`` per direction,
    concatenated); ``cell`` is ``"gru"`` or ``"lstm"``; ``num_layers`` and ``dropout`` as in ``nn.GRU``.
    """

    def __init__(
        self,
        input_dim: int,
        output_dim: int,
        *,
        cell: str = "gru",
        num_layers: int = 1,
        bidirectional: bool = True,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if bidirectional and output_dim % 2:
            raise ValueError(f"a bidirectional encoder needs an even output_dim, got {output_dim}")
        per_direction = output_dim // 2 if bidirectional else output_dim
        self.rnn = make_rnn(
            cell, input_dim, per_direction, num_layers=num_layers, dropout=dropout, bidirectional=bidirectional
        )
        self.cell, self.num_layers, self.bidirectional, self.output_dim = cell, num_layers, bidirectional, output_dim

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, RNNState]:
        """x ``[B, S, E]``, mask ``[B, S]`` (a prefix per row) -> ``(outputs [B, S, D], final state [L, B, D])``.

        The final state of each layer is the forward direction's state at the row's last real token
        concatenated with the backward direction's state at its first. Empty rows run one padding step.
        """
        if mask.shape != x.shape[:2] or mask.dtype != torch.bool:
            raise ValueError(f"mask must be a bool [B, S] = {tuple(x.shape[:2])}, got {mask.dtype} {tuple(mask.shape)}")
        out, final = run_packed(self.rnn, x, mask)
        return out, self._merge_directions(final)

    def _merge_directions(self, final: RNNState) -> RNNState:
        if not self.bidirectional:
            return final  # [L, B, D]
        # [2L, B, D/2], layer-major with the forward direction first -> [L, B, D]
        return map_hidden(final, lambda f: torch.cat([f[0::2], f[1::2]], dim=-1))


@dataclass
class RNNDecodingState:
    """Everything an RNN decoder carries from one step to the next.

    Attributes:
        hidden: the recurrent state ``[L, N, D]`` (an LSTM: ``(h, c)``).
        feed: Luong's previous attentional state ``h̃_{t-1}`` ``[N, D]`` (None for the other decoders).
        memory: encoder outputs ``[N, S, D]`` (the attention's values); None without attention.
        keys: the attention's keys ``[N, S, Dk]`` (projected once for additive scores); None without attention.
        memory_mask: ``[N, S]`` bool, True = real source token.
        group_size: rows per source (the beam size); source-side tensors are shared within a group.
        step: tokens fed so far (local-m's window centre).
    """

    hidden: RNNState
    feed: torch.Tensor | None
    memory: torch.Tensor | None
    keys: torch.Tensor | None
    memory_mask: torch.Tensor
    group_size: int = 1
    step: int = 0

    def reorder(self, indices: torch.Tensor) -> None:
        """Rows follow ``indices [N]`` (within groups); source-side tensors are left as they are."""
        self.hidden = map_hidden(self.hidden, lambda h: h.index_select(1, indices))
        if self.feed is not None:
            self.feed = self.feed.index_select(0, indices)


def _attend(attention: Attention, query: torch.Tensor, state: RNNDecodingState):
    """One step of attention: query ``[N, 1, Dq]`` -> ``AttentionOutput(context [N, 1, D], weights [N, 1, S])``."""
    positions = torch.full((1,), state.step, device=query.device)  # [Tq = 1]: local-m's centre
    return attention(query, state.keys, state.memory, key_mask=state.memory_mask, query_positions=positions)


class _Decoder(nn.Module):
    """What the three decoders share: the recurrent stack (``rnn_input`` wide), the attention, the sizes."""

    def __init__(
        self, rnn_input: int, hidden_dim: int, attention: Attention | None, cell: str, num_layers: int, dropout: float
    ) -> None:
        super().__init__()
        self.rnn = make_rnn(cell, rnn_input, hidden_dim, num_layers=num_layers, dropout=dropout)
        self.attention = attention
        self.cell, self.num_layers, self.hidden_dim, self.output_dim = cell, num_layers, hidden_dim, hidden_dim

    def initial_feed(self, batch: int, like: torch.Tensor) -> torch.Tensor | None:
        """No input feeding."""
        return None


class LuongDecoder(_Decoder):
    """Luong et al. 2015 (global or local attention), with input feeding. ``hidden_dim`` ``D`` is the encoder's
    output size too; ``attention`` goes from queries ``[N, 1, D]`` over keys/values ``[N, S, ·]``."""

    def __init__(
        self,
        embed_dim: int,
        hidden_dim: int,
        attention: Attention,
        *,
        cell: str = "gru",
        num_layers: int = 1,
        dropout: float = 0.0,
    ) -> None:
        super().__init__(embed_dim + hidden_dim, hidden_dim, attention, cell, num_layers, dropout)
        self.combine = nn.Linear(2 * hidden_dim, hidden_dim, bias=False)  # W_c

    def initial_feed(self, batch: int, like: torch.Tensor) -> torch.Tensor:
        """``h̃_0 = 0``: ``[N, D]``."""
        return like.new_zeros(batch, self.hidden_dim)

    def step(
        self, embedded: torch.Tensor, state: RNNDecodingState, *, need_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """embedded ``[N, E]`` -> ``(h̃_t [N, D], weights [N, S])``; updates ``state``."""
        x = torch.cat([embedded, state.feed], dim=-1)[:, None]  # [N, 1, E + D]
        out, state.hidden = self.rnn(x, state.hidden)  # [N, 1, D]
        attended = _attend(self.attention, out, state)
        attentional = torch.tanh(self.combine(torch.cat([attended.context, out], dim=-1)))[:, 0]  # [N, D]
        state.feed = attentional
        return attentional, attended.weights[:, 0]  # [N, D], [N, S]


class BahdanauDecoder(_Decoder):
    """Bahdanau et al. 2015: attention from the previous state ``s_{t-1}``, the context enters the recurrence.
    ``hidden_dim`` ``D`` is the encoder's output size too; ``attention`` is usually additive, with a
    :class:`PreprojectedAdditiveScore`."""

    def __init__(
        self,
        embed_dim: int,
        hidden_dim: int,
        attention: Attention,
        *,
        cell: str = "gru",
        num_layers: int = 1,
        dropout: float = 0.0,
    ) -> None:
        super().__init__(embed_dim + hidden_dim, hidden_dim, attention, cell, num_layers, dropout)
        self.readout = nn.Linear(2 * hidden_dim + embed_dim, hidden_dim)  # W_o [s_t; c_t; e_{t-1}]

    def step(
        self, embedded: torch.Tensor, state: RNNDecodingState, *, need_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """embedded ``[N, E]`` -> ``(output [N, D], weights [N, S])``; updates ``state``."""
        previous = top_hidden(state.hidden)[:, None]  # s_{t-1}: [N, 1, D]
        attended = _attend(self.attention, previous, state)  # context [N, 1, D]
        x = torch.cat([embedded[:, None], attended.context], dim=-1)  # [N, 1, E + D]
        out, state.hidden = self.rnn(x, state.hidden)  # s_t: [N, 1, D]
        readout = torch.cat([out, attended.context, embedded[:, None]], dim=-1)  # [N, 1, 2D + E]
        return torch.tanh(self.readout(readout))[:, 0], attended.weights[:, 0]  # [N, D], [N, S]


class PlainDecoder(_Decoder):
    """No attention: the decoder starts from the encoder's final state and never looks back at the source.

    Teacher forcing runs the recurrence over all target positions at once (:meth:`forward`); decoding
    feeds one token at a time (:meth:`step`). Both give the same outputs.
    """

    def __init__(
        self, embed_dim: int, hidden_dim: int, *, cell: str = "gru", num_layers: int = 1, dropout: float = 0.0
    ) -> None:
        super().__init__(embed_dim, hidden_dim, None, cell, num_layers, dropout)

    def step(
        self, embedded: torch.Tensor, state: RNNDecodingState, *, need_weights: bool = False
    ) -> tuple[torch.Tensor, None]:
        """embedded ``[N, E]`` -> ``(output [N, D], None)``; updates ``state``."""
        out, state.hidden = self.rnn(embedded[:, None], state.hidden)  # [N, 1, D]
        return out[:, 0], None

    def forward(self, embedded: torch.Tensor, state: RNNDecodingState) -> torch.Tensor:
        """All positions at once: embedded ``[B, T, E]`` -> outputs ``[B, T, D]`` (each from earlier ones only)."""
        out, state.hidden = self.rnn(embedded, state.hidden)
        state.step += embedded.shape[1]
        return out
