"""How a seq2seq data set's decoded outputs are scored: one object per kind of target, chosen once (layer 5).

    scoring = scoring_for(data)                   # SEQUENCE for characters and symbols, TEXT for subword text
    scoring = scoring_named(config.metrics)       # a checkpoint stores the name; this maps it back
    sums = scoring.sums(hypotheses, references, target_tokenizer)   # additive: summed over DDP ranks
    scoring.metrics({"examples": n, **sums})      # {"wer": ..., "per": ..., "exact_match": ...}

=============  ======================================  ======================  ==========
name           metrics                                 statistics              selection
=============  ======================================  ======================  ==========
``sequence``   ``wer``, ``per``, ``exact_match``       error and symbol counts lowest WER
``text``       sacreBLEU's ``bleu`` and ``chrf``       n-gram matches, totals  highest BLEU
=============  ======================================  ======================  ==========

The name is what ``config.json`` (``Seq2SeqConfig.metrics``), export manifests and results tables store; code
past the boundary where a name is read holds a :class:`Scoring` and never compares names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from attnkit.tasks.seq2seq.metrics import (
    bleu_from_statistics,
    bleu_statistics,
    chrf_from_statistics,
    chrf_statistics,
    g2p_scores,
)

__all__ = ["SCORINGS", "SEQUENCE", "TEXT", "Scoring", "scoring_for", "scoring_named"]


class Scoring(Protocol):
    """The decoded metrics of one kind of target: additive statistics, the metrics made from their sums, how the
    best epoch is chosen, and how the two headline figures are shown."""

    name: str
    select_metric: str
    select_mode: str
    headline: tuple[str, str]  # the keys of the two figures a table or a summary line shows
    labels: tuple[str, str]  # their column titles

    def sums(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]], tokenizer: Any) -> dict[str, float]:
        """Additive statistics of ``hypotheses`` against each one's acceptable ``references``."""
        ...

    def metrics(self, sums: Mapping[str, float]) -> dict[str, float]:
        """The metrics from :meth:`sums`' statistics summed over a split, plus ``examples`` (the count)."""
        ...

    def summary(self, metrics: Mapping[str, float]) -> str:
        """The headline figures and the count as one line, e.g. ``"WER 12.30%  PER 3.10%  on 1000 examples"``."""
        ...


def _symbols(text: str, tokenizer: Any) -> list[str]:
    """The units a sequence metric compares: characters for a character-level vocabulary, else words/symbols."""
    return list(text) if getattr(tokenizer, "level", None) == "char" else text.split()


def _count(metrics: Mapping[str, float]) -> str:
    return f"on {int(metrics.get('count', 0))} examples"


@dataclass(frozen=True)
class SequenceScoring:
    """WER (percent of outputs matching none of their references), PER (edits per reference symbol, percent) and
    ``exact_match = 100 - wer``, for short symbol or character targets (G2P, dates)."""

    name: str = "sequence"
    select_metric: str = "wer"
    select_mode: str = "min"
    headline: tuple[str, str] = ("wer", "per")
    labels: tuple[str, str] = ("WER %", "PER %")

    def sums(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]], tokenizer: Any) -> dict[str, float]:
        """``word_errors``, ``phoneme_edits`` and ``reference_phonemes`` (the counts behind WER and PER)."""
        references = [[_symbols(r, tokenizer) for r in refs] for refs in references]
        scores = g2p_scores([_symbols(h, tokenizer) for h in hypotheses], references)
        counts = (scores.word_errors, scores.phoneme_edits, scores.reference_phonemes)
        return dict(zip(("word_errors", "phoneme_edits", "reference_phonemes"), map(float, counts), strict=True))

    def metrics(self, sums: Mapping[str, float]) -> dict[str, float]:
        """``wer``, ``per`` and ``exact_match`` (100, 100 and 0 for no examples)."""
        examples = sums["examples"]
        if not examples:
            return {"wer": 100.0, "per": 100.0, "exact_match": 0.0}
        wer = 100.0 * sums["word_errors"] / examples
        phonemes = sums["reference_phonemes"]
        per = 100.0 * sums["phoneme_edits"] / phonemes if phonemes else 0.0
        return {"wer": wer, "per": per, "exact_match": 100.0 - wer}

    def summary(self, metrics: Mapping[str, float]) -> str:
        """``"WER 12.30%  PER 3.10%  on 1000 examples"``."""
        return f"WER {metrics['wer']:.2f}%  PER {metrics['per']:.2f}%  {_count(metrics)}"


@dataclass(frozen=True)
class TextScoring:
    """sacreBLEU's corpus BLEU and chrF against each example's first reference, for text (translation)."""

    name: str = "text"
    select_metric: str = "bleu"
    select_mode: str = "max"
    headline: tuple[str, str] = ("bleu", "chrf")
    labels: tuple[str, str] = ("BLEU", "chrF")

    def sums(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]], tokenizer: Any) -> dict[str, float]:
        """BLEU's and chrF's sufficient statistics summed over the sentences."""
        firsts = [refs[0] for refs in references]
        return {**bleu_statistics(hypotheses, firsts), **chrf_statistics(hypotheses, firsts)}

    def metrics(self, sums: Mapping[str, float]) -> dict[str, float]:
        """``bleu`` and ``chrf`` (0 for no examples)."""
        if not sums["examples"]:
            return {"bleu": 0.0, "chrf": 0.0}
        return {"bleu": bleu_from_statistics(sums), "chrf": chrf_from_statistics(sums)}

    def summary(self, metrics: Mapping[str, float]) -> str:
        """``"BLEU 23.41  chrF 45.12  on 1000 examples"``."""
        return f"BLEU {metrics['bleu']:.2f}  chrF {metrics['chrf']:.2f}  {_count(metrics)}"


SEQUENCE = SequenceScoring()
TEXT = TextScoring()
SCORINGS: dict[str, Scoring] = {scoring.name: scoring for scoring in (SEQUENCE, TEXT)}


def scoring_named(name: str) -> Scoring:
    """The :class:`Scoring` a config, manifest or results table names."""
    if name not in SCORINGS:
        raise ValueError(f"metrics must be one of {tuple(SCORINGS)}, got {name!r}")
    return SCORINGS[name]


def scoring_for(data: Any) -> Scoring:
    """:data:`TEXT` for data sets whose targets are subword text (translation), else :data:`SEQUENCE`."""
    return TEXT if data.target_level == "subword" else SEQUENCE


def checked_references(pairs: Sequence[tuple[str, str]], references: Sequence[Sequence[str]] | None) -> Sequence:
    """Every acceptable target of each of ``pairs`` (default: its own target), one entry per pair."""
    if not pairs:
        raise ValueError("nothing to evaluate: no pairs")
    references = [[target] for _, target in pairs] if references is None else references
    if len(references) != len(pairs):
        raise ValueError(f"pairs has {len(pairs)} items but references has {len(references)}")
    return references
