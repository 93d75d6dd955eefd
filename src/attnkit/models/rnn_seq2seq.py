"""RNN encoder-decoder with Luong (global, local-m, local-p), Bahdanau, or no attention (layer 4).

    model = build_rnn_seq2seq(src_vocab, tgt_vocab, attention="local-p", cell="lstm")
    out = model(batch.source_ids, batch.source_mask, batch.target_in, need_weights=True)
    out.logits      # [B, T, V]
    out.attention   # [B, T, S]: rows sum to 1 over the real source tokens

Attention kinds (:data:`ATTENTIONS`), all built from attnkit's :class:`~attnkit.attention.Attention`, scores and
distributions:

=============  ==============================================  ===============
name           score · distribution                            decoder
=============  ==============================================  ===============
luong-dot      DotScore · Softmax                              LuongDecoder
luong-general  GeneralScore · Softmax                          LuongDecoder
luong-concat   AdditiveScore (keys projected once) · Softmax   LuongDecoder
local-m        GeneralScore · LocalM(window), centre p_t = t   LuongDecoder
local-p        GeneralScore · LocalP(window), centre from h_t  LuongDecoder
bahdanau       AdditiveScore (keys projected once) · Softmax   BahdanauDecoder
none           -                                               PlainDecoder
=============  ==============================================  ===============

The local variants' score is ``local_score=`` (``"dot"``, ``"general"`` — Luong's best — or ``"concat"``).

Shape glossary:
    B  batch (N = B·beams rows when decoding)   S  source positions   T  target positions
    V  target vocabulary   E  embedding size   D  hidden size   L  layers
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from attnkit.attention import Attention
from attnkit.decoding import check_reorder_indices, expand_for_beams
from attnkit.distributions import LocalM, LocalP, Softmax
from attnkit.models.rnn_decoders import (
    BahdanauDecoder,
    LuongDecoder,
    PlainDecoder,
    PreprojectedAdditiveScore,
    RNNDecodingState,
    RNNEncoder,
    RNNState,
    attention_keys,
    map_hidden,
)
from attnkit.scores import AdditiveScore, DotScore, GeneralScore

__all__ = ["ATTENTIONS", "RNNSeq2Seq", "RNNSeq2SeqOutput", "build_rnn_attention", "build_rnn_seq2seq"]

ATTENTIONS = ("luong-dot", "luong-general", "luong-concat", "local-m", "local-p", "bahdanau", "none")
LOCAL_SCORES = ("dot", "general", "concat")


def build_rnn_attention(
    name: str, dim: int, *, window: int = 10, local_score: str = "general", attention_dim: int | None = None
) -> Attention | None:
    """The :class:`Attention` of attention kind ``name`` for decoder states and encoder outputs of size ``dim``.

    ``name`` is one of :data:`ATTENTIONS` (``"none"`` gives None); ``window`` is local-m / local-p's ``D`` (``2D + 1``
    source positions); ``local_score`` the score inside local windows; ``attention_dim`` the additive scores' hidden
    size (default ``dim``).
    """
    if name not in ATTENTIONS:
        raise ValueError(f"attention must be one of {', '.join(ATTENTIONS)}; got {name!r}")
    if local_score not in LOCAL_SCORES:
        raise ValueError(f"local_score must be one of {LOCAL_SCORES}, got {local_score!r}")

    def score(kind: str):
        if kind == "dot":
            return DotScore()
        if kind == "general":
            return GeneralScore(dim, dim)
        return PreprojectedAdditiveScore(AdditiveScore(dim, dim, attention_dim or dim))

    if name == "none":
        return None
    if name in ("luong-dot", "luong-general", "luong-concat"):
        return Attention(score(name.removeprefix("luong-")), Softmax())
    if name == "local-m":
        return Attention(score(local_score), LocalM(window))
    if name == "local-p":
        return Attention(score(local_score), LocalP(window, dim))
    return Attention(score("concat"), Softmax())  # bahdanau


@dataclass
class RNNSeq2SeqOutput:
    """``logits [B, T, V]`` and, when asked and the model attends, ``attention [B, T, S]``."""

    logits: torch.Tensor
    attention: torch.Tensor | None = None


Decoder = LuongDecoder | BahdanauDecoder | PlainDecoder


class RNNSeq2Seq(nn.Module):
    """Embeddings + :class:`RNNEncoder` + a bridge to the decoder's initial state + a decoder + the output layer.

    The decoder starts from ``tanh(W_b · final encoder state)`` (an LSTM's cell from ``W_b' · final cell``).
    Padding never matters: the encoder is packed, attention masks the padded source, and each target position
    depends only on earlier ones.

    The ``encoder`` takes ``embed_dim`` inputs; its ``output_dim``, cell and layer count must be the
    ``decoder``'s. Id ``padding_idx`` is padding; ``dropout`` is on embeddings and on the decoder's output.
    """

    def __init__(
        self,
        source_vocab_size: int,
        target_vocab_size: int,
        *,
        encoder: RNNEncoder,
        decoder: Decoder,
        embed_dim: int,
        dropout: float = 0.2,
        padding_idx: int = 0,
    ) -> None:
        super().__init__()
        if encoder.output_dim != decoder.hidden_dim:
            raise ValueError(
                f"encoder.output_dim ({encoder.output_dim}) must equal decoder.hidden_dim ({decoder.hidden_dim})"
            )
        if encoder.cell != decoder.cell or encoder.num_layers != decoder.num_layers:
            raise ValueError(
                f"encoder ({encoder.cell}, {encoder.num_layers} layers) and decoder ({decoder.cell}, "
                f"{decoder.num_layers} layers) must share cell and layer count"
            )
        self.source_embedding = nn.Embedding(source_vocab_size, embed_dim, padding_idx=padding_idx)
        self.target_embedding = nn.Embedding(target_vocab_size, embed_dim, padding_idx=padding_idx)
        self.encoder, self.decoder = encoder, decoder
        dim = decoder.hidden_dim
        self.bridge = nn.Linear(dim, dim)
        self.bridge_cell = nn.Linear(dim, dim) if decoder.cell == "lstm" else None
        self.dropout = nn.Dropout(dropout)
        self.output = nn.Linear(decoder.output_dim, target_vocab_size)

    def encode(self, source_ids: torch.Tensor, source_mask: torch.Tensor) -> tuple[torch.Tensor, RNNState]:
        """source_ids, source_mask ``[B, S]`` -> ``(memory [B, S, D], decoder initial state [L, B, D])``."""
        if source_ids.dim() != 2 or source_mask.shape != source_ids.shape:
            raise ValueError(
                f"source_ids and source_mask must both be [B, S]; got {tuple(source_ids.shape)} "
                f"and {tuple(source_mask.shape)}"
            )
        embedded = self.dropout(self.source_embedding(source_ids))  # [B, S, E]
        memory, final = self.encoder(embedded, source_mask)  # [B, S, D], [L, B, D]
        if isinstance(final, tuple):
            return memory, (torch.tanh(self.bridge(final[0])), self.bridge_cell(final[1]))
        return memory, torch.tanh(self.bridge(final))

    def _state(self, memory: torch.Tensor, source_mask: torch.Tensor, hidden: RNNState, beams: int) -> RNNDecodingState:
        keys = attention_keys(self.decoder.attention, memory)  # [B, S, Dk] once per source
        if beams > 1:
            memory, source_mask = expand_for_beams(memory, beams), expand_for_beams(source_mask, beams)
            keys = None if keys is None else expand_for_beams(keys, beams)
            hidden = map_hidden(hidden, lambda h: h.repeat_interleave(beams, dim=1))  # [L, N, D]
        rows = source_mask.shape[0]
        attends = self.decoder.attention is not None
        return RNNDecodingState(
            hidden=hidden,
            feed=self.decoder.initial_feed(rows, memory),
            memory=memory if attends else None,
            keys=keys,
            memory_mask=source_mask,
            group_size=beams,
        )

    def forward(
        self,
        source_ids: torch.Tensor,
        source_mask: torch.Tensor,
        target_in: torch.Tensor,
        *,
        need_weights: bool = False,
    ) -> RNNSeq2SeqOutput:
        """Teacher forcing: source_ids ``[B, S]`` long, source_mask ``[B, S]`` bool (True = real token), target_in
        ``[B, T]`` long (``<bos> y1 .. yn`` then padding) -> logits ``[B, T, V]`` (and weights ``[B, T, S]`` if asked).
        """
        if target_in.dim() != 2 or target_in.shape[0] != source_ids.shape[0]:
            raise ValueError(f"target_in must be [B, T] with B = {source_ids.shape[0]}, got {tuple(target_in.shape)}")
        memory, hidden = self.encode(source_ids, source_mask)
        state = self._state(memory, source_mask, hidden, beams=1)
        embedded = self.dropout(self.target_embedding(target_in))  # [B, T, E]
        weights = None
        if isinstance(self.decoder, PlainDecoder):
            outputs = self.decoder(embedded, state)  # [B, T, D]
        else:
            steps, step_weights = [], []
            for t in range(target_in.shape[1]):
                out, w = self.decoder.step(embedded[:, t], state, need_weights=need_weights)
                state.step += 1
                steps.append(out)
                step_weights.append(w)
            outputs = torch.stack(steps, dim=1)  # [B, T, D]
            weights = torch.stack(step_weights, dim=1) if need_weights else None  # [B, T, S]
        return RNNSeq2SeqOutput(self.output(self.dropout(outputs)), weights)

    # ------------------------------------------------------------------------------------------- decoding
    def start_decoding(
        self, source_ids: torch.Tensor, source_mask: torch.Tensor, *, beams: int = 1, max_steps: int | None = None
    ) -> RNNDecodingState:
        """Encode once; the state has ``N = B·beams`` rows (``max_steps`` is not needed: nothing is preallocated)."""
        memory, hidden = self.encode(source_ids, source_mask)
        return self._state(memory, source_mask, hidden, beams)

    def decode_step(
        self, tokens: torch.Tensor, state: RNNDecodingState, *, need_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """tokens ``[N]`` -> ``(logits [N, V], attention weights [N, S] or None)``; advances ``state``."""
        embedded = self.dropout(self.target_embedding(tokens))  # [N, E]
        out, weights = self.decoder.step(embedded, state, need_weights=need_weights)  # [N, D], [N, S]
        state.step += 1
        return self.output(self.dropout(out)), weights if need_weights else None

    def reorder_state(self, state: RNNDecodingState, indices: torch.Tensor) -> None:
        """Row ``i`` continues from row ``indices[i]`` (indices stay within each source's beams)."""
        check_reorder_indices(indices, state.memory_mask.shape[0], state.group_size)
        state.reorder(indices)


def build_rnn_seq2seq(
    source_vocab_size: int,
    target_vocab_size: int,
    *,
    attention: str = "luong-general",
    cell: str = "gru",
    embed_dim: int = 128,
    hidden_dim: int = 256,
    num_layers: int = 1,
    bidirectional: bool = True,
    window: int = 10,
    local_score: str = "general",
    attention_dim: int | None = None,
    dropout: float = 0.2,
    padding_idx: int = 0,
) -> RNNSeq2Seq:
    """An :class:`RNNSeq2Seq` from plain options (what ``build_seq2seq`` and the CLI call).

    ``attention`` is one of :data:`ATTENTIONS`; ``hidden_dim`` is the decoder's state and the encoder's
    output size (``hidden_dim / 2`` per direction when bidirectional); ``dropout`` also applies between
    stacked recurrent layers.
    """
    encoder = RNNEncoder(
        embed_dim, hidden_dim, cell=cell, num_layers=num_layers, bidirectional=bidirectional, dropout=dropout
    )
    attend = build_rnn_attention(
        attention, hidden_dim, window=window, local_score=local_score, attention_dim=attention_dim
    )
    options = {"cell": cell, "num_layers": num_layers, "dropout": dropout}
    if attend is None:
        decoder: Decoder = PlainDecoder(embed_dim, hidden_dim, **options)
    elif attention == "bahdanau":
        decoder = BahdanauDecoder(embed_dim, hidden_dim, attend, **options)
    else:
        decoder = LuongDecoder(embed_dim, hidden_dim, attend, **options)
    return RNNSeq2Seq(
        source_vocab_size,
        target_vocab_size,
        encoder=encoder,
        decoder=decoder,
        embed_dim=embed_dim,
        dropout=dropout,
        padding_idx=padding_idx,
    )
