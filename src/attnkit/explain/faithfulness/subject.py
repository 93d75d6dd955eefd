"""What the faithfulness tests need from a model family: one prediction as a :class:`Subject` (layer 5).

A subject is one input (a document, a source sentence for one target token, an image) as the model read it: ``T``
units (tokens, grid cells) in order, the prediction, and three ways in — a batched forward of erased variants,
the model's own attention over the units, and the embeddings that gradient methods attribute to. The methods, the
erasure metrics and the tests in this package are written once against this protocol; each task adapts its
models to it (:mod:`attnkit.tasks.classify.faithfulness` for the classifiers).

Shape glossary:
    T  units of the input (tokens the model read)   N  erased variants   C  classes   E  embedding features
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import torch
from torch import nn

from attnkit.explain.faithfulness.erasure import ERASURES, Erasure

__all__ = ["BatchedGradientInputs", "Embedded", "GradientInputs", "Subject", "check_subject"]


@dataclass
class GradientInputs:
    """What Captum needs to attribute one prediction to its input embeddings: the embedding layer's output
    ``embeddings [1, ..., E]``, ``forward``: ``[n, ..., E] -> probabilities [n, C]`` (the model on ``n`` embedded
    copies), and ``to_units``: attributions ``[1, ..., E]`` -> one score per unit ``[T]`` (summed over ``E``)."""

    embeddings: torch.Tensor
    forward: Callable[[torch.Tensor], torch.Tensor]
    to_units: Callable[[torch.Tensor], torch.Tensor]


@dataclass
class BatchedGradientInputs:
    """:class:`GradientInputs` of ``D`` documents at once (a subject family's optional
    ``batched_gradient_inputs(subjects)``): ``embeddings [D, ..., E]`` padded to a common shape, ``forward``:
    ``[P·D, ..., E] -> [P·D, C]`` with rows copy-major (row ``p·D + d`` is a copy of document ``d``), and
    ``to_units``: ``[D, ..., E]`` -> ``D × [T_d]``."""

    embeddings: torch.Tensor
    forward: Callable[[torch.Tensor], torch.Tensor]
    to_units: Callable[[torch.Tensor], list[torch.Tensor]]


class Subject(Protocol):
    """One prediction, ready for the faithfulness tests."""

    tokens: list[str]  # [T] what the model read, in order
    label: int  # the predicted class
    label_names: list[str]  # [C]
    probabilities: torch.Tensor  # [C] float32, the prediction on the whole input
    model: nn.Module  # (its attention distributions are what the permutation test swaps)

    def probabilities_when(self, keep: torch.Tensor, erase: Erasure) -> torch.Tensor:
        """keep ``[N, T]`` bool (False = erase that unit) -> probabilities ``[N, C]`` float32, all variants in
        batched forwards. ``erase`` (an :class:`~attnkit.explain.faithfulness.erasure.Erasure`) says how:
        ``erase.erase(values [N, T], keep, blank=UNK)`` gives each variant's values, which units are present and
        which attended; :func:`~attnkit.explain.faithfulness.erasure.compact` closes up the absent ones."""
        ...

    def attention_scores(self) -> dict[str, torch.Tensor]:
        """``{"attention": [T], ...}``: the model's own weights per unit (heads averaged), and ``rollout`` /
        ``flow`` ``[T]`` where an encoder mixes the units."""
        ...

    def attention_details(self) -> dict[str, list]:
        """Per-head and per-level weights (``attention_heads [heads][T]``; HAN ``attention_words [T]`` and
        ``attention_sentences [S]``), for readers who want more than the averaged ``attention``."""
        ...

    def gradient_inputs(self) -> GradientInputs:
        """The embeddings and forward that :mod:`~attnkit.explain.faithfulness.gradients` attributes through."""
        ...


@dataclass
class Embedded:
    """Replace an embedding layer's output with a given tensor while a forward runs (a forward hook).

    Only the layer's first call inside the block is replaced: a source embedding shared with the target (a
    Transformer with ``share_embeddings``) is called again by the decoder, which must read its own tokens.
    """

    layer: nn.Module
    replacement: torch.Tensor
    _handle: object = field(default=None, repr=False)
    _calls: int = field(default=0, repr=False)

    def __enter__(self) -> Embedded:
        shape = tuple(self.replacement.shape)

        def hook(module, inputs, output):
            self._calls += 1
            if self._calls > 1:
                return output
            if output.numel() != self.replacement.numel():
                raise ValueError(f"embedding output {tuple(output.shape)} does not match the replacement {shape}")
            return self.replacement.reshape(output.shape)

        self._calls = 0
        self._handle = self.layer.register_forward_hook(hook)
        return self

    def __exit__(self, *exc) -> None:
        self._handle.remove()


def check_subject(subject: Subject, *, tolerance: float = 1e-3) -> None:
    """Refuse, in one line, a subject that does not keep the protocol: tokens not a list of ``T`` strings, a
    label outside the classes, or ``probabilities`` / ``probabilities_when`` that are not probabilities
    (non-negative rows summing to 1: logits given where probabilities are expected are refused, as a tensor of
    the wrong shape is). Runs one forward (nothing erased) when the subject has units.
    """
    name = type(subject).__name__
    tokens = getattr(subject, "tokens", None)
    if not isinstance(tokens, list) or not all(isinstance(token, str) for token in tokens):
        raise ValueError(
            f"{name}.tokens: expected a list of str (the units the model read), got {type(tokens).__name__}"
        )
    probabilities = getattr(subject, "probabilities", None)
    if not isinstance(probabilities, torch.Tensor) or probabilities.dim() != 1:
        raise ValueError(
            f"{name}.probabilities: expected a [C] tensor, got {getattr(probabilities, 'shape', probabilities)}"
        )
    classes = probabilities.numel()
    _check_distribution(f"{name}.probabilities", probabilities[None], tolerance)
    if not 0 <= subject.label < classes or len(subject.label_names) != classes:
        raise ValueError(
            f"{name}: label {subject.label} and {len(subject.label_names)} label names for {classes} classes"
        )
    if tokens:
        out = subject.probabilities_when(torch.ones(1, len(tokens), dtype=torch.bool), ERASURES["delete"])
        if tuple(out.shape) != (1, classes):
            raise ValueError(
                f"{name}.probabilities_when: keep [1, {len(tokens)}] gave {tuple(out.shape)}, not [1, {classes}]"
            )
        _check_distribution(f"{name}.probabilities_when", out, tolerance)


def _check_distribution(where: str, rows: torch.Tensor, tolerance: float) -> None:
    """``rows [N, C]`` must be probabilities."""
    sums = rows.detach().double().sum(-1)
    worst = float(sums[(sums - 1).abs().argmax()]) if sums.numel() else 1.0
    if bool((rows < 0).any()) or abs(worst - 1) > tolerance:
        raise ValueError(
            f"{where}: expected probabilities (rows >= 0 summing to 1), got a row summing to {worst:.4g}: "
            "logits? apply softmax"
        )
