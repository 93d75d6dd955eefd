"""The two attention baselines of the "is attention explanation?" debate (layer 5).

- Jain & Wallace 2019's permutation test: shuffle the attention weights among the real tokens (padding never
  weighted) and see how far the output moves — the median total-variation distance of the output distribution
  over ``n`` shuffles, and the share of shuffles that change the decision. Attention that can be shuffled
  without consequence does not single out the tokens the decision rests on.
- Wiegreffe & Pinter 2019's uniform baseline: the same model trained with uniform attention over the real tokens
  (``Uniform`` as every attention's distribution); if it is as accurate, the learned attention was not needed.
  :func:`uniform_accuracy_difference` compares two trained classifiers on the same labelled texts.

Shape glossary:
    n  shuffles   T  units   C  classes
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from attnkit.explain.faithfulness.erasure import ERASURES
from attnkit.explain.faithfulness.permutation import permuted_attention
from attnkit.explain.faithfulness.results import PermutationResult
from attnkit.explain.faithfulness.subject import Subject

__all__ = ["permutation_test", "total_variation", "uniform_accuracy_difference"]


def total_variation(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """``½ Σ |p - q|`` over the last dimension: ``[..., C]`` × ``[..., C]`` -> ``[...]``."""
    return 0.5 * (p - q).abs().sum(dim=-1)


def permutation_test(subject: Subject, *, n: int = 100, seed: int = 0) -> PermutationResult | None:
    """Jain & Wallace's permutation test on one prediction: ``n`` shuffles (drawn with ``seed``) of every
    attention distribution of the model among the real positions, in one batched forward (a subject with a
    ``permutable()`` method names the attention modules to shuffle: a Transformer seq2seq step, its decoder's
    cross-attentions). ``None`` when the model has no attention distribution to shuffle (mean or max pooling)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    generator = torch.Generator().manual_seed(seed)
    keep = torch.ones(n, len(subject.tokens), dtype=torch.bool)  # [n, T]: nothing erased, n copies
    holders = subject.permutable() if hasattr(subject, "permutable") else None
    with permuted_attention(subject.model, generator, holders) as swapped:
        if not swapped:
            return None
        shuffled = subject.probabilities_when(keep, ERASURES["delete"])  # [n, C], a new shuffle per row
    distance = total_variation(shuffled, subject.probabilities[None])  # [n]
    flipped = (shuffled.argmax(-1) != subject.label).float().mean()
    return PermutationResult(n=n, median_tvd=float(distance.median()), flipped=float(flipped))


def uniform_accuracy_difference(
    classifier, uniform_classifier, texts: Sequence[str], labels: Sequence[str]
) -> dict[str, float]:
    """Wiegreffe & Pinter's baseline: ``accuracy`` of the trained ``classifier``, ``uniform_accuracy`` of the same
    model trained with uniform attention (``attnkit train classify ... --uniform-attention``), and ``difference``
    (learned minus uniform, in accuracy points of [0, 1]) on the same labelled ``texts``."""
    learned = classifier.evaluate(texts, labels)["accuracy"]
    uniform = uniform_classifier.evaluate(texts, labels)["accuracy"]
    return {"accuracy": learned, "uniform_accuracy": uniform, "difference": learned - uniform}
