"""The faithfulness of one prediction, as numbers: :class:`DocumentFaithfulness` and its JSON (layer 5).

``to_json()`` gives the schema of ``attnkit faithfulness --json``, one object per input text::

    {"text", "label", "probability", "tokens",
     "methods": {NAME: {"scores": [per token], "comprehensiveness": {"1": …, "5": …, "10": …, "20": …, "50": …},
                        "sufficiency": {…}, "aopc_comprehensiveness", "aopc_sufficiency", "flip_fraction"}},
     "kendall_tau": {"A|B": …}}

``integrated_gradients`` also carries its ``convergence_delta``. A τ that is undefined (a constant method, one
token) is ``null``. A prediction of many tokens (a translation) is averaged over its steps into one result
(:func:`mean_over_steps`). As text: the one printer of ``attnkit faithfulness`` for every task, and the plain
sentence the report puts under each document.

Shape glossary:
    T  units   N  steps (emitted tokens)
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from attnkit.explain.faithfulness.erasure import PERCENTS
from attnkit.explain.faithfulness.methods import TOLERANCE, is_floor

__all__ = [
    "EMITTED",
    "DocumentFaithfulness",
    "MethodResult",
    "PermutationResult",
    "erasure_sentence",
    "format_document",
    "mean_drop",
    "mean_over_steps",
    "print_results",
    "summary_line",
    "top_count",
]


@dataclass
class MethodResult:
    """One method on one prediction: ``scores [T]``; by percent (``"1"``, ``"5"``, ...) ``p(pred)`` minus the
    probability with the top k % erased (comprehensiveness) or kept alone (sufficiency), those probabilities in the
    same order, and ``counts`` (units per percent); ``top_probability`` ``{n: p(pred) with the top n erased}``.

    ``convergence_delta``, ``steps`` and ``converged`` are integrated gradients' only. ``support`` is how many units
    the method scores at all (nonzero): its curves past the top ``support`` erase units it does not rank.
    ``extra`` holds further figures a task measures (a grid's ``deletion_auc``), printed and in the JSON.
    """

    scores: list[float]
    comprehensiveness: dict[str, float]
    sufficiency: dict[str, float]
    aopc_comprehensiveness: float
    aopc_sufficiency: float
    flip_fraction: float
    erased_probability: list[float]
    kept_probability: list[float]
    counts: list[int]
    top_probability: dict[int, float] = field(default_factory=dict)
    convergence_delta: float | None = None
    steps: int | None = None
    converged: bool | None = None
    support: int | None = None
    extra: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The method's object of the JSON schema."""
        out = {
            "scores": [round(s, 6) for s in self.scores],
            "comprehensiveness": _rounded(self.comprehensiveness),
            "sufficiency": _rounded(self.sufficiency),
            "aopc_comprehensiveness": round(self.aopc_comprehensiveness, 6),
            "aopc_sufficiency": round(self.aopc_sufficiency, 6),
            "flip_fraction": round(self.flip_fraction, 6),
        }
        if self.convergence_delta is not None:
            out["convergence_delta"] = self.convergence_delta
        if self.steps is not None:
            out |= {"steps": self.steps, "converged": self.converged}
        if self.support is not None:
            out["support"] = self.support
        return out | _rounded(self.extra)


@dataclass
class PermutationResult:
    """Jain & Wallace's permutation test on one prediction: ``n`` shuffles of the attention among real units;
    ``median_tvd``: the median total-variation distance of the output distribution; ``flipped``: the share of
    shuffles that change the predicted class."""

    n: int
    median_tvd: float
    flipped: float


@dataclass
class DocumentFaithfulness:
    """Everything the tests found on one prediction (see the module docstring for its JSON)."""

    text: str
    label: str
    probability: float
    tokens: list[str]
    erase: str
    methods: dict[str, MethodResult]
    kendall_tau: dict[str, float]
    top_k_overlap: dict[str, float]
    details: dict[str, list] = field(default_factory=dict)
    permutation: PermutationResult | None = None

    def to_json(self) -> dict[str, Any]:
        """One object of ``attnkit faithfulness --json``."""
        return {
            "text": self.text,
            "label": self.label,
            "probability": round(self.probability, 6),
            "tokens": list(self.tokens),
            "methods": {name: result.to_json() for name, result in self.methods.items()},
            "kendall_tau": {pair: _finite(tau) for pair, tau in self.kendall_tau.items()},
        }


def _rounded(values: dict[str, float]) -> dict[str, float]:
    return {key: round(value, 6) for key, value in values.items()}


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 6)


EMITTED = "each emitted token"  # the label of the averaged result: p(each emitted token)


def mean_over_steps(steps: Sequence[DocumentFaithfulness], *, text: str) -> DocumentFaithfulness:
    """The mean of ``steps`` (the results of one source, one per emitted token) as one result labelled
    :data:`EMITTED`; a method is kept when every step has it. Every figure is the mean of the steps' figures."""
    if not steps:
        raise ValueError("mean_over_steps: no steps")
    first = steps[0]
    if any(step.tokens != first.tokens or step.erase != first.erase for step in steps):
        raise ValueError("mean_over_steps: the steps test different sources or erasures")
    names = [name for name in first.methods if all(name in step.methods for step in steps)]
    methods = {name: mean_method([step.methods[name] for step in steps]) for name in names}
    pairs = [pair for pair in first.kendall_tau if all(pair in step.kendall_tau for step in steps)]
    return DocumentFaithfulness(
        text=text,
        label=EMITTED,
        probability=_mean([step.probability for step in steps]),
        tokens=list(first.tokens),
        erase=first.erase,
        methods=methods,
        kendall_tau={pair: _mean([step.kendall_tau[pair] for step in steps]) for pair in pairs},
        top_k_overlap={},
    )


