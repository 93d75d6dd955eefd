"""Transformer encoder-decoder (Vaswani et al. 2017) with cached incremental decoding (layer 4).

    model = TransformerSeq2Seq(src_vocab, tgt_vocab, dim=256, heads=4, encoder_layers=3, decoder_layers=3)
    out = model(batch.source_ids, batch.source_mask, batch.target_in, need_weights=True)
    out.logits               # [B, T, V]
    out.cross_attention[l]   # [B, H, T, S] decoder layer l over the source
    out.self_attention[l]    # [B, H, T, T] decoder layer l over earlier targets (causal)

The encoder stacks :class:`~attnkit.models.encoders.TransformerEncoderLayer`, the decoder
:class:`~attnkit.models.transformer.decoder.TransformerDecoderLayer` (a :class:`~attnkit.kv_cache.KVCache` when
decoding; cross-attention keys and values projected once per source). Embeddings are scaled by ``√D``; source and
target may share one table, and the output projection may be tied to the target embedding.

Shape glossary:
    B  batch (N = B·beams rows when decoding)   S  source positions   T  target positions
    D  model size   H  heads   Dh  head size D/H   V  target vocabulary   L  decoder layers
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from attnkit.decoding import check_reorder_indices, expand_for_beams
from attnkit.kv_cache import KVCache
from attnkit.models.dropout import Dropout
from attnkit.models.encoders import TransformerEncoderLayer, run_layers
from attnkit.models.transformer.decoder import MemoryKV, TransformerDecoderLayer, attend_memory, project_memory
from attnkit.models.transformer.fast_step import FastStepWeights, fast_decode_step, fast_step_weights
from attnkit.models.transformer.positions import POSITION_SCHEMES, SINUSOIDAL, PositionScheme, position_scheme

__all__ = [
    "POSITIONS",
    "TransformerDecoderLayer",
    "TransformerDecodingState",
    "TransformerSeq2Seq",
    "TransformerSeq2SeqOutput",
    "attend_memory",
    "build_transformer_seq2seq",
    "project_memory",
]

POSITIONS = tuple(POSITION_SCHEMES)  # the names configs and the CLI store


@dataclass
class TransformerSeq2SeqOutput:
    """``logits [B, T, V]``; with ``need_weights``, per layer ``cross_attention [B, H, T, S]``,
    ``self_attention [B, H, T, T]`` (decoder) and ``encoder_attention [B, H, S, S]``."""

    logits: torch.Tensor
    cross_attention: list[torch.Tensor] = field(default_factory=list)
    self_attention: list[torch.Tensor] = field(default_factory=list)
    encoder_attention: list[torch.Tensor] = field(default_factory=list)


@dataclass
class TransformerDecodingState:
    """Per decoder layer a :class:`KVCache` and the source's cross-attention keys/values ``[N, H, S, Dh]``.

    Also what every step would otherwise rebuild: ``step_memory_mask`` is ``memory_mask``, or None when every
    source position is real (nothing to mask), and ``output_weight_t`` the output projection's weight as a
    contiguous ``[D, V]`` (``h @ W_t`` reads it in order, faster than ``F.linear`` on one row per hypothesis).
    Both are taken at :meth:`TransformerSeq2Seq.start_decoding`: change the weights, start again. ``fast``: the
    decoder's weights laid out for :func:`~attnkit.models.transformer.fast_step.fast_decode_step` (the fast path
    of a step without weights), None where it does not apply.
    """

    caches: list[KVCache]
    memory_kv: list[MemoryKV]
    memory_mask: torch.Tensor  # [N, S]
    group_size: int = 1
    step: int = 0
    step_memory_mask: torch.Tensor | None = None  # [N, S], None if all True
    output_weight_t: torch.Tensor | None = None  # [D, V]
    output_bias: torch.Tensor | None = None  # [V]
    fast: FastStepWeights | None = None


def _check_options(
    positions: PositionScheme, dim: int, heads: int, share_embeddings: bool, source_vocab: int, target_vocab: int
) -> None:
    """Refuse the options a :class:`TransformerSeq2Seq` cannot be built with, naming them."""
    if not isinstance(positions, PositionScheme):
        raise TypeError(f"positions must be a PositionScheme (position_scheme(name) maps a name), got {positions!r}")
    if dim % heads:
        raise ValueError(f"dim={dim} is not divisible by heads={heads}")
    if share_embeddings and source_vocab != target_vocab:
        raise ValueError(
            f"share_embeddings needs one vocabulary; got source_vocab_size={source_vocab}, "
            f"target_vocab_size={target_vocab}"
        )


class TransformerSeq2Seq(nn.Module):
    """Encoder-decoder Transformer; ``forward`` for teacher forcing, ``start_decoding``/``decode_step`` for inference.

    Id ``padding_idx`` is padding; ``dropout`` is on embeddings and residual branches; ``norm_first`` (default)
    adds final LayerNorms on both stacks. ``positions`` is a
    :class:`~attnkit.models.transformer.positions.PositionScheme`: ``SINUSOIDAL`` (default), ``LEARNED`` (up to
    ``max_len`` positions) or ``ROTARY`` (every self-attention; :func:`build_transformer_seq2seq` maps a name).
    ``share_embeddings`` needs equal vocabulary sizes; ``tie_output`` reuses the target embedding matrix.
    """

    def __init__(
        self,
        source_vocab_size: int,
        target_vocab_size: int,
        *,
        dim: int = 256,
        heads: int = 4,
        encoder_layers: int = 3,
        decoder_layers: int = 3,
        ff_dim: int | None = None,
        dropout: float = 0.1,
        attention_dropout: float = 0.0,
        norm_first: bool = True,
        positions: PositionScheme = SINUSOIDAL,
        max_len: int = 1024,
        share_embeddings: bool = False,
        tie_output: bool = True,
        padding_idx: int = 0,
    ) -> None:
        super().__init__()
        _check_options(positions, dim, heads, share_embeddings, source_vocab_size, target_vocab_size)
        self.dim, self.heads, self.position_scheme = dim, heads, positions
        self.source_embedding = nn.Embedding(source_vocab_size, dim, padding_idx=padding_idx)
        self.target_embedding = (
            self.source_embedding if share_embeddings else nn.Embedding(target_vocab_size, dim, padding_idx=padding_idx)
        )
        for embedding in {id(e): e for e in (self.source_embedding, self.target_embedding)}.values():
            nn.init.normal_(embedding.weight, std=dim**-0.5)  # unit variance after the √D scale
            with torch.no_grad():
                embedding.weight[padding_idx].zero_()
        self.embed_scale = math.sqrt(dim)
        self.source_positions, self.target_positions = positions.added(dim, max_len)

        def layer_options() -> dict:  # each layer gets its own rotary module
            return {
                "ff_dim": ff_dim,
                "dropout": dropout,
                "attention_dropout": attention_dropout,
                "norm_first": norm_first,
                "rotary": positions.rotary(dim // heads),
            }

        self.encoder_layers = nn.ModuleList(
            TransformerEncoderLayer(dim, heads, **layer_options()) for _ in range(encoder_layers)
        )
        self.decoder_layers = nn.ModuleList(
            TransformerDecoderLayer(dim, heads, **layer_options()) for _ in range(decoder_layers)
        )
        self.encoder_norm = nn.LayerNorm(dim) if norm_first else nn.Identity()
        self.decoder_norm = nn.LayerNorm(dim) if norm_first else nn.Identity()
        self.dropout = Dropout(dropout)
        self.output = nn.Linear(dim, target_vocab_size, bias=False)
        if tie_output:
            self.output.weight = self.target_embedding.weight

    def _embed(self, ids: torch.Tensor, embedding: nn.Embedding, positions: nn.Module | None, offset: int):
        x = embedding(ids) * self.embed_scale  # [B, T, D]
        if positions is not None:
            x = positions(x, offset=offset)
        return self.dropout(x)

    def encode(
        self, source_ids: torch.Tensor, source_mask: torch.Tensor, *, need_weights: bool = False
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """source_ids, source_mask ``[B, S]`` -> ``(memory [B, S, D], per-layer weights [B, H, S, S] if asked)``."""
        if source_ids.dim() != 2 or source_mask.shape != source_ids.shape:
            raise ValueError(
                f"source_ids and source_mask must both be [B, S]; got {tuple(source_ids.shape)} "
                f"and {tuple(source_mask.shape)}"
            )
        x = self._embed(source_ids, self.source_embedding, self.source_positions, 0)
        x, all_weights = run_layers(self.encoder_layers, x, source_mask, need_weights)  # [B, S, D]
        return self.encoder_norm(x), all_weights

    def forward(
        self,
        source_ids: torch.Tensor,
        source_mask: torch.Tensor,
        target_in: torch.Tensor,
        *,
        need_weights: bool = False,
    ) -> TransformerSeq2SeqOutput:
        """Teacher forcing, every target position at once under the causal mask: source_ids ``[B, S]`` long,
        source_mask ``[B, S]`` bool (True = real token), target_in ``[B, T]`` long (``<bos> y1 .. yn`` then padding,
        which no real position attends to) -> logits ``[B, T, V]`` and, with ``need_weights``, every layer's weights.
        """
        if target_in.dim() != 2 or target_in.shape[0] != source_ids.shape[0]:
            raise ValueError(f"target_in must be [B, T] with B = {source_ids.shape[0]}, got {tuple(target_in.shape)}")
        memory, encoder_weights = self.encode(source_ids, source_mask, need_weights=need_weights)
        x = self._embed(target_in, self.target_embedding, self.target_positions, 0)  # [B, T, D]
        output = TransformerSeq2SeqOutput(logits=x, encoder_attention=encoder_weights)
        for layer in self.decoder_layers:
            x, self_weights, cross_weights = layer(
                x, layer.project_memory(memory), source_mask, need_weights=need_weights
            )
            if need_weights:
                output.self_attention.append(self_weights)
                output.cross_attention.append(cross_weights)
        output.logits = self.output(self.decoder_norm(x))  # [B, T, V]
        return output

    # ------------------------------------------------------------------------------------------- decoding
    def start_decoding(
        self, source_ids: torch.Tensor, source_mask: torch.Tensor, *, beams: int = 1, max_steps: int
    ) -> TransformerDecodingState:
        """Encode once, project every layer's cross-attention keys/values once, allocate ``max_steps`` of cache."""
        memory, _ = self.encode(source_ids, source_mask)  # [B, S, D]
        rows = source_ids.shape[0] * beams
        memory_kv = [
            tuple(expand_for_beams(t, beams) for t in layer.project_memory(memory)) for layer in self.decoder_layers
        ]  # per layer ([N, H, S, Dh], [N, H, S, Dh])
        caches = [
            KVCache(rows, max_steps, self.heads, self.dim // self.heads, dtype=memory.dtype, device=memory.device)
            for _ in self.decoder_layers
        ]
        memory_mask = expand_for_beams(source_mask, beams)  # [N, S]
        fast = fast_step_weights(self)
        if fast is not None:  # SDPA reads contiguous keys and values faster
            memory_kv = [(keys.contiguous(), values.contiguous()) for keys, values in memory_kv]
        float_output = fast is None and isinstance(self.output.weight, torch.Tensor)  # False: int8 or fast
        return TransformerDecodingState(
            caches,
            memory_kv,
            memory_mask,
            group_size=beams,
            step_memory_mask=None if bool(memory_mask.all()) else memory_mask,
            output_weight_t=self.output.weight.t().contiguous() if float_output else None,  # [D, V]
            output_bias=self.output.bias if float_output else None,
            fast=fast,
        )

    def decode_step(
        self, tokens: torch.Tensor, state: TransformerDecodingState, *, need_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """tokens ``[N]`` -> ``(logits [N, V], cross-attention weights [N, L, H, S] or None)``; advances ``state``.

        Without weights, :func:`~attnkit.models.transformer.fast_step.fast_decode_step` on the weights laid out at
        :meth:`start_decoding` (``state.fast``), or where that does not apply every layer's
        :meth:`TransformerDecoderLayer.decode_token` (the modules' one-token path, the fast step's reference); with
        weights, the layers' ``forward``, which computes them.
        """
        x = self._embed(tokens[:, None], self.target_embedding, self.target_positions, state.step)  # [N, 1, D]
        if state.fast is not None and not need_weights:
            state.step += 1
            return fast_decode_step(state.fast, x[:, 0], state.caches, state.memory_kv, state.step_memory_mask), None
        layers = zip(self.decoder_layers, state.caches, state.memory_kv, strict=True)
        cross = []
        if need_weights:
            for layer, cache, memory_kv in layers:
                x, _, cross_weights = layer(x, memory_kv, state.step_memory_mask, cache=cache, need_weights=True)
                cross.append(cross_weights)
            x = x[:, 0]  # [N, D]
        else:
            x = x[:, 0]  # [N, D]
            for layer, cache, memory_kv in layers:
                x = layer.decode_token(x, memory_kv, state.step_memory_mask, cache)  # [N, D]
        state.step += 1
        hidden = self.decoder_norm(x)  # [N, D]
        if state.output_weight_t is None:
            logits = self.output(hidden)  # [N, V]
        elif state.output_bias is None:
            logits = hidden @ state.output_weight_t
        else:
            logits = torch.addmm(state.output_bias, hidden, state.output_weight_t)
        weights = torch.stack(cross, dim=1)[:, :, :, 0] if need_weights else None  # [N, L, H, S]
        return logits, weights

    def reorder_state(self, state: TransformerDecodingState, indices: torch.Tensor) -> None:
        """Row ``i`` continues from row ``indices[i]``: every layer's :meth:`KVCache.reorder`."""
        check_reorder_indices(indices, state.memory_mask.shape[0], state.group_size)
        for cache in state.caches:
            cache.reorder(indices)


def build_transformer_seq2seq(
    source_vocab_size: int,
    target_vocab_size: int,
    *,
    dim: int = 256,
    heads: int = 4,
    encoder_layers: int = 3,
    decoder_layers: int = 3,
    ff_dim: int | None = None,
    dropout: float = 0.1,
    attention_dropout: float = 0.0,
    norm_first: bool = True,
    positions: str = "sinusoidal",
    max_len: int = 1024,
    share_embeddings: bool = False,
    tie_output: bool = True,
    padding_idx: int = 0,
) -> TransformerSeq2Seq:
    """A :class:`TransformerSeq2Seq` from JSON-ready options (what configs store): the same options, with
    ``positions`` a name (``"sinusoidal"``, ``"learned"``, ``"rotary"``) mapped to its scheme here, once.

    Raises:
        ValueError: an unknown ``positions`` name, or options the model refuses.
    """
    return TransformerSeq2Seq(
        source_vocab_size,
        target_vocab_size,
        dim=dim,
        heads=heads,
        encoder_layers=encoder_layers,
        decoder_layers=decoder_layers,
        ff_dim=ff_dim,
        dropout=dropout,
        attention_dropout=attention_dropout,
        norm_first=norm_first,
        positions=position_scheme(positions),
        max_len=max_len,
        share_embeddings=share_embeddings,
        tie_output=tie_output,
        padding_idx=padding_idx,
    )
