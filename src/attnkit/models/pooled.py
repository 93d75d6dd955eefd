"""Embeddings (+ an optional encoder) + any pooling + a linear classifier.

Shape glossary:
    B  batch   T  tokens   E  embedding size   D  encoder output size   C  classes
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from attnkit.models.encoders import BiGRUEncoder, TransformerEncoder
from attnkit.models.padding import PADDING_MODES, RenormalisedSoftmax, UnmaskedPooling
from attnkit.outputs import AttentionOutput
from attnkit.pooling import AttentionPooling, MaxPooling, MeanPooling

__all__ = ["POOLINGS", "PooledClassifier", "PooledClassifierOutput", "build_pooling"]

POOLINGS = ("attention", "multihead", "mean", "max")


def build_pooling(name: str, dim: int, *, heads: int = 4, padding: str = "masked") -> nn.Module:
    """``attention`` (one head), ``multihead`` (``heads`` learned queries), ``mean`` or ``max``.

    ``padding`` says how attention pooling treats padded positions (see :mod:`attnkit.models.padding`):
    ``masked`` (the default and the right way), ``unmasked`` or ``renormalised`` (the masking experiment's
    alternatives). Mean and max pooling are always masked.
    """
    if padding not in PADDING_MODES:
        raise ValueError(f"unknown padding mode {padding!r}; choose from {', '.join(PADDING_MODES)}")
    if name in ("attention", "multihead"):
        distribution = RenormalisedSoftmax() if padding == "renormalised" else None
        pooling = AttentionPooling(dim, heads=1 if name == "attention" else heads, distribution=distribution)
        return UnmaskedPooling(pooling) if padding == "unmasked" else pooling
    if name == "mean":
        return MeanPooling()
    if name == "max":
        return MaxPooling()
    raise ValueError(f"unknown pooling {name!r}; choose from {', '.join(POOLINGS)}")


@dataclass
class PooledClassifierOutput:
    """``logits [B, C]`` and the pooling's ``AttentionOutput(pooled [B, ·], weights [B, heads, T])``."""

    logits: torch.Tensor
    pooling: AttentionOutput


class PooledClassifier(nn.Module):
    """``logits = W · pool(encoder(embed(tokens)), mask)``.

    Args:
        vocab_size: embedding rows; id ``padding_idx`` is padding.
        num_classes: ``C``.
        embed_dim: ``E``.
        encoder: ``None``, a :class:`BiGRUEncoder` or a :class:`TransformerEncoder` taking ``E`` inputs.
        pooling: a pooling module taking the encoder's output size (default: one-head attention pooling).
        dropout: before the classifier.
    """

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        *,
        embed_dim: int = 128,
        encoder: nn.Module | None = None,
        pooling: nn.Module | None = None,
        dropout: float = 0.3,
        padding_idx: int = 0,
    ) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=padding_idx)
        self.encoder = encoder
        feature_dim = getattr(encoder, "output_dim", embed_dim)
        self.pooling = pooling if pooling is not None else AttentionPooling(feature_dim)
        heads = getattr(self.pooling, "heads", 1)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(feature_dim * heads, num_classes)

    def forward(self, token_ids: torch.Tensor, mask: torch.Tensor) -> PooledClassifierOutput:
        """token_ids ``[B, T]`` (long), mask ``[B, T]`` (True = real) -> logits ``[B, C]`` and pooling weights."""
        x = self.embedding(token_ids)  # [B, T, E]
        if isinstance(self.encoder, BiGRUEncoder):
            x = self.encoder(x, mask)  # [B, T, D]
        elif isinstance(self.encoder, TransformerEncoder):
            x, _ = self.encoder(x, mask)
        elif self.encoder is not None:
            x = self.encoder(x, mask)
        pooled = self.pooling(x, mask)
        return PooledClassifierOutput(self.classifier(self.dropout(pooled.context)), pooled)