def mean_method(found: Sequence[MethodResult]) -> MethodResult:
    """The mean of one method's results over the same units (a translation's steps, a floor's draws)."""
    first = found[0]
    deltas = [f.convergence_delta for f in found if f.convergence_delta is not None]
    steps = [f.steps for f in found if f.steps is not None]
    supports = [f.support for f in found if f.support is not None]
    return MethodResult(
        scores=_columns([f.scores for f in found]),  # [T]
        comprehensiveness={k: _mean([f.comprehensiveness[k] for f in found]) for k in first.comprehensiveness},
        sufficiency={k: _mean([f.sufficiency[k] for f in found]) for k in first.sufficiency},
        aopc_comprehensiveness=_mean([f.aopc_comprehensiveness for f in found]),
        aopc_sufficiency=_mean([f.aopc_sufficiency for f in found]),
        flip_fraction=_mean([f.flip_fraction for f in found]),
        erased_probability=_columns([f.erased_probability for f in found]),
        kept_probability=_columns([f.kept_probability for f in found]),
        counts=list(first.counts),
        top_probability={n: _mean([f.top_probability[n] for f in found]) for n in first.top_probability},
        convergence_delta=max(deltas) if deltas else None,
        steps=max(steps) if steps else None,
        converged=all(f.converged is not False for f in found) if steps else None,
        support=max(supports) if supports else None,
        extra={key: _mean([f.extra.get(key, math.nan) for f in found]) for key in first.extra},
    )


def _columns(rows: Sequence[Sequence[float]]) -> list[float]:
    """The mean of each column of equally long rows."""
    return [_mean(list(column)) for column in zip(*rows, strict=True)]


def _mean(values: Sequence[float]) -> float:
    """The mean of the values that are not NaN (an undefined τ); NaN when none is."""
    kept = [v for v in values if not math.isnan(v)]
    return sum(kept) / len(kept) if kept else math.nan


def top_count(result: DocumentFaithfulness, method: str = "attention", count: int = 3) -> int:
    """The erasure size the sentence speaks of: ``count`` tokens, or all of a shorter text, and never more than
    the method scores at all (a sparse attention's zero-weight tokens are not "attended")."""
    found = result.methods.get(method)
    scored = found.support if found is not None and found.support is not None else len(result.tokens)
    return min(count, len(result.tokens), scored)


def erasure_sentence(result: DocumentFaithfulness, *, method: str = "attention", count: int | None = None) -> str:
    """One plain sentence: ``erasing the 3 most-attended words lowers p(great) from 0.99 to 0.41; 3 random
    words: 0.97`` — from the exact erasures, done here for ``count`` tokens (default :func:`top_count`)."""
    count = top_count(result, method, 3 if count is None else count)
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
    (all of a shorter document, or the units the method scores at all: :func:`top_count`): comprehensiveness at
    top ``count``, averaged over ``results``."""
    counts = [top_count(r, method, count) for r in results]
    drops = [r.probability - _probability_after(r, method, n) for r, n in zip(results, counts, strict=True) if n]
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


def comprehensiveness_line(
    results: Sequence[DocumentFaithfulness],
    method: str = "attention",
    reference: str = "integrated_gradients",
    floor: str = "random",
) -> str:
    """One line over many documents: ``method``'s mean AOPC comprehensiveness as a share of ``reference``'s, with
    ``floor``'s beside it (what ``attnkit demo`` ends with; the results must hold all three methods)."""

    def mean(name: str) -> float:
        return _mean([result.methods[name].aopc_comprehensiveness for result in results])

    found, best, chance = mean(method), mean(reference), mean(floor)
    share = found / best if best > 0 else math.nan
    return (
        f"{method.replace('_', ' ')} finds {share:.2f} of what {reference.replace('_', ' ')} find (AOPC "
        f"comprehensiveness over {len(results)} documents: {method.replace('_', ' ')} {found:.3f}, "
        f"{reference.replace('_', ' ')} {best:.3f}, {floor} {chance:.3f})"
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
    lines = [head, f"{'method':<22}{'AOPC-c':>8}{'AOPC-s':>8}{percents}{'flip':>7}{'support':>9}  top tokens"]
    for name, found in result.methods.items():
        values = "".join(f"{found.comprehensiveness[str(p)]:>8.3f}" for p in PERCENTS)
        top = _top_tokens(result.tokens, found.scores)
        note = _delta_note(found)
        lines.append(
            f"{name:<22}{found.aopc_comprehensiveness:>8.3f}{found.aopc_sufficiency:>8.3f}{values}"
            f"{found.flip_fraction:>7.2f}{_support(found):>9}  {top}{note}"
        )
    if result.kendall_tau:
        pairs = [
            f"{pair}={_number(tau)}"
            for pair, tau in result.kendall_tau.items()
            if not any(map(is_floor, pair.split("|")))
        ]
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
    """The ``k`` best-scored tokens, only among those scored above 0 (a zero-weight token is never "attended")."""
    order = sorted((i for i in range(len(tokens)) if scores[i] > 0), key=lambda i: -scores[i])[:k]
    return " ".join(tokens[i] for i in order) or "-"


def _delta_note(found: MethodResult) -> str:
    """``  (IG delta 1.2e-04, 8 steps)``, and a warning when the steps' cap did not reach the tolerance."""
    if found.convergence_delta is None:
        return ""
    steps = "" if found.steps is None else f", {found.steps} steps"
    warning = f"; NOT within {TOLERANCE:.0%} of p's change: read with care" if found.converged is False else ""
    return f"  (IG delta {found.convergence_delta:.1e}{steps}{warning})"


def _support(found: MethodResult) -> str:
    return "-" if found.support is None else str(found.support)


def _number(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.2f}"
