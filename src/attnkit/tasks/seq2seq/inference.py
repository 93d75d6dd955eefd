"""A trained sequence-to-sequence model, ready to use: what ``attnkit.load``, ``evaluate``, ``translate`` and
``explain`` get for the checkpoints ``attnkit train seq2seq`` writes (layer 5).

    loaded = load_seq2seq("runs/d")                 # RUN or RUN/best
    loaded.translate(["March 4, 1997"], beam_size=4)
    loaded.evaluate(["March 4, 1997"], ["1997-03-04"])["exact_match"]

Attention weights, when asked for, come from one teacher-forced pass over the decoded tokens, so the decoding itself
is the same with or without them.

Shape glossary:
    B  sources   S  source positions   T  decoded steps   L  layers   H  heads   V  target vocabulary
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from attnkit.checkpointing import (
    CONFIG_FILE,
    CheckpointError,
    load_model_weights,
    read_config_of_kind,
    resolve_checkpoint,
)
from attnkit.data.inputs import as_pairs, as_texts
from attnkit.data.seq2seq import BOS_ID, Tokenizer, collate_pairs, encode_pairs, load_tokenizers, make_loader
from attnkit.data.seq2seq.dataset import Pair
from attnkit.decoding import decode
from attnkit.models.ensemble import Seq2SeqEnsemble
from attnkit.runtime.devices import autocast, device_of, on_device, ready_for_inference, resolve_device, to_host
from attnkit.tasks.seq2seq.config import KIND, Seq2SeqConfig, build_seq2seq_model
from attnkit.tasks.seq2seq.ctranslate2.probe import export_message, is_export
from attnkit.tasks.seq2seq.objective import Seq2SeqObjective
from attnkit.tasks.seq2seq.scoring import checked_references, scoring_named

__all__ = [
    "LoadedSeq2Seq",
    "Translation",
    "evaluate_seq2seq",
    "load_seq2seq",
    "load_seq2seq_ensemble",
    "translate_texts",
]


@dataclass
class Translation:
    """One decoded source: its ``text``, normalised ``score``, and (when asked) ``attention [T, *W]``.

    Row ``t`` of ``attention`` is the step that produced ``token_ids[t]`` (``[T, S]`` for the RNN, ``[T, L, H, S]``
    for the Transformer; None without attention or for an ensemble). ``n_best``: the beam's best hypotheses, this
    one first (without attention).
    """

    source: str
    text: str
    score: float
    attention: torch.Tensor | None = None
    token_ids: list[int] | None = None
    n_best: list[Translation] = field(default_factory=list)

    @classmethod
    def best_of(cls, n_best: list[Translation], attention: torch.Tensor | None = None) -> Translation:
        """The translation of a source: the first (best) of its ``n_best`` hypotheses, with them behind it."""
        first = n_best[0]
        return cls(first.source, first.text, first.score, attention, first.token_ids, n_best)


@dataclass
class LoadedSeq2Seq:
    """A trained model (in eval mode) with its two tokenisers and its config, run under autocast in ``precision``."""

    model: nn.Module
    source_tokenizer: Tokenizer
    target_tokenizer: Tokenizer
    config: Seq2SeqConfig
    precision: str = "fp32"

    @property
    def device(self) -> torch.device:
        """Where the model runs."""
        return device_of(self.model)

    def translate(
        self,
        texts: str | Sequence[str],
        *,
        beam_size: int = 1,
        batch_size: int = 64,
        length_penalty: float = 1.0,
        max_len: int | None = None,
        need_weights: bool = False,
        num_hypotheses: int = 1,
    ) -> list[Translation]:
        """Decode ``texts`` in input order (see :func:`translate_texts`); a ``str`` is one text (one translation)."""
        tokenizers = (self.source_tokenizer, self.target_tokenizer)
        options = {
            "beam_size": beam_size,
            "batch_size": batch_size,
            "length_penalty": length_penalty,
            "max_len": max_len,
        }
        options |= {"need_weights": need_weights, "precision": self.precision, "num_hypotheses": num_hypotheses}
        return translate_texts(self.model, *tokenizers, texts, **options)

    def faithfulness(self, texts: str | Sequence[str], **options: Any) -> list:
        """Does the attention explain each emitted token? Per text, one ``DocumentFaithfulness`` per greedily decoded
        token (:mod:`attnkit.tasks.seq2seq.faithfulness`); an empty sequence gives ``[]``."""
        from attnkit.tasks.seq2seq.faithfulness import seq2seq_faithfulness

        return seq2seq_faithfulness(self, texts, **options)

    def evaluate(
        self, sources: Sequence[str], targets: Sequence[str | Sequence[str]], **options: Any
    ) -> dict[str, float]:
        """The decoded metrics of ``sources`` against ``targets`` (:func:`evaluate_seq2seq`): one target per source, a
        ``str`` or the list of every acceptable one (the first is scored by the teacher-forced loss)."""
        pairs, references = as_pairs(sources, targets)
        return evaluate_seq2seq(self, pairs, references, **options)


def load_seq2seq(
    checkpoint: str | Path, *, device: str | torch.device = "auto", precision: str = "fp32", quantize: str | None = None
) -> LoadedSeq2Seq:
    """Rebuild a trained seq2seq model, its tokenisers and config from ``RUN/best`` (or ``RUN``), ready on
    ``device``; ``quantize="int8"`` quantises its linear layers for CPU inference (fp32 on the CPU only)."""
    checkpoint = resolve_checkpoint(checkpoint)
    if is_export(checkpoint):
        raise CheckpointError(export_message(checkpoint))
    if quantize is not None and (precision != "fp32" or resolve_device(device).type != "cpu"):
        raise ValueError(
            f"--quantize {quantize} runs on the CPU in fp32 (got --device {device}, --precision {precision})"
        )
    values = read_config_of_kind(checkpoint, KIND)
    try:
        config = Seq2SeqConfig.from_dict(values)
        model = build_seq2seq_model(config)
        source_tok, target_tok = load_tokenizers(checkpoint)
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{checkpoint}/{CONFIG_FILE}: {error}") from error
    load_model_weights(model, checkpoint)
    model = ready_for_inference(model, device, precision)
    if quantize is not None:
        from attnkit.models.quantize import quantize_model

        model = quantize_model(model, quantize)
    return LoadedSeq2Seq(model, source_tok, target_tok, config, precision)


def load_seq2seq_ensemble(
    checkpoints: Sequence[str | Path],
    *,
    device: str | torch.device = "auto",
    precision: str = "fp32",
    quantize: str | None = None,
) -> LoadedSeq2Seq:
    """Several checkpoints as one model (:class:`~attnkit.models.ensemble.Seq2SeqEnsemble`), carrying the first
    member's config; one checkpoint gives :func:`load_seq2seq`'s model itself. Members must share data, metrics and
    identical tokenisers."""
    if not checkpoints:
        raise ValueError("an ensemble needs at least one checkpoint")
    members = [load_seq2seq(c, device=device, precision=precision, quantize=quantize) for c in checkpoints]
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
    return LoadedSeq2Seq(ensemble, first.source_tokenizer, first.target_tokenizer, first.config, precision)


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
    the teacher-forced ``loss``, ``token_accuracy`` and ``count``. ``references[i]``: every acceptable target of
    ``pairs[i]`` (default: its own target)."""
    references = checked_references(pairs, references)
    dataset = encode_pairs(pairs, loaded.source_tokenizer, loaded.target_tokenizer)
    scoring = scoring_named(loaded.config.metrics)
    decoding = {"beam_size": beam_size, "length_penalty": length_penalty, "max_len": max_len}
    objective = Seq2SeqObjective(
        loaded.model, loaded.target_tokenizer, scoring=scoring, references=references, **decoding
    )
    batches = make_loader(dataset, batch_size=batch_size, shuffle=False, by="source_lengths")
    with autocast(loaded.device, loaded.precision):
        return objective.evaluate(on_device(batches, loaded.device))


