"""Run the faithfulness tests on predictions (layer 5): every method's scores, then all its erasures at every k
(and the flip search) in batched forwards, then the metrics.

    results = faithfulness_of(subjects, methods=["attention", "random"], erase="delete", seed=0)
    results[0].methods["attention"].aopc_comprehensiveness

Shape glossary:
    T  units   K  erasure sizes   N  erased variants of one prediction   C  classes
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from itertools import combinations

import torch

from attnkit.explain.faithfulness import metrics
from attnkit.explain.faithfulness.erasure import PERCENTS, Erasure, as_erasure, flip_counts, keep_top, top_counts
from attnkit.explain.faithfulness.methods import STEPS, Method, MethodScores, as_methods, method_scores
from attnkit.explain.faithfulness.results import DocumentFaithfulness, MethodResult, mean_method
from attnkit.explain.faithfulness.subject import Subject, check_subject

__all__ = ["BATCH_ROWS", "NAMED_COUNTS", "OVERLAP_PERCENT", "batched_gradients", "evaluate_subject", "faithfulness_of"]

OVERLAP_PERCENT = 10  # top-k overlap between methods at the top 10 % (at least one unit)
BATCH_ROWS = 4096  # token rows (copies × longest document × documents) per batched gradient forward (fastest of 2k-16k)
NAMED_COUNTS = (1, 2, 3)  # "erasing the 3 most-attended words ...": p(pred) after erasing the top 1, 2, 3 units


def faithfulness_of(
    subjects: Iterable[Subject],
    *,
    texts: Sequence[str] | None = None,
    methods: Sequence[str | Method] | None = None,
    erase: str | Erasure = "delete",
    seed: int = 0,
    steps: int = STEPS,
) -> list[DocumentFaithfulness]:
    """The tests on each subject, in order. ``random`` and the order of each method's tied units draw from two
    generators seeded with ``seed``, so the results repeat under a seed. ``methods`` and ``erase`` are names (read
    here, once) or objects of :data:`METHODS` / :data:`ERASURES`'s kind; ``methods=None``: all of them."""
    methods, erase = as_methods(methods), as_erasure(erase)
    generator, ties = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
    subjects = list(subjects)
    for subject in subjects:
        check_subject(subject)
    gradients = batched_gradients(subjects, methods, steps=steps)
    options = {"methods": methods, "erase": erase, "generator": generator, "steps": steps, "ties": ties}
    return [
        evaluate_subject(subject, text=" ".join(subject.tokens) if texts is None else texts[i], gradients=g, **options)
        for i, (subject, g) in enumerate(zip(subjects, gradients, strict=True))
    ]


def batched_gradients(subjects: Sequence[Subject], methods: Sequence[Method], *, steps: int) -> list[tuple | None]:
    """Each subject's ``(gradient × input, integrated gradients or None)`` where its family can stack documents
    (``batched_gradient_inputs``), many documents of one model per forward and backward; ``None`` for the others
    (they run their own). Documents go shortest first, in groups of at most :data:`BATCH_ROWS` token rows."""
    from attnkit.explain.faithfulness.gradients import fused_gradients_batched

    found: list[tuple | None] = [None] * len(subjects)
    methods = as_methods(methods)
    if not any(method.gradient for method in methods):
        return found
    integrated = any(method.integrated for method in methods)
    copies = 2 + steps if integrated else 1
    groups: dict[tuple, list[int]] = {}
    for index, subject in enumerate(subjects):
        if getattr(subject, "batched_gradient_inputs", None) is not None and subject.tokens:
            groups.setdefault((type(subject), id(subject.model)), []).append(index)
    for indices in groups.values():
        indices.sort(key=lambda i: len(subjects[i].tokens))
        for chunk in _chunks(indices, [copies * len(subjects[i].tokens) for i in indices]):
            group = [subjects[i] for i in chunk]
            inputs = group[0].batched_gradient_inputs(group)
            done = fused_gradients_batched(inputs, [s.label for s in group], steps=steps, integrated=integrated)
            for index, pair in zip(chunk, done, strict=True):
                found[index] = pair
    return found


def _chunks(indices: list[int], rows: list[int]) -> list[list[int]]:
    """``indices`` in order, cut so that each piece's longest row count times its size stays within BATCH_ROWS
    (a piece holds at least one)."""
    pieces: list[list[int]] = []
    for index, size in zip(indices, rows, strict=True):
        if pieces and size * (len(pieces[-1]) + 1) <= BATCH_ROWS:
            pieces[-1].append(index)
        else:
            pieces.append([index])
    return pieces


