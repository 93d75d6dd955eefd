"""An ensemble of trained sequence-to-sequence models that decodes as one (layer 4).

    ensemble = Seq2SeqEnsemble([rnn_model, transformer_model])   # same target vocabulary, any families
    out = beam_search(ensemble, source_ids, source_mask, beam_size=5)

At every step the members' next-token distributions are averaged, ``p(y) = (1/M) Σ_m p_m(y)``, and the
ensemble's "logits" are ``log p(y)`` (already normalised, so ``log_softmax`` leaves them unchanged and the usual
greedy/beam scores are the ensemble's log-probabilities). Averaging probabilities rather than log-probabilities
is the classic choice for neural MT and G2P ensembles (e.g. Toshniwal & Livescu 2016): a token one member rules
out is not vetoed by it. ``forward`` averages the teacher-forced distributions the same way, so the loss of an
ensemble is comparable with its members'. Members keep their own decoding states, stepped and reordered in
lock-step. An ensemble has no single attention map: asking for weights gives ``None``.

Shape glossary: B batch, S source positions, T target positions, N decoder rows (B·beams), V target vocabulary,
M members.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["EnsembleDecodingState", "Seq2SeqEnsemble", "Seq2SeqEnsembleOutput", "mean_distribution_log"]


@dataclass
class Seq2SeqEnsembleOutput:
    """``logits [B, T, V]``: the log of the members' mean distribution at every position."""

    logits: torch.Tensor


@dataclass
class EnsembleDecodingState:
    """Each member's own decoding state, in member order."""

    states: list[Any]


def mean_distribution_log(logits: Sequence[torch.Tensor]) -> torch.Tensor:
    """``log((1/M) Σ_m softmax(logits_m))`` over the last dim: M tensors ``[..., V]`` -> ``[..., V]`` (float32 or
    wider; computed with ``logsumexp``, so a token every member gives -inf stays -inf and nothing overflows)."""
    log_probs = torch.stack([F.log_softmax(x.float(), dim=-1) for x in logits])  # [M, ..., V]
    return torch.logsumexp(log_probs, dim=0) - math.log(len(logits))


class Seq2SeqEnsemble(nn.Module):
    """Several seq2seq models over one target vocabulary, decoding as one.

    Each member is a :class:`~attnkit.decoding.StepwiseSeq2Seq` whose ``forward`` returns ``.logits [B, T, V]``
    (RNN and Transformer models may be mixed), all with the same ``V``; tokenisation is the caller's business
    (:func:`attnkit.tasks.seq2seq.inference.load_seq2seq_ensemble` checks it).
    """

    def __init__(self, models: Sequence[nn.Module]) -> None:
        super().__init__()
        if len(models) < 1:
            raise ValueError("an ensemble needs at least one model")
        self.members = nn.ModuleList(models)

    def forward(
        self, source_ids: torch.Tensor, source_mask: torch.Tensor, target_in: torch.Tensor
    ) -> Seq2SeqEnsembleOutput:
        """Teacher forcing: source ``[B, S]``, target_in ``[B, T]`` -> ``.logits [B, T, V]`` (log mean probs)."""
        logits = [member(source_ids, source_mask, target_in).logits for member in self.members]  # M x [B, T, V]
        self._check_vocabularies(logits)
        return Seq2SeqEnsembleOutput(mean_distribution_log(logits))

    def start_decoding(
        self, source_ids: torch.Tensor, source_mask: torch.Tensor, *, beams: int = 1, max_steps: int
    ) -> EnsembleDecodingState:
        """Every member encodes the sources once (``N = B·beams`` decoder rows each)."""
        return EnsembleDecodingState(
            [m.start_decoding(source_ids, source_mask, beams=beams, max_steps=max_steps) for m in self.members]
        )

    def decode_step(
        self, tokens: torch.Tensor, state: EnsembleDecodingState, *, need_weights: bool = False
    ) -> tuple[torch.Tensor, None]:
        """tokens ``[N]`` -> ``(log mean probs [N, V], None)``; advances every member's state."""
        logits = [m.decode_step(tokens, s)[0] for m, s in zip(self.members, state.states, strict=True)]  # M x [N, V]
        self._check_vocabularies(logits)
        return mean_distribution_log(logits), None

    def reorder_state(self, state: EnsembleDecodingState, indices: torch.Tensor) -> None:
        """Row ``i`` of every member continues from row ``indices[i]``."""
        for member, member_state in zip(self.members, state.states, strict=True):
            member.reorder_state(member_state, indices)

    @staticmethod
    def _check_vocabularies(logits: Sequence[torch.Tensor]) -> None:
        sizes = sorted({x.shape[-1] for x in logits})
        if len(sizes) > 1:
            raise ValueError(f"the ensemble's members predict different vocabulary sizes {sizes}")
