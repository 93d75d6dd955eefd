"""Sequence metrics: edit distance, G2P word and phoneme error rates, BLEU and chrF (layer 5).

All rates and scores are percentages (0-100), as papers report them. BLEU and chrF are sacreBLEU's
(``sacrebleu`` is imported only when they are computed), on detokenised text with sacreBLEU's default
tokenisation (``13a``), so the numbers are comparable with published ones.

G2P scoring with several acceptable pronunciations (Yao & Zweig 2015; Toshniwal & Livescu 2016): a word is
correct when the prediction equals any of its references; its phoneme errors are the fewest edits to any
reference, counted against that closest reference's length (the first such on a tie).

    WER = 100 · (words with no exact match) / words
    PER = 100 · Σ_words min_r edits(prediction, r) / Σ_words len(closest r)

Corpus BLEU and chrF are functions of statistics that add up over sentences, so shards of a corpus (the ranks of
a distributed evaluation) can be scored apart and combined exactly (``*_statistics``, then ``*_from_statistics``).
sacreBLEU exposes no chrF statistics, so they are counted here as its chrF defines them; the tests hold them equal
to ``sacrebleu.corpus_chrf``.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "DEFAULT_LENGTH_EDGES",
    "BucketScore",
    "G2PScores",
    "bleu_by_length",
    "bleu_from_statistics",
    "bleu_statistics",
    "chrf_from_statistics",
    "chrf_statistics",
    "corpus_bleu",
    "corpus_chrf",
    "edit_distance",
    "g2p_scores",
    "phoneme_error_rate",
    "word_error_rate",
]

Tokens = Sequence[Hashable]
DEFAULT_LENGTH_EDGES = (10, 20, 30, 40, 50, 60)


def edit_distance(a: Tokens, b: Tokens) -> int:
    """Levenshtein distance between two sequences of hashable tokens (phonemes, words, a string's characters)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))  # distances from a[:0] to every prefix of b
    for i, x in enumerate(a, start=1):
        current = [i]
        for j, y in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def _symbols(sequence: str | Tokens) -> list:
    """A string is whitespace-separated symbols (``"HH AH L OW"``); any other sequence is taken as is."""
    return sequence.split() if isinstance(sequence, str) else list(sequence)


@dataclass(frozen=True)
class G2PScores:
    """Word and phoneme error rates (percent) over a corpus, with the counts behind them."""

    wer: float
    per: float
    words: int
    word_errors: int
    phoneme_edits: int
    reference_phonemes: int


def g2p_scores(predictions: Sequence[str | Tokens], references: Sequence[Sequence[str | Tokens]]) -> G2PScores:
    """WER and PER of ``predictions`` (phoneme lists or space-separated strings) against every word's acceptable
    ``references`` (at least one each)."""
    if len(predictions) != len(references):
        raise ValueError(f"predictions has {len(predictions)} items but references has {len(references)}")
    word_errors = edits = phonemes = 0
    for i, (prediction, refs) in enumerate(zip(predictions, references, strict=True)):
        if not refs:
            raise ValueError(f"references[{i}] is empty: every word needs at least one reference")
        prediction = _symbols(prediction)
        candidates = [_symbols(r) for r in refs]
        distances = [edit_distance(prediction, r) for r in candidates]
        best = min(range(len(candidates)), key=distances.__getitem__)
        word_errors += distances[best] != 0
        edits += distances[best]
        phonemes += len(candidates[best])
    words = len(predictions)
    wer, per = 100.0 * word_errors / words if words else 0.0, 100.0 * edits / phonemes if phonemes else 0.0
    return G2PScores(wer, per, words, word_errors, phoneme_edits=edits, reference_phonemes=phonemes)


def word_error_rate(predictions: Sequence[str | Tokens], references: Sequence[Sequence[str | Tokens]]) -> float:
    """Percent of words whose prediction matches none of their references (see :func:`g2p_scores`)."""
    return g2p_scores(predictions, references).wer


def phoneme_error_rate(predictions: Sequence[str | Tokens], references: Sequence[Sequence[str | Tokens]]) -> float:
    """Percent phoneme edits against the closest references (see :func:`g2p_scores`)."""
    return g2p_scores(predictions, references).per


def _check_corpus(hypotheses: Sequence[str], references: Sequence[str]) -> None:
    _check_lengths(hypotheses, references)
    if not hypotheses:
        raise ValueError("cannot score an empty corpus")


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """sacreBLEU corpus BLEU (percent) of detokenised ``hypotheses`` against one reference each."""
    import sacrebleu

    _check_corpus(hypotheses, references)
    return float(sacrebleu.corpus_bleu(list(hypotheses), [list(references)]).score)


def corpus_chrf(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """sacreBLEU corpus chrF (percent, character 6-grams, β = 2) against one reference each."""
    import sacrebleu

    _check_corpus(hypotheses, references)
    return float(sacrebleu.corpus_chrf(list(hypotheses), [list(references)]).score)


BLEU_ORDER = 4  # sacreBLEU's default max_ngram_order
CHRF_CHAR_ORDER, CHRF_BETA = 6, 2  # sacreBLEU's chrF defaults (no word n-grams: chrF, not chrF++)


def bleu_statistics(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """BLEU's additive statistics of a corpus (one reference each), by sacreBLEU's defaults: ``bleu_sys_len``,
    ``bleu_ref_len`` and, for n = 1..4, ``bleu_correct_n`` and ``bleu_total_n``. An empty corpus gives zeros."""
    _check_lengths(hypotheses, references)
    keys = ["bleu_sys_len", "bleu_ref_len"]
    keys += [f"bleu_{kind}_{n}" for kind in ("correct", "total") for n in range(1, BLEU_ORDER + 1)]
    if not hypotheses:
        return dict.fromkeys(keys, 0.0)
    from sacrebleu.metrics import BLEU

    score = BLEU(max_ngram_order=BLEU_ORDER).corpus_score(list(hypotheses), [list(references)])
    values = [score.sys_len, score.ref_len, *score.counts, *score.totals]
    return {key: float(value) for key, value in zip(keys, values, strict=True)}


def bleu_from_statistics(sums: Mapping[str, float]) -> float:
    """Corpus BLEU (percent) from :func:`bleu_statistics` summed over shards, through ``BLEU.compute_bleu`` with
    the options of sacreBLEU's ``BLEU()`` (exponential smoothing, no effective order)."""
    from sacrebleu.metrics import BLEU

    metric = BLEU(max_ngram_order=BLEU_ORDER)
    counts = {key: round(sums[key]) for key in bleu_statistics([], [])}
    options = ("smooth_method", "smooth_value", "effective_order", "max_ngram_order")
    score = BLEU.compute_bleu(
        correct=[counts[f"bleu_correct_{n}"] for n in range(1, BLEU_ORDER + 1)],
        total=[counts[f"bleu_total_{n}"] for n in range(1, BLEU_ORDER + 1)],
        sys_len=counts["bleu_sys_len"],
        ref_len=counts["bleu_ref_len"],
        **{name: getattr(metric, name) for name in options},
    )
    return float(score.score)


def chrf_statistics(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """chrF's additive statistics of a corpus (one reference each): for n = 1..6, ``chrf_hyp_n``, ``chrf_ref_n``
    and ``chrf_match_n`` (a hypothesis' n-grams count only where its reference has some of that order, as in
    sacreBLEU). An empty corpus gives zeros."""
    _check_lengths(hypotheses, references)
    totals = [0] * (3 * CHRF_CHAR_ORDER)  # [hyp, ref, match] per order
    for hypothesis, reference in zip(hypotheses, references, strict=True):
        for n, (hyp, ref) in enumerate(zip(_char_ngrams(hypothesis), _char_ngrams(reference), strict=True)):
            matches = sum(min(count, ref[gram]) for gram, count in hyp.items() if gram in ref)
            totals[3 * n] += sum(hyp.values()) if ref else 0
            totals[3 * n + 1] += sum(ref.values())
            totals[3 * n + 2] += matches
    keys = [f"chrf_{kind}_{n}" for n in range(1, CHRF_CHAR_ORDER + 1) for kind in ("hyp", "ref", "match")]
    return {key: float(value) for key, value in zip(keys, totals, strict=True)}


def chrf_from_statistics(sums: Mapping[str, float]) -> float:
    """Corpus chrF (percent) from :func:`chrf_statistics` summed over shards: the F-β (β = 2) of the character
    n-gram precision and recall, each averaged over the orders that both sides have."""
    beta2 = CHRF_BETA**2
    precision = recall = 0.0
    orders = 0
    for n in range(1, CHRF_CHAR_ORDER + 1):
        hyp, ref, match = (round(sums[f"chrf_{kind}_{n}"]) for kind in ("hyp", "ref", "match"))
        if hyp > 0 and ref > 0:
            precision += match / hyp
            recall += match / ref
            orders += 1
    if orders == 0:
        return 0.0
    precision, recall = precision / orders, recall / orders
    if not precision + recall:
        return 0.0
    return 100 * ((1 + beta2) * precision * recall / ((beta2 * precision) + recall))


def _char_ngrams(text: str) -> list[Counter]:
    """Counts of the character n-grams of ``text`` without its whitespace, for n = 1..6."""
    line = "".join(text.split())
    return [Counter(line[i : i + n] for i in range(len(line) - n + 1)) for n in range(1, CHRF_CHAR_ORDER + 1)]


def _check_lengths(hypotheses: Sequence[str], references: Sequence[str]) -> None:
    if len(hypotheses) != len(references):
        raise ValueError(f"hypotheses has {len(hypotheses)} items but references has {len(references)}")


@dataclass(frozen=True)
class BucketScore:
    """BLEU (percent) over the ``count`` sentences whose source length falls in ``[low, high)`` words (``high``
    None: the open last bucket)."""

    low: int
    high: int | None
    count: int
    bleu: float

    @property
    def label(self) -> str:
        return f"{self.low}+" if self.high is None else f"{self.low}-{self.high - 1}"

    def as_row(self) -> dict:
        """``{"bucket", "low", "high", "count", "bleu"}``: one row of a JSON/CSV table."""
        return {"bucket": self.label, "low": self.low, "high": self.high, "count": self.count, "bleu": self.bleu}


def bleu_by_length(
    sources: Sequence[str],
    hypotheses: Sequence[str],
    references: Sequence[str],
    *,
    edges: Sequence[int] = DEFAULT_LENGTH_EDGES,
) -> list[BucketScore]:
    """BLEU per source-length bucket in words (Bahdanau et al. 2015, Fig. 2): ``edges`` ``(10, 20, ...)`` give
    ``[0, 10), [10, 20), ..., [last, ∞)``; empty buckets are left out."""
    if len(sources) != len(hypotheses):
        raise ValueError(f"sources has {len(sources)} items but hypotheses has {len(hypotheses)}")
    _check_corpus(hypotheses, references)
    edges = list(edges)
    if any(b <= a for a, b in itertools.pairwise(edges)) or (edges and edges[0] <= 0):
        raise ValueError(f"edges must be positive and increasing, got {edges}")
    bounds = list(zip([0, *edges], [*edges, None], strict=True))
    members: list[list[int]] = [[] for _ in bounds]
    for i, source in enumerate(sources):
        n = len(source.split())
        k = next(k for k, (low, high) in enumerate(bounds) if high is None or low <= n < high)
        members[k].append(i)
    return [
        BucketScore(low, high, len(ids), corpus_bleu([hypotheses[i] for i in ids], [references[i] for i in ids]))
        for (low, high), ids in zip(bounds, members, strict=True)
        if ids
    ]