def evaluate_subject(
    subject: Subject,
    *,
    text: str,
    methods: Sequence[str | Method],
    erase: str | Erasure,
    generator: torch.Generator,
    steps: int = STEPS,
    gradients: tuple | None = None,
    ties: torch.Generator | None = None,
) -> DocumentFaithfulness:
    """The tests on one subject (see :func:`faithfulness_of`); ``gradients`` as :func:`method_scores` takes them;
    ``ties`` orders each method's tied units at random (default: a generator seeded with 0)."""
    erase = as_erasure(erase)
    ties = torch.Generator().manual_seed(0) if ties is None else ties
    units = len(subject.tokens)
    label = subject.label
    full = float(subject.probabilities[label])
    found = method_scores(subject, methods, erase=erase, generator=generator, steps=steps, gradients=gradients)
    results: dict[str, MethodResult] = {}
    if units:
        results = _erasure_results(subject, found, erase=erase, full=full, ties=ties)
    names = list(results)
    tau = metrics.kendall_taus({name: found[name].scores for name in names})
    overlap_k = top_counts(units, (OVERLAP_PERCENT,))[0] if units else 0
    overlap = {
        f"{a}|{b}": metrics.top_k_overlap(found[a].scores, found[b].scores, overlap_k, generator=ties)
        for a, b in combinations(names, 2)
        if overlap_k
    }
    return DocumentFaithfulness(
        text=text,
        label=subject.label_names[label],
        probability=full,
        tokens=list(subject.tokens),
        erase=erase.name,
        methods=results,
        kendall_tau=tau,
        top_k_overlap=overlap,
        details=subject.attention_details(),
    )


def _erasure_results(
    subject: Subject, found: dict[str, MethodScores], *, erase: Erasure, full: float, ties: torch.Generator
) -> dict[str, MethodResult]:
    """Every method's erasures in one batched pass: comprehensiveness and sufficiency masks at each k, and the
    flip search's cumulative erasures; identical masks are run once. A method with several draws (``random``) is
    the mean over them, with the spread of its AOPCs in ``extra``."""
    units = len(subject.tokens)
    counts, steps = top_counts(units), flip_counts(units)
    named = [n for n in NAMED_COUNTS if n <= units]
    vectors = [(name, vector) for name, scores in found.items() for vector in [scores.scores, *scores.draws]]
    blocks = []
    for _, vector in vectors:
        order = metrics.ranking(vector, generator=ties)  # [T], ties in a seeded random order
        blocks += [keep_top(order, counts, keep=False), keep_top(order, counts, keep=True)]
        blocks += [keep_top(order, steps, keep=False), keep_top(order, named, keep=False)]
    unique, inverse = torch.unique(torch.cat(blocks), dim=0, return_inverse=True)  # of [N, T]
    probabilities = subject.probabilities_when(unique, erase)[inverse]  # [N, C]
    per_vector = 2 * len(counts) + len(steps) + len(named)
    curves: dict[str, list[MethodResult]] = {}
    for index, (name, vector) in enumerate(vectors):
        block = probabilities[index * per_vector : (index + 1) * per_vector]
        curves.setdefault(name, []).append(_curves(block, vector, subject.label, full, counts, steps, named))
    results = {}
    for name, scores in found.items():
        draws = curves[name]
        result = draws[0] if len(draws) == 1 else mean_method(draws)
        result.scores = draws[0].scores
        if len(draws) > 1:
            for figure in ("aopc_comprehensiveness", "aopc_sufficiency"):
                result.extra[f"{figure}_sd"] = statistics.stdev(getattr(draw, figure) for draw in draws)
        result.convergence_delta, result.steps, result.converged = (
            scores.convergence_delta,
            scores.steps,
            scores.converged,
        )
        result.support = metrics.support(scores.scores)
        results[name] = result
    return results


def _curves(block, vector, label: int, full: float, counts, steps, named) -> MethodResult:
    """One ranking's figures from its erasures' probabilities ``block [per vector, C]``."""
    erased = block[: len(counts), label]  # [K]
    kept = block[len(counts) : 2 * len(counts), label]  # [K]
    flips = block[2 * len(counts) : 2 * len(counts) + len(steps)].argmax(-1).tolist()
    top = block[2 * len(counts) + len(steps) :, label].tolist()  # [len(named)]
    comprehensiveness = metrics.comprehensiveness(full, erased)
    sufficiency = metrics.sufficiency(full, kept)
    return MethodResult(
        scores=vector.tolist(),
        comprehensiveness={str(p): v for p, v in zip(PERCENTS, comprehensiveness, strict=True)},
        sufficiency={str(p): v for p, v in zip(PERCENTS, sufficiency, strict=True)},
        aopc_comprehensiveness=metrics.aopc(comprehensiveness),
        aopc_sufficiency=metrics.aopc(sufficiency),
        flip_fraction=metrics.flip_fraction(steps, flips, label, len(vector)),
        erased_probability=erased.tolist(),
        kept_probability=kept.tolist(),
        counts=counts,
        top_probability=dict(zip(named, top, strict=True)),
    )