@torch.no_grad()
def translate_texts(
    model: nn.Module,
    source_tokenizer: Any,
    target_tokenizer: Any,
    texts: str | Sequence[str],
    *,
    beam_size: int = 1,
    batch_size: int = 64,
    max_len: int | None = None,
    length_penalty: float = 1.0,
    need_weights: bool = False,
    precision: str = "fp32",
    num_hypotheses: int = 1,
) -> list[Translation]:
    """Decode ``texts`` in batches (eval mode, under autocast in ``precision``), best hypothesis each, in input order.

    With ``need_weights`` each translation carries ``[T, S]`` (RNN) or ``[T, L, H, S]`` (Transformer) weights over
    the source's own tokens. ``num_hypotheses`` (``1 <= n <= beam_size``) fills each ``n_best`` with the beam's
    ``n`` best finished hypotheses (fewer when a source has fewer possible outputs).
    """
    texts = as_texts(texts)  # a str is one text; empty or non-str items refused, naming the index
    if not 1 <= num_hypotheses <= beam_size:
        raise ValueError(f"num_hypotheses must lie in [1, beam_size] = [1, {beam_size}], got {num_hypotheses}")
    was_training = model.training
    model.eval()
    device = device_of(model)
    results: list[Translation] = []
    try:
        for start in range(0, len(texts), batch_size):
            chunk = list(texts[start : start + batch_size])
            batch = collate_pairs([(ids, None) for ids in source_tokenizer.encode_batch(chunk)])
            source_lengths = batch.source_lengths.tolist()
            batch = batch.to(device)
            options = {"beam_size": beam_size, "max_len": max_len, "length_penalty": length_penalty}
            with autocast(device, precision):
                out = decode(model, batch.source_ids, batch.source_mask, **options)
                best = out.tokens[:, 0]  # [B, T]
                weights = None
                if need_weights:
                    weights = _forced_attention(model, batch.source_ids, batch.source_mask, best)
            results += _translations(chunk, out, to_host(weights), source_lengths, target_tokenizer, num_hypotheses)
    finally:
        model.train(was_training)
    return results


