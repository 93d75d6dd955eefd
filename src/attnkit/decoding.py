"""Greedy and beam-search decoding for any encoder-decoder that can take one step at a time (layer 4).

Both model families (:class:`~attnkit.models.rnn_seq2seq.RNNSeq2Seq`,
:class:`~attnkit.models.transformer.seq2seq.TransformerSeq2Seq`) implement the small
:class:`StepwiseSeq2Seq` interface::

    state = model.start_decoding(source_ids, source_mask, beams=k, max_steps=L)  # encode once, N = B·k rows
    logits, weights = model.decode_step(tokens, state)                         # one token per row -> [N, V]
    model.reorder_state(state, indices)                                        # rows follow their beams

The Transformer's state holds a :class:`~attnkit.kv_cache.KVCache` per layer and cross-attention keys and
values projected once per source; the RNN's holds its recurrent state. :class:`Recompute` is the slow,
readable reference that runs the model's full teacher-forced ``forward`` over the whole prefix at every step;
tests prove both give the same tokens and scores.

Hypotheses are scored by ``log P(y) / length ** length_penalty`` (``length`` counts ``<eos>``;
``length_penalty=0`` ranks by raw log-probability, ``1`` by mean log-probability per token). The beam search's
live and finished hypotheses are kept by :mod:`attnkit._beams`.

Shape glossary:
    B  sources in the batch   K  hypotheses returned per source (beam size)   N  decoder rows = B·K
    S  source positions   T  decoded steps   V  target vocabulary   W  the model's per-step weight dims
    (``S`` for the RNN, ``L, H, S`` — layers, heads, source — for the Transformer)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import torch
import torch.nn.functional as F

from attnkit._beams import Beams, Hypothesis, normalise

__all__ = [
    "DEFAULT_BOS_ID",
    "DEFAULT_EOS_ID",
    "DEFAULT_PAD_ID",
    "DecodeOutput",
    "Recompute",
    "StepwiseSeq2Seq",
    "beam_search",
    "check_reorder_indices",
    "decode",
    "default_max_len",
    "expand_for_beams",
    "greedy",
]

# attnkit's shared special ids (see attnkit.data.seq2seq.vocab; repeated here so layer 4 does not import layer 5)
DEFAULT_PAD_ID, DEFAULT_BOS_ID, DEFAULT_EOS_ID = 0, 1, 2


@runtime_checkable
class StepwiseSeq2Seq(Protocol):
    """What :func:`greedy` and :func:`beam_search` need from a model.

    ``start_decoding`` encodes each source once and returns an opaque state for ``N = B·beams`` decoder rows
    (rows ``b·beams .. b·beams + beams - 1`` belong to source ``b``). ``decode_step`` feeds one token per row,
    advances the state in place and returns ``(logits [N, V], weights [N, *W] or None)``. ``reorder_state``
    makes row ``i`` continue from row ``indices[i]``; indices never leave a source's group of rows.
    """

    def start_decoding(
        self, source_ids: torch.Tensor, source_mask: torch.Tensor, *, beams: int = 1, max_steps: int
    ) -> Any: ...

    def decode_step(
        self, tokens: torch.Tensor, state: Any, *, need_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]: ...

    def reorder_state(self, state: Any, indices: torch.Tensor) -> None: ...


def expand_for_beams(x: torch.Tensor, beams: int) -> torch.Tensor:
    """Repeat each batch row ``beams`` times in place order: ``[B, ...] -> [B·beams, ...]``."""
    if beams < 1:
        raise ValueError(f"beams must be >= 1, got {beams}")
    return x if beams == 1 else x.repeat_interleave(beams, dim=0)


def check_reorder_indices(indices: torch.Tensor, rows: int, group_size: int) -> torch.Tensor:
    """Check that ``indices [N]`` (long) keeps every row inside its source's group of ``group_size`` rows.

    Source-side tensors (encoder outputs, projected cross-attention keys) are shared by a group and are
    therefore never gathered; only the per-hypothesis state is.
    """
    if indices.dim() != 1 or indices.shape[0] != rows:
        raise ValueError(f"indices must have shape [N] = [{rows}], got {tuple(indices.shape)}")
    if indices.dtype != torch.long:
        raise ValueError(f"indices must be a long tensor, got dtype {indices.dtype}")
    own_group = torch.arange(rows, device=indices.device) // group_size
    if not bool((indices // group_size == own_group).all()):
        raise ValueError(f"indices must stay within each source's group of {group_size} rows, got {indices.tolist()}")
    return indices


def default_max_len(source_mask: torch.Tensor) -> int:
    """``2 · S + 10`` steps, with ``S`` the longest real source in the batch."""
    return 2 * int(source_mask.sum(dim=1).max()) + 10 if source_mask.numel() else 10


@dataclass
class DecodeOutput:
    """Hypotheses per source, best first.

    Attributes:
        tokens: ``[B, K, T]`` long: each hypothesis's tokens, ending in ``<eos>`` when it finished, then ``<pad>``.
        lengths: ``[B, K]`` tokens generated (``<eos>`` included).
        scores: ``[B, K]`` normalised scores ``log_probs / lengths ** length_penalty``, sorted descending.
            ``-inf`` marks a filler slot (a source with fewer than ``K`` possible hypotheses).
        log_probs: ``[B, K]`` summed token log-probabilities.
        finished: ``[B, K]`` bool, True where the hypothesis ended with ``<eos>`` (False: cut at ``max_len``).
        attention: ``[B, K, T, *W]`` the model's per-step weights (``need_weights=True`` and a model that
            attends), zero after each hypothesis's last step; else None.
    """

    tokens: torch.Tensor
    lengths: torch.Tensor
    scores: torch.Tensor
    log_probs: torch.Tensor
    finished: torch.Tensor
    attention: torch.Tensor | None = None

    @property
    def best(self) -> torch.Tensor:
        """The best hypothesis of each source: ``[B, T]``."""
        return self.tokens[:, 0]


def _check_inputs(source_ids: torch.Tensor, source_mask: torch.Tensor, max_len: int | None) -> int:
    if source_ids.dim() != 2 or source_mask.shape != source_ids.shape:
        raise ValueError(
            f"source_ids and source_mask must both be [B, S]; got {tuple(source_ids.shape)} and "
            f"{tuple(source_mask.shape)}"
        )
    if source_mask.dtype != torch.bool:
        raise ValueError(f"source_mask must be a torch.BoolTensor (True = real token), got {source_mask.dtype}")
    max_len = default_max_len(source_mask) if max_len is None else max_len
    if max_len < 1:
        raise ValueError(f"max_len must be >= 1, got {max_len}")
    return max_len


@torch.no_grad()
def greedy(
    model: StepwiseSeq2Seq,
    source_ids: torch.Tensor,
    source_mask: torch.Tensor,
    *,
    max_len: int | None = None,
    length_penalty: float = 1.0,
    need_weights: bool = False,
    bos_id: int = DEFAULT_BOS_ID,
    eos_id: int = DEFAULT_EOS_ID,
    pad_id: int = DEFAULT_PAD_ID,
) -> DecodeOutput:
    """The most probable next token at every step, for the whole batch at once, until every row has ``<eos>``.

    ``source_ids`` ``[B, S]`` long, ``source_mask`` ``[B, S]`` bool (True = real token) -> :class:`DecodeOutput`
    with ``K = 1``. ``max_len`` counts ``<eos>`` (default :func:`default_max_len`). Put the model in eval mode
    first: dropout would make decoding random.
    """
    max_len = _check_inputs(source_ids, source_mask, max_len)
    batch, device = source_ids.shape[0], source_ids.device
    state = model.start_decoding(source_ids, source_mask, beams=1, max_steps=max_len)
    tokens = torch.full((batch,), bos_id, dtype=torch.long, device=device)  # [B]
    out = torch.full((batch, max_len), pad_id, dtype=torch.long, device=device)  # [B, T]
    log_probs = torch.zeros(batch, device=device)
    lengths = torch.zeros(batch, dtype=torch.long, device=device)
    finished = torch.zeros(batch, dtype=torch.bool, device=device)
    steps_weights = []
    steps = 0
    for t in range(max_len):
        logits, weights = model.decode_step(tokens, state, need_weights=need_weights)  # [B, V], [B, *W]
        step_log_probs = F.log_softmax(logits.float(), dim=-1)  # [B, V]
        best_log_prob, best = step_log_probs.max(dim=-1)  # [B] (one pass, cheaper than topk(1))
        log_probs += torch.where(finished, 0.0, best_log_prob)
        lengths += (~finished).long()
        tokens = torch.where(finished, pad_id, best)
        out[:, t] = tokens
        if weights is not None:
            steps_weights.append(weights)
        finished |= tokens == eos_id
        steps = t + 1
        if bool(finished.all()):
            break
    attention = _greedy_attention(steps_weights, lengths) if need_weights and steps_weights else None
    return DecodeOutput(
        tokens=out[:, None, :steps],  # [B, 1, T]
        lengths=lengths[:, None],
        scores=normalise(log_probs, lengths, length_penalty)[:, None],
        log_probs=log_probs[:, None],
        finished=finished[:, None],
        attention=attention,
    )


def _greedy_attention(steps_weights: list[torch.Tensor], lengths: torch.Tensor) -> torch.Tensor:
    """Greedy's per-step weights ``[B, *W]`` stacked as ``[B, 1, T, *W]``, zero after each row's ``<eos>``."""
    attention = torch.stack(steps_weights, dim=1)[:, None]  # [B, 1, T, *W]
    batch, steps = attention.shape[0], attention.shape[2]
    keep = torch.arange(steps, device=attention.device) < lengths[:, None]  # [B, T]
    return attention * keep.view(batch, 1, steps, *([1] * (attention.dim() - 3))).to(attention.dtype)


@torch.no_grad()
def beam_search(
    model: StepwiseSeq2Seq,
    source_ids: torch.Tensor,
    source_mask: torch.Tensor,
    *,
    beam_size: int = 4,
    max_len: int | None = None,
    length_penalty: float = 1.0,
    need_weights: bool = False,
    bos_id: int = DEFAULT_BOS_ID,
    eos_id: int = DEFAULT_EOS_ID,
    pad_id: int = DEFAULT_PAD_ID,
) -> DecodeOutput:
    """Batched beam search: ``beam_size`` live hypotheses per source, best ``beam_size`` finished ones returned.

    At each step every live hypothesis proposes its ``2k`` best tokens; of the ``2k`` best candidates per
    source, those ending in ``<eos>`` among the top ``k`` are finished (scored with the length normalisation)
    and the ``k`` best others stay live. A source is done once it holds ``k`` finished hypotheses (as in
    fairseq); decoding stops when every source is done or after ``max_len`` tokens, when the live hypotheses
    are returned unfinished. ``beam_size=1`` is exactly :func:`greedy`.

    ``source_ids`` ``[B, S]`` long, ``source_mask`` ``[B, S]`` bool (True = real token) -> :class:`DecodeOutput`
    with ``K = beam_size``, sorted by normalised score ``log P / length^α`` (``α = length_penalty >= 0``).
    """
    if beam_size < 1:
        raise ValueError(f"beam_size must be >= 1, got {beam_size}")
    if length_penalty < 0:
        raise ValueError(f"length_penalty must be >= 0, got {length_penalty}")
    max_len = _check_inputs(source_ids, source_mask, max_len)
    k, batch = beam_size, source_ids.shape[0]
    state = model.start_decoding(source_ids, source_mask, beams=k, max_steps=max_len)
    beams = Beams.start(batch, k, max_len, bos_id=bos_id, pad_id=pad_id, device=source_ids.device)
    hypotheses: list[list[Hypothesis]] = [[] for _ in range(batch)]
    for t in range(max_len):
        logits, weights = model.decode_step(beams.tokens, state, need_weights=need_weights)  # [N, V], [N, *W]
        if need_weights and weights is not None:
            beams.add_weights(weights)
        candidates = beams.candidates(F.log_softmax(logits.float(), dim=-1), eos_id)  # [B, 2k] each
        done = [len(found) >= k for found in hypotheses]  # a source holding k finished ones takes no more
        for b, finished in beams.finish(candidates, t, length_penalty, skip=done):
            hypotheses[b].append(finished)
        indices = beams.advance(candidates, t)
        if all(len(found) >= k for found in hypotheses) or t == max_len - 1:
            break
        model.reorder_state(state, indices)
    for b in range(batch):  # sources cut at max_len: their best live hypotheses, unfinished
        hypotheses[b] += beams.unfinished(b, k - len(hypotheses[b]), t + 1, length_penalty)
    return _collect(hypotheses, k, pad_id, source_ids.device, need_weights)


def decode(
    model: StepwiseSeq2Seq,
    source_ids: torch.Tensor,
    source_mask: torch.Tensor,
    *,
    beam_size: int = 1,
    max_len: int | None = None,
    length_penalty: float = 1.0,
) -> DecodeOutput:
    """:func:`greedy` when ``beam_size`` is 1, else :func:`beam_search`: ``source_ids`` ``[B, S]`` long,
    ``source_mask`` ``[B, S]`` bool (True = real token) -> :class:`DecodeOutput` with ``K = beam_size``."""
    options = {"max_len": max_len, "length_penalty": length_penalty}
    if beam_size == 1:
        return greedy(model, source_ids, source_mask, **options)
    return beam_search(model, source_ids, source_mask, beam_size=beam_size, **options)


def _collect(
    hypotheses: list[list[Hypothesis]], k: int, pad_id: int, device: torch.device, need_weights: bool
) -> DecodeOutput:
    """Sort each source's hypotheses by score and pack the best ``k`` into a :class:`DecodeOutput`."""
    batch = len(hypotheses)
    ranked = [sorted(hyps, key=lambda h: h.score, reverse=True)[:k] for hyps in hypotheses]
    width = max((len(h.tokens) for hyps in ranked for h in hyps), default=1)
    tokens = torch.full((batch, k, width), pad_id, dtype=torch.long, device=device)
    lengths = torch.zeros(batch, k, dtype=torch.long, device=device)
    scores = torch.full((batch, k), float("-inf"), device=device)
    log_probs = torch.full((batch, k), float("-inf"), device=device)
    finished = torch.zeros(batch, k, dtype=torch.bool, device=device)
    attention = None
    sample = next((h.weights for hyps in ranked for h in hyps if h.weights is not None), None)
    if need_weights and sample is not None:
        attention = sample.new_zeros(batch, k, width, *sample.shape[1:])  # [B, K, T, *W]
    for b, hyps in enumerate(ranked):
        for i, h in enumerate(hyps):
            n = len(h.tokens)
            tokens[b, i, :n] = h.tokens
            lengths[b, i], scores[b, i], log_probs[b, i], finished[b, i] = n, h.score, h.log_prob, h.finished
            if attention is not None and h.weights is not None:
                attention[b, i, :n] = h.weights[:n]
    return DecodeOutput(tokens, lengths, scores, log_probs, finished, attention)


