"""The faithfulness of predictions as text (layer 5): the one printer of ``attnkit faithfulness`` (a table per
prediction, or one JSON object per line with ``--json``) for every task, and the plain sentence the report puts under
each document."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from attnkit.explain.faithfulness.erasure import PERCENTS
from attnkit.explain.faithfulness.methods import is_floor
from attnkit.explain.faithfulness.results import DocumentFaithfulness

__all__ = ["erasure_sentence", "format_document", "mean_drop", "print_results", "summary_line", "top_count"]


def top_count(result: DocumentFaithfulness) -> int:
    """The erasure size the sentence speaks of: 3 tokens, or all of a shorter text."""
    return min(3, len(result.tokens))


def erasure_sentence(result: DocumentFaithfulness, *, method: str = "attention", count: int | None = None) -> str:
    """One plain sentence: ``erasing the 3 most-attended words lowers p(great) from 0.99 to 0.41; 3 random
    words: 0.97`` — from the exact erasures, done here for ``count`` tokens (default :func:`top_count`)."""
    count = top_count(result) if count is None else count
    found = result.methods.get(method)
    if found is None or count < 1:
        return ""
    words = "word" if count == 1 else "words"
    after = _probability_after(result, method, count)
    sentence = (
        f"erasing the {count} {_superlative(method)} {words} "
        f"{'lowers' if after <= result.probability else 'raises'} p({result.label}) "
        f"from {result.probability:.2f} to {after:.2f}"
    )
    floor = next((name for name in result.methods if is_floor(name)), None)
    if floor is not None and floor != method:
        sentence += f"; {count} {floor} {words}: {_probability_after(result, floor, count):.2f}"
    return sentence


def mean_drop(results: Sequence[DocumentFaithfulness], method: str, count: int = 3) -> float:
    """The mean drop in p(predicted class) when each document's top ``count`` units by ``method`` are erased
    (all of a shorter document): comprehensiveness at top ``count``, averaged over ``results``."""
    drops = [r.probability - _probability_after(r, method, min(count, len(r.tokens))) for r in results if r.tokens]
    if not drops:
        raise ValueError("mean_drop: no document with tokens")
    return sum(drops) / len(drops)


def summary_line(results: Sequence[DocumentFaithfulness], count: int = 3) -> str:
    """One line over many documents: attention against random comprehensiveness at top ``count`` (what
    ``attnkit demo`` prints)."""
    attention, random = mean_drop(results, "attention", count), mean_drop(results, "random", count)
    return (
        f"faithfulness over {len(results)} documents: erasing the {count} most-attended words lowers p(label) by "
        f"{attention:.3f} on average; {count} random words: {random:.3f} (erase={results[0].erase})"
    )


def _superlative(name: str) -> str:
    from attnkit.explain.faithfulness.methods import METHODS, Method

    return METHODS.get(name, Method(name)).describe()


def _probability_after(result: DocumentFaithfulness, method: str, count: int) -> float:
    found = result.methods[method]
    if found.top_probability is None or count not in found.top_probability:
        raise ValueError(f"{method}: no erasure of its top {count} was run")
    return found.top_probability[count]


def print_results(
    results: Sequence[DocumentFaithfulness],
    *,
    as_json: bool,
    noun: str = "document",
    heading: str | None = None,
    envelope: dict | None = None,
) -> None:
    """Print ``results``: a table each (:func:`format_document`, numbered ``noun 1``, ``noun 2``, ..., blank lines
    between), under ``heading`` when given; or with ``as_json`` one object per result, or, with ``envelope``, one
    object ``{**envelope, "steps": [...]}`` for them all (a translation's emitted tokens)."""
    if as_json:
        records = [result.to_json() for result in results]
        for record in [{**envelope, "steps": records}] if envelope is not None else records:
            print(json.dumps(record, ensure_ascii=False))
        return
    if heading is not None:
        print(heading)
    for number, result in enumerate(results, start=1):
        ending = "\n" if number < len(results) or heading is not None else ""
        print(format_document(result, number, noun=noun) + ending)


def format_document(result: DocumentFaithfulness, number: int, *, noun: str = "document") -> str:
    """A table of one prediction: a row per method (AOPC, comprehensiveness/sufficiency at each k, flip
    fraction, top tokens), then Kendall τ between methods, then each method's further figures (``extra``)."""
    head = f"{noun} {number}: {result.label} (p={result.probability:.3f}), {len(result.tokens)} tokens, "
    head += f"erase={result.erase}"
    percents = "".join(f"{'c@' + str(p) + '%':>8}" for p in PERCENTS)
    lines = [head, f"{'method':<22}{'AOPC-c':>8}{'AOPC-s':>8}{percents}{'flip':>7}  top tokens"]
    for name, found in result.methods.items():
        values = "".join(f"{found.comprehensiveness[str(p)]:>8.3f}" for p in PERCENTS)
        top = _top_tokens(result.tokens, found.scores)
        note = f"  (IG delta {found.convergence_delta:.1e})" if found.convergence_delta is not None else ""
        lines.append(
            f"{name:<22}{found.aopc_comprehensiveness:>8.3f}{found.aopc_sufficiency:>8.3f}{values}"
            f"{found.flip_fraction:>7.2f}  {top}{note}"
        )
    if result.kendall_tau:
        pairs = [f"{pair}={_number(tau)}" for pair, tau in result.kendall_tau.items() if "random" not in pair]
        lines.append("Kendall tau: " + ", ".join(pairs))
    sentence = erasure_sentence(result)
    if sentence:
        lines.append(sentence[0].upper() + sentence[1:] + ".")
    lines += [
        f"  {name:<22} " + "  ".join(f"{_label(key)} {value:.3f}" for key, value in found.extra.items())
        for name, found in result.methods.items()
        if found.extra
    ]
    return "\n".join(lines)


def _label(key: str) -> str:
    """``deletion_auc`` -> ``deletion AUC``."""
    return " ".join(word.upper() if word in ("auc", "aopc") else word for word in key.split("_"))


def _top_tokens(tokens: Sequence[str], scores: Sequence[float], k: int = 3) -> str:
    order = sorted(range(len(tokens)), key=lambda i: -scores[i])[:k]
    return " ".join(tokens[i] for i in order)


def _number(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.2f}"