def _translations(
    chunk: list[str], out: Any, weights: torch.Tensor | None, source_lengths: list[int], target_tokenizer: Any, n: int
) -> list[Translation]:
    """One batch's decoding as a :class:`Translation` per text, with its ``n`` best hypotheses (on the host)."""
    all_tokens = to_host(out.tokens[:, :n]).tolist()  # [B, n, T]
    lengths, scores = out.lengths[:, :n].tolist(), out.scores[:, :n].tolist()
    results = []
    for row, text in enumerate(chunk):
        n_best = [
            Translation(text, target_tokenizer.decode(ids[:steps]), score, None, ids[:steps])
            for rank, (ids, steps, score) in enumerate(zip(all_tokens[row], lengths[row], scores[row], strict=True))
            if rank == 0 or score != float("-inf")  # -inf: a filler slot (fewer possible hypotheses)
        ]
        attention = None if weights is None else weights[row, : lengths[row][0], ..., : source_lengths[row]]
        results.append(Translation.best_of(n_best, attention))
    return results


def _forced_attention(
    model: nn.Module, source_ids: torch.Tensor, source_mask: torch.Tensor, tokens: torch.Tensor
) -> torch.Tensor | None:
    """The attention ``[B, T, S]`` (RNN) or ``[B, T, L, H, S]`` (Transformer) of the steps that produced ``tokens
    [B, T]``, read teacher-forced from ``<bos>`` + ``tokens[:, :-1]``; None for a model that gives no weights."""
    if tokens.shape[1] == 0 or "need_weights" not in inspect.signature(model.forward).parameters:
        return None  # nothing decoded, or a model that gives no weights (an ensemble)
    bos = torch.full_like(tokens[:, :1], BOS_ID)
    target_in = torch.cat([bos, tokens[:, :-1]], dim=1)  # [B, T]; rows end in <pad> after their <eos>
    output = model(source_ids, source_mask, target_in, need_weights=True)
    cross = getattr(output, "cross_attention", None)
    if cross:
        return torch.stack(cross, dim=1).permute(0, 3, 1, 2, 4)  # L x [B, H, T, S] -> [B, T, L, H, S]
    return getattr(output, "attention", None)
