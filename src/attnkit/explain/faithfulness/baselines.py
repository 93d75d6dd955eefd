"""The two attention baselines of the "is attention explanation?" debate (layer 5).

- Jain & Wallace 2019's permutation test: shuffle the attention weights among the real tokens (padding never
  weighted) and see how far the output moves — the median total-variation distance of the output distribution
  over ``n`` shuffles, and the share of shuffles that change the decision. Attention that can be shuffled
  without consequence does not single out the tokens the decision rests on.
- Wiegreffe & Pinter 2019's uniform baseline: the same model trained with uniform attention over the real tokens
  (``Uniform`` as every attention's distribution); if it is as accurate, the learned attention was not needed.
  :func:`uniform_accuracy_difference` compares two trained classifiers on the same labelled texts.

The distributions of the model's attention poolings (:class:`~attnkit.pooling.AttentionPooling`) are swapped while
a ``with`` block runs, and restored after it.

Shape glossary:
    n  shuffles   B  batch   T  units (keys)   C  classes
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import nn

from attnkit.distributions import Distribution, Uniform
from attnkit.explain.faithfulness.erasure import ERASURES
from attnkit.explain.faithfulness.results import PermutationResult
from attnkit.explain.faithfulness.subject import Subject
from attnkit.pooling import AttentionPooling

__all__ = [
    "Permuted",
    "attention_distributions",
    "permutation_test",
    "permute_among_kept",
    "permuted_attention",
    "total_variation",
    "uniform_accuracy_difference",
    "uniform_attention",
]


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
    (learned minus uniform, in percentage points) on the same labelled ``texts``; all three in percent."""
    learned = classifier.evaluate(texts, labels)["accuracy"]
    uniform = uniform_classifier.evaluate(texts, labels)["accuracy"]
    return {"accuracy": learned, "uniform_accuracy": uniform, "difference": learned - uniform}


def permute_among_kept(weights: torch.Tensor, mask: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Shuffle each row's weights among the positions its mask keeps: weights ``[..., T]``, mask broadcastable
    (True = real) -> ``[..., T]``. Padded positions keep their (zero) weight, every row its sum and its values."""
    kept = mask.expand(weights.shape) if mask is not None else torch.ones_like(weights, dtype=torch.bool)
    noise = torch.rand(weights.shape, generator=generator, device="cpu").to(weights.device)  # [..., T]
    shuffled = torch.argsort(noise.masked_fill(~kept, 2.0), dim=-1)  # kept positions first, in a random order
    in_order = torch.sort((~kept).to(torch.int8), dim=-1, stable=True).indices  # kept positions first, in order
    return torch.zeros_like(weights).scatter(-1, in_order, weights.gather(-1, shuffled))


class Permuted(Distribution):
    """``base``'s weights, shuffled among the kept positions of each row (a new shuffle every call)."""

    def __init__(self, base: nn.Module, generator: torch.Generator) -> None:
        super().__init__()
        self.base, self.generator = base, generator

    def forward(self, scores, mask=None, *, query=None, query_positions=None):
        """scores ``[..., T]``, mask broadcastable -> shuffled weights ``[..., T]``."""
        weights = self.base(scores, mask, query=query, query_positions=query_positions)
        if mask is None:
            mask = torch.ones_like(weights, dtype=torch.bool)
        return permute_among_kept(weights, mask, self.generator)


def attention_distributions(model: nn.Module, kinds: tuple[type, ...] = (AttentionPooling,)) -> list[nn.Module]:
    """The modules of ``model`` of ``kinds`` that hold a ``distribution`` (its attention poolings), in order."""
    return [
        module
        for module in model.modules()
        if isinstance(module, kinds) and isinstance(getattr(module, "distribution", None), Distribution)
    ]


@contextmanager
def _swapped(
    model: nn.Module, make: Callable[[nn.Module], nn.Module], holders: Sequence[nn.Module] | None = None
) -> Iterator[int]:
    holders = attention_distributions(model) if holders is None else list(holders)
    originals = [holder.distribution for holder in holders]
    # a multi-head attention's fused kernel computes softmax itself: its readable path calls the distribution
    fast = [getattr(holder, "fast_path", None) for holder in holders]
    try:
        for holder, original in zip(holders, originals, strict=True):
            holder.distribution = make(original)
            if hasattr(holder, "fast_path"):
                holder.fast_path = False
        yield len(holders)
    finally:
        for holder, original, was in zip(holders, originals, fast, strict=True):
            holder.distribution = original
            if was is not None:
                holder.fast_path = was


@contextmanager
def permuted_attention(
    model: nn.Module, generator: torch.Generator, holders: Sequence[nn.Module] | None = None
) -> Iterator[int]:
    """Within the block every attention distribution of ``model`` (or of just the modules ``holders``, e.g. a
    Transformer decoder's cross-attentions) shuffles its weights among real positions; yields how many were
    swapped (0: the model has no attention to permute)."""
    with _swapped(model, lambda base: Permuted(base, generator), holders) as count:
        yield count


@contextmanager
def uniform_attention(model: nn.Module) -> Iterator[int]:
    """Within the block every attention distribution of ``model`` is :class:`~attnkit.distributions.Uniform`
    (equal weight on each real position); yields how many were swapped."""
    with _swapped(model, lambda base: Uniform()) as count:
        yield count