@dataclass
class _RecomputeState:
    source_ids: torch.Tensor  # [N, S]
    source_mask: torch.Tensor  # [N, S]
    prefix: torch.Tensor  # [N, t]
    group_size: int


class Recompute:
    """The slow reference decoder: runs ``model(source_ids, source_mask, prefix)`` over the whole prefix each step.

    Wraps any model whose ``forward(source_ids, source_mask, target_in)`` returns an object with ``logits
    [B, T, V]`` (both attnkit seq2seq families). No cache, no recurrent state: what cached decoding must equal.
    """

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model

    def start_decoding(
        self, source_ids: torch.Tensor, source_mask: torch.Tensor, *, beams: int = 1, max_steps: int
    ) -> _RecomputeState:
        """Keep the expanded sources and an empty prefix ``[N, 0]``."""
        empty = source_ids.new_zeros(source_ids.shape[0] * beams, 0)
        return _RecomputeState(expand_for_beams(source_ids, beams), expand_for_beams(source_mask, beams), empty, beams)

    def decode_step(
        self, tokens: torch.Tensor, state: _RecomputeState, *, need_weights: bool = False
    ) -> tuple[torch.Tensor, None]:
        """Append ``tokens [N]`` to the prefix and return the last position's logits ``[N, V]``."""
        if need_weights:
            raise ValueError("Recompute does not collect attention weights; decode the model itself for those")
        state.prefix = torch.cat([state.prefix, tokens[:, None]], dim=1)  # [N, t + 1]
        return self.model(state.source_ids, state.source_mask, state.prefix).logits[:, -1], None

    def reorder_state(self, state: _RecomputeState, indices: torch.Tensor) -> None:
        """Gather the prefixes of the surviving hypotheses."""
        check_reorder_indices(indices, state.prefix.shape[0], state.group_size)
        state.prefix = state.prefix[indices]
