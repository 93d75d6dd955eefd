"""Load, evaluate and use a trained sequence-to-sequence model: what ``attnkit evaluate``, ``attnkit translate``
and ``attnkit explain`` run for the checkpoints ``attnkit train seq2seq`` writes (:mod:`attnkit.training.seq2seq_run`).

    loaded = load_seq2seq("runs/d")                                  # RUN or RUN/best
    evaluate_seq2seq(loaded, data.test, data.references_for("test"), beam_size=4)
    translate(loaded, ["March 4, 1997"])
    ensemble = load_seq2seq_ensemble(["runs/a", "runs/b"])          # averages the members' next-token distributions
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import nn

from attnkit.data.seq2seq import Tokenizer, encode_pairs, load_tokenizers, make_loader
from attnkit.data.seq2seq.dataset import Pair
from attnkit.models.ensemble import Seq2SeqEnsemble
from attnkit.models.seq2seq import build_seq2seq
from attnkit.training.checkpoint import (
    CONFIG_FILE,
    CheckpointError,
    load_model_weights,
    read_config_of_kind,
    resolve_checkpoint,
)
from attnkit.training.seq2seq import METRIC_KINDS, Seq2SeqTask, Translation, translate_texts

__all__ = [
    "KIND",
    "LoadedSeq2Seq",
    "Seq2SeqConfig",
    "evaluate_seq2seq",
    "load_seq2seq",
    "load_seq2seq_ensemble",
    "resolve_checkpoint",
    "translate",
]

KIND = "seq2seq"


@dataclass
class Seq2SeqConfig:
    """What a seq2seq checkpoint's ``config.json`` holds besides ``"kind"``.

    Attributes:
        model: :func:`~attnkit.models.seq2seq.build_seq2seq`'s config, vocabulary sizes included.
        data: the built-in task name, or the training file as given.
        metrics: ``"sequence"`` (WER/PER) or ``"text"`` (BLEU/chrF).
        source_level, target_level: how each side was tokenised (``char``, ``symbol``, ``subword``).
        label_smoothing: of the training loss.
    """

    model: dict[str, Any]
    data: str = ""
    metrics: str = "sequence"
    source_level: str = "char"
    target_level: str = "char"
    label_smoothing: float = 0.1

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Seq2SeqConfig:
        """Rebuild from :meth:`to_dict`, refusing unknown keys and unknown metric kinds."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown seq2seq config keys: {', '.join(unknown)}")
        if "model" not in values:
            raise ValueError("the seq2seq config has no 'model'")
        config = cls(**values)
        if config.metrics not in METRIC_KINDS:
            raise ValueError(f"metrics must be one of {METRIC_KINDS}, got {config.metrics!r}")
        return config


@dataclass
class LoadedSeq2Seq:
    """A trained model (in eval mode) with its two tokenisers (the same object when shared) and its config."""

    model: nn.Module
    source_tokenizer: Tokenizer
    target_tokenizer: Tokenizer
    config: Seq2SeqConfig


def load_seq2seq(checkpoint: str | Path) -> LoadedSeq2Seq:
    """Rebuild a trained seq2seq model, its tokenisers and config from ``RUN/best`` (or ``RUN``).

    Raises:
        CheckpointError: not an attnkit checkpoint, not a seq2seq one, a bad config, missing tokenisers, or
            weights that do not fit.
    """
    checkpoint = resolve_checkpoint(checkpoint)
    values = read_config_of_kind(checkpoint, KIND)
    try:
        config = Seq2SeqConfig.from_dict(values)
        model = build_seq2seq(config.model)
        source_tok, target_tok = load_tokenizers(checkpoint)
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{checkpoint}/{CONFIG_FILE}: {error}") from error
    load_model_weights(model, checkpoint)
    return LoadedSeq2Seq(model.eval(), source_tok, target_tok, config)


def load_seq2seq_ensemble(checkpoints: Sequence[str | Path]) -> LoadedSeq2Seq:
    """Several checkpoints as one model (:class:`~attnkit.models.ensemble.Seq2SeqEnsemble`); one checkpoint
    gives :func:`load_seq2seq`'s model itself.

    The members must have been trained on one task, with identical tokenisers on both sides (the same vocabulary
    in the same order: a built-in task gives that to every run). The result carries the first member's config.

    Raises:
        CheckpointError: as :func:`load_seq2seq`, or members that do not agree on data, metrics or tokenisers.
    """
    if not checkpoints:
        raise ValueError("an ensemble needs at least one checkpoint")
    members = [load_seq2seq(checkpoint) for checkpoint in checkpoints]
    if len(members) == 1:
        return members[0]
    first = members[0]
    for checkpoint, member in zip(checkpoints[1:], members[1:], strict=True):
        for what in ("data", "metrics", "source_level", "target_level"):
            if getattr(member.config, what) != getattr(first.config, what):
                raise CheckpointError(
                    f"{checkpoint} cannot join an ensemble with {checkpoints[0]}: {what} "
                    f"{getattr(member.config, what)!r} != {getattr(first.config, what)!r}"
                )
        for side in ("source_tokenizer", "target_tokenizer"):
            if getattr(member, side).to_dict() != getattr(first, side).to_dict():
                raise CheckpointError(
                    f"{checkpoint} cannot join an ensemble with {checkpoints[0]}: their {side.replace('_', ' ')}s "
                    "differ (members must share one vocabulary)"
                )
    ensemble = Seq2SeqEnsemble([member.model for member in members]).eval()
    return LoadedSeq2Seq(ensemble, first.source_tokenizer, first.target_tokenizer, first.config)


def evaluate_seq2seq(
    loaded: LoadedSeq2Seq,
    pairs: Sequence[Pair],
    references: Sequence[Sequence[str]] | None = None,
    *,
    beam_size: int = 1,
    batch_size: int = 128,
    length_penalty: float = 1.0,
    max_len: int | None = None,
) -> dict[str, float]:
    """Decode every source of ``pairs`` and score it: ``wer``/``per``/``exact_match`` or ``bleu``/``chrf``, plus
    the teacher-forced ``loss``, ``token_accuracy`` and ``count``.

    ``references[i]`` lists every acceptable target of ``pairs[i]`` (default: its own target).
    """
    if not pairs:
        raise ValueError("nothing to evaluate: no pairs")
    references = [[target] for _, target in pairs] if references is None else references
    if len(references) != len(pairs):
        raise ValueError(f"pairs has {len(pairs)} items but references has {len(references)}")
    dataset = encode_pairs(pairs, loaded.source_tokenizer, loaded.target_tokenizer)
    task = Seq2SeqTask(
        loaded.model,
        loaded.target_tokenizer,
        metrics=loaded.config.metrics,
        references=references,
        beam_size=beam_size,
        length_penalty=length_penalty,
        max_len=max_len,
    )
    return task.evaluate(make_loader(dataset, batch_size=batch_size, shuffle=False, by="source_lengths"))


def translate(
    loaded: LoadedSeq2Seq,
    texts: Sequence[str],
    *,
    beam_size: int = 1,
    batch_size: int = 64,
    length_penalty: float = 1.0,
    max_len: int | None = None,
    need_weights: bool = False,
) -> list[Translation]:
    """Decode ``texts`` with a loaded model, in input order (see :func:`~attnkit.training.seq2seq.translate_texts`)."""
    return translate_texts(
        loaded.model,
        loaded.source_tokenizer,
        loaded.target_tokenizer,
        texts,
        beam_size=beam_size,
        batch_size=batch_size,
        length_penalty=length_penalty,
        max_len=max_len,
        need_weights=need_weights,
    )
