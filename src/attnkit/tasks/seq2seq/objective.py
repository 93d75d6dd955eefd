"""Sequence-to-sequence training and evaluation for :func:`attnkit.training.loop.fit` (layer 5): the loss and the
decoded metrics.

Training minimises label-smoothed cross-entropy; with a ``teacher`` (token-level distillation, Hinton et al. 2015,
Kim & Rush 2016), a weighted mix of it and :func:`distribution_matching_loss`. Evaluation decodes every source and
scores the text with a :class:`~attnkit.tasks.seq2seq.scoring.Scoring` (``"sequence"``: wer, per, exact_match;
``"text"``: bleu, chrf), plus the teacher-forced ``loss``, ``token_accuracy`` and ``count``.

Under DDP, ``evaluate_sums`` returns additive statistics only (token counts, edit counts, BLEU/chrF sufficient
statistics), summed over ranks before ``metrics_from_sums``: N ranks report exactly the metrics of one.

Shape glossary:
    B  pairs   S  source positions   T  target positions   V  target vocabulary
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from attnkit.data.seq2seq import PAD_ID, Seq2SeqBatch
from attnkit.decoding import DecodeOutput, decode
from attnkit.tasks.seq2seq.metrics import bleu_from_statistics, bleu_statistics, chrf_from_statistics, chrf_statistics
from attnkit.tasks.seq2seq.scoring import SEQUENCE, Scoring

__all__ = ["Seq2SeqObjective", "distribution_matching_loss", "label_smoothed_loss", "sacrebleu_score", "sacrebleu_sums"]


def label_smoothed_loss(
    logits: torch.Tensor, targets: torch.Tensor, *, smoothing: float = 0.1, pad_id: int = PAD_ID
) -> torch.Tensor:
    """Mean label-smoothed cross-entropy over the non-padding targets: logits ``[B, T, V]``, targets ``[B, T]``."""
    if logits.shape[:2] != targets.shape:
        raise ValueError(f"logits [B, T, V] {tuple(logits.shape)} and targets [B, T] {tuple(targets.shape)} disagree")
    if not 0.0 <= smoothing < 1.0:
        raise ValueError(f"smoothing must lie in [0, 1), got {smoothing}")
    return F.cross_entropy(
        logits.flatten(0, 1).float(), targets.flatten(), ignore_index=pad_id, label_smoothing=smoothing
    )


def distribution_matching_loss(
    logits: torch.Tensor, teacher_logits: torch.Tensor, targets: torch.Tensor, *, pad_id: int = PAD_ID
) -> torch.Tensor:
    """Mean over the real target positions of ``-Σ_v p_teacher(v) log p_student(v)`` (KL plus a constant).

    logits, teacher_logits ``[B, T, V]`` (the teacher's may be log probabilities: both go through a softmax),
    targets ``[B, T]`` (``pad_id`` positions are not counted).
    """
    if logits.shape != teacher_logits.shape or logits.shape[:2] != targets.shape:
        raise ValueError(
            f"logits [B, T, V] {tuple(logits.shape)}, teacher_logits {tuple(teacher_logits.shape)} and targets "
            f"[B, T] {tuple(targets.shape)} disagree"
        )
    real = targets != pad_id  # [B, T]
    return F.cross_entropy(logits[real].float(), teacher_logits[real].float().softmax(-1))


class Seq2SeqObjective:
    """A sequence-to-sequence model with its training loss and its decoded evaluation (a ``Objective`` for ``fit``).

    ``references``: every acceptable target text of each example, indexed like the evaluated split's
    :class:`~attnkit.data.seq2seq.PairDataset` (default: each pair's own target). ``max_len`` defaults to
    ``2·S + 10``. ``teacher`` stays in eval mode; the loss is ``(1 - w)·label-smoothed CE + w·distribution matching``
    with ``w = teacher_weight``.
    """

    def __init__(
        self,
        model: nn.Module,
        target_tokenizer: Any,
        *,
        scoring: Scoring = SEQUENCE,
        label_smoothing: float = 0.1,
        references: Sequence[Sequence[str]] | None = None,
        beam_size: int = 1,
        length_penalty: float = 1.0,
        max_len: int | None = None,
        teacher: nn.Module | None = None,
        teacher_weight: float = 0.0,
    ) -> None:
        if beam_size < 1:
            raise ValueError(f"beam_size must be >= 1, got {beam_size}")
        if not 0.0 <= teacher_weight <= 1.0 or (teacher_weight > 0) != (teacher is not None):
            raise ValueError(f"teacher_weight must lie in (0, 1] with a teacher and be 0 without, got {teacher_weight}")
        self.teacher, self.teacher_weight = (None if teacher is None else teacher.eval()), teacher_weight
        self.model = model
        self.target_tokenizer = target_tokenizer
        self.scoring = scoring
        self.label_smoothing = label_smoothing
        self.references = None if references is None else [list(r) for r in references]
        self.beam_size, self.length_penalty, self.max_len = beam_size, length_penalty, max_len
        self.select_metric, self.select_mode = scoring.select_metric, scoring.select_mode

    def loss(self, batch: Seq2SeqBatch) -> torch.Tensor:
        """Mean label-smoothed cross-entropy per real target token (``<eos>`` included), mixed with the teacher's."""
        if batch.target_in is None:
            raise ValueError("the batch has no targets: training needs source/target pairs")
        logits = self.model(batch.source_ids, batch.source_mask, batch.target_in).logits  # [B, T, V]
        loss = label_smoothed_loss(logits, batch.target_out, smoothing=self.label_smoothing)
        if self.teacher is None:
            return loss
        with torch.no_grad():
            teacher_logits = self.teacher(batch.source_ids, batch.source_mask, batch.target_in).logits  # [B, T, V]
        soft = distribution_matching_loss(logits, teacher_logits, batch.target_out)
        return (1.0 - self.teacher_weight) * loss + self.teacher_weight * soft

    def decode(self, batch: Seq2SeqBatch) -> DecodeOutput:
        """Decode the batch's sources with the objective's decoder settings (the model should be in eval mode)."""
        options = {"beam_size": self.beam_size, "max_len": self.max_len, "length_penalty": self.length_penalty}
        return decode(self.model, batch.source_ids, batch.source_mask, **options)

    @torch.no_grad()
    def evaluate_sums(
        self, batches: Iterable[Seq2SeqBatch], *, references: Sequence[Sequence[str]] | None = None
    ) -> dict[str, float]:
        """Additive statistics of ``batches`` (see the module docstring); ``references`` overrides the objective's."""
        references = self.references if references is None else [list(r) for r in references]
        was_training = self.model.training
        self.model.eval()
        loss_sum, tokens, correct = 0.0, 0, 0
        hypotheses: list[str] = []
        golds: list[list[str]] = []
        try:
            for batch in batches:
                if batch.target_in is None:
                    raise ValueError("evaluation needs targets: the batch has source_ids only")
                logits = self.model(batch.source_ids, batch.source_mask, batch.target_in).logits  # [B, T, V]
                real = batch.target_mask  # [B, T]
                loss_sum += float(
                    F.cross_entropy(logits.flatten(0, 1).float(), batch.target_out.flatten(), reduction="none")
                    .view_as(real)[real]
                    .sum()
                )
                tokens += int(real.sum())
                correct += int(((logits.argmax(-1) == batch.target_out) & real).sum())
                best = self.decode(batch).best  # [B, T']
                hypotheses += [self.target_tokenizer.decode(row.tolist()) for row in best]
                golds += self._batch_references(batch, references)
        finally:
            self.model.train(was_training)
        sums = {"loss_sum": loss_sum, "tokens": float(tokens), "correct_tokens": float(correct)}
        return {**sums, "examples": float(len(hypotheses)), **self.decoded_sums(hypotheses, golds)}

    def metrics_from_sums(self, sums: Mapping[str, float]) -> dict[str, float]:
        """The metrics of a split from :meth:`evaluate_sums`' statistics summed over all of it."""
        tokens = max(sums["tokens"], 1.0)
        metrics = {"loss": sums["loss_sum"] / tokens, "token_accuracy": 100.0 * sums["correct_tokens"] / tokens}
        return {**metrics, "count": sums["examples"], **self.scoring.metrics(sums)}

    def evaluate(
        self, batches: Iterable[Seq2SeqBatch], *, references: Sequence[Sequence[str]] | None = None
    ) -> dict[str, float]:
        """Teacher-forced loss and token accuracy, then decoded metrics; ``references`` overrides the objective's."""
        return self.metrics_from_sums(self.evaluate_sums(batches, references=references))

    def _batch_references(self, batch: Seq2SeqBatch, references: list[list[str]] | None) -> list[list[str]]:
        if references is None:
            return [[self.target_tokenizer.decode(row.tolist())] for row in batch.target_out]
        if batch.indices is None:
            raise ValueError("references need batch.indices to find each example's references")
        if int(batch.indices.max()) >= len(references):
            raise ValueError(f"batch index {int(batch.indices.max())} is beyond the {len(references)} references")
        return [references[i] for i in batch.indices.tolist()]

    def decoded_sums(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> dict[str, float]:
        """The additive statistics of decoded ``hypotheses`` against each example's acceptable ``references``."""
        if len(hypotheses) != len(references):
            raise ValueError(f"hypotheses has {len(hypotheses)} items but references has {len(references)}")
        return self.scoring.sums(hypotheses, references, self.target_tokenizer)

    def score(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> dict[str, float]:
        """The decoded metrics of ``hypotheses`` against each example's acceptable ``references``."""
        sums = {"examples": float(len(hypotheses)), **self.decoded_sums(hypotheses, references)}
        return self.scoring.metrics(sums)


def sacrebleu_sums(name: str, hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """sacreBLEU's sufficient statistics of ``name`` (``"bleu"``/``"chrf"``) summed over the sentences (zeros, same
    keys, for no sentences: ranks must agree on keys)."""
    if name == "bleu":
        return bleu_statistics(hypotheses, references)
    if name == "chrf":
        return chrf_statistics(hypotheses, references)
    raise ValueError(f"name must be 'bleu' or 'chrf', got {name!r}")


def sacrebleu_score(name: str, sums: Mapping[str, float]) -> float:
    """The corpus score (percent) of ``name`` from statistics summed by :func:`sacrebleu_sums`."""
    if name == "bleu":
        return bleu_from_statistics(sums)
    if name == "chrf":
        return chrf_from_statistics(sums)
    raise ValueError(f"name must be 'bleu' or 'chrf', got {name!r}")
