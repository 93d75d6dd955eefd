"""Embeddings (+ an optional encoder) + any pooling + a linear classifier.

Shape glossary:
    B  batch   T  tokens   E  embedding size   D  encoder output size   C  classes
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from attnkit.distributions import Distribution
from attnkit.models.diversity import EncodedStates
from attnkit.models.encoders import BiGRUEncoder, TransformerEncoder, encode_packed
from attnkit.models.padding import PADDING_MODES, RenormalisedSoftmax, UnmaskedPooling
from attnkit.outputs import AttentionOutput
from attnkit.pooling import AttentionPooling, MaxPooling, MeanPooling, TaskScaling

__all__ = [
    "ATTENTION_VALUES",
    "POOLINGS",
    "PooledClassifier",
    "PooledClassifierOutput",
    "bigram_ids",
    "build_pooling",
    "logit_parts",
    "pool",
    "value_dim",
    "word_values",
]

POOLINGS = ("attention", "multihead", "mean", "max")


def build_pooling(
    name: str,
    dim: int,
    *,
    heads: int = 4,
    padding: str = "masked",
    hidden: int | None = None,
    distribution: Distribution | None = None,
) -> nn.Module:
    """``attention`` (one head), ``multihead`` (``heads`` learned queries), ``mean`` or ``max``; ``hidden`` is the
    attention's ``tanh(W h + b)`` size (default: ``dim``); ``distribution`` the attention's (default softmax).

    ``padding`` says how attention pooling treats padded positions (see :mod:`attnkit.models.padding`):
    ``masked`` (the default and the right way), ``unmasked`` or ``renormalised`` (the masking experiment's
    alternatives; a softmax renormalised after the fact, so it takes no other ``distribution``). Mean and max
    pooling are always masked and take no distribution.
    """
    if padding not in PADDING_MODES:
        raise ValueError(f"unknown padding mode {padding!r}; choose from {', '.join(PADDING_MODES)}")
    if distribution is not None and name in ("mean", "max"):
        raise ValueError(f"{name} pooling has no attention distribution to replace")
    if distribution is not None and padding == "renormalised":
        raise ValueError("renormalised padding is a softmax renormalised after the fact: it takes no distribution")
    if name in ("attention", "multihead"):
        if padding == "renormalised":
            distribution = RenormalisedSoftmax()
        pooling = AttentionPooling(
            dim, hidden=hidden, heads=1 if name == "attention" else heads, distribution=distribution
        )
        return UnmaskedPooling(pooling) if padding == "unmasked" else pooling
    if name == "mean":
        return MeanPooling()
    if name == "max":
        return MaxPooling()
    raise ValueError(f"unknown pooling {name!r}; choose from {', '.join(POOLINGS)}")


ATTENTION_VALUES = ("states", "embeddings")


def token_inputs(
    model: nn.Module,
    vocab: int,
    dim: int,
    padding_idx: int,
    content_only: bool,
    values: str,
    bigram_buckets: int = 0,
    value_layer: int = 0,
) -> None:
    """Check ``values`` and give ``model`` its ``attention_values``, ``embedding``, ``attendable`` (a ``[V]`` bool
    buffer, all True, when ``content_only``; else None), ``bigram_embedding`` (``bigram_buckets + 1`` rows, row 0
    padding, when ``bigram_buckets`` > 0; else None), read by :func:`embed_tokens`, and ``value_layer`` (a per-word
    ``GELU(W e + b)`` of ``value_layer`` units when > 0, for ``values == "embeddings"`` only; else None), read by
    :func:`word_values`."""
    if values not in ATTENTION_VALUES:
        raise ValueError(f"attention_values must be one of {ATTENTION_VALUES}, got {values!r}")
    if bigram_buckets < 0:
        raise ValueError(f"bigram_buckets must be >= 0, got {bigram_buckets}")
    if value_layer < 0 or (value_layer and values != "embeddings"):
        raise ValueError(f"value_layer must be >= 0 and needs attention_values 'embeddings', got {value_layer}")
    model.attention_values = values
    model.embedding = nn.Embedding(vocab, dim, padding_idx=padding_idx)
    model.register_buffer("attendable", torch.ones(vocab, dtype=torch.bool) if content_only else None)
    model.bigram_buckets = bigram_buckets
    model.bigram_embedding = nn.Embedding(bigram_buckets + 1, dim, padding_idx=0) if bigram_buckets else None
    model.value_layer = nn.Sequential(nn.Linear(dim, value_layer), nn.GELU()) if value_layer else None


def value_dim(model: nn.Module, embed_dim: int) -> int:
    """The size of what :func:`word_values` gives: the value layer's width, else ``embed_dim``."""
    return embed_dim if model.value_layer is None else model.value_layer[0].out_features


def word_values(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """What a model with ``attention_values == "embeddings"`` averages: each position's own vector ``x [..., E]``,
    or, with a value layer, ``GELU(W x + b)`` ``[..., N]`` — position by position, so that each weight still
    multiplies one word and nothing of its neighbours."""
    return x if model.value_layer is None else model.value_layer(x)


def embed_tokens(model: nn.Module, token_ids: torch.Tensor, mask: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The words' vectors ``x = model.embedding(token_ids)`` ``[N, T, E]`` plus, for a model with bigram buckets,
    each position's hashed bigram with its successor (:func:`bigram_ids` of token_ids and mask ``[N, T]``)."""
    if model.bigram_embedding is None:
        return x
    return x + model.bigram_embedding(bigram_ids(token_ids, mask, model.bigram_buckets))  # [N, T, E]


def pool(
    pooling: nn.Module,
    x: torch.Tensor,
    mask: torch.Tensor | None,
    scale: torch.Tensor | None = None,
    values: torch.Tensor | None = None,
) -> AttentionOutput:
    """``pooling(x [B, T, D], mask [B, T])``, handing it the TaSc ``scale [B, T]`` and the ``values [B, T, Dv]`` to
    average when there are some (only attention poolings take them)."""
    given = {name: value for name, value in (("scale", scale), ("values", values)) if value is not None}
    return pooling(x, mask, **given)


def logit_parts(
    classifier: nn.Linear, weights: torch.Tensor, values: torch.Tensor, label: int, scale: torch.Tensor | None = None
) -> torch.Tensor:
    """Each position's exact part of class ``label``'s logit against the mean logit, for a linear ``classifier``
    over the heads' attention-weighted ``values``: ``c_t = Σ_h weights[h, t] · scale[t] · (w_label,h − w̄_h) ·
    values[t]``, so that ``Σ_t c_t = (logit_label − mean logit) − (b_label − mean b)``.

    classifier reads ``[H·E]``, weights ``[H, T]``, values ``[T, E]``, scale (TaSc's, optional) ``[T]`` -> ``[T]``
    float32 on the CPU (positive: for ``label``).
    """
    matrix = classifier.weight.detach().float().cpu()  # [C, H·E]
    direction = (matrix[label] - matrix.mean(0)).view(weights.shape[0], -1)  # [H, E]
    parts = (weights.float().cpu() * (direction @ values.detach().float().cpu().T)).sum(0)  # [T]
    return parts if scale is None else parts * scale.float().cpu()


def _attention(pooling: nn.Module) -> nn.Module:
    """The pooling itself, or the one an :class:`UnmaskedPooling` wraps."""
    return pooling.pooling if isinstance(pooling, UnmaskedPooling) else pooling


_BIGRAM_MULTIPLIER = 1_000_003  # a prime above any vocabulary size: (a, b) -> a·M + b is one-to-one


def bigram_ids(token_ids: torch.Tensor, mask: torch.Tensor, buckets: int) -> torch.Tensor:
    """Hashed word bigrams, fastText-style: token_ids ``[B, T]``, mask ``[B, T]`` -> bigram ids ``[B, T]``.

    Position ``t`` holds the bigram ``(token t, token t+1)`` hashed into ``1 .. buckets``; 0 (the embedding's
    padding row) where token ``t + 1`` is padding or past the end, so a document's ids do not depend on how much
    padding follows it. The hash is ``(a·1000003 + b) mod buckets``: deterministic, the same on every machine.
    """
    if buckets < 1:
        raise ValueError(f"buckets must be >= 1, got {buckets}")
    pairs = token_ids[:, :-1] * _BIGRAM_MULTIPLIER + token_ids[:, 1:]  # [B, T-1]
    ids = (pairs % buckets + 1) * (mask[:, :-1] & mask[:, 1:])  # [B, T-1]
    return F.pad(ids, (0, 1))  # [B, T]: the last position has no successor


@dataclass
class PooledClassifierOutput:
    """``logits [B, C]``, the pooling's ``AttentionOutput(pooled [B, ·], weights [B, heads, T])`` and the encoder's
    states (none without an encoder; for :func:`~attnkit.models.diversity.diversity_penalty`)."""

    logits: torch.Tensor
    pooling: AttentionOutput
    encoded: tuple[EncodedStates, ...] = ()


class PooledClassifier(nn.Module):
    """``logits = W · pool(encoder(embed(tokens)), mask)``.

    Args:
        vocab_size, num_classes, embed_dim: ``V``, ``C``, ``E``; id ``padding_idx`` is padding.
        bigram_buckets: if > 0, each position's vector also adds the embedding of its hashed word bigram
            (:func:`bigram_ids`; fastText's n-gram features, here under the same pooling); 0 = words only.
        encoder: ``None``, a :class:`BiGRUEncoder` or a :class:`TransformerEncoder` taking ``E`` inputs.
        pooling: a pooling module taking the encoder's output size (default: one-head attention pooling).
        dropout: before the classifier.
        attend_content_only: keep a ``[V]`` boolean buffer ``attendable`` (all True until set, saved with the
            weights): the pooling may then only attend to tokens it marks; the encoder still reads every token.
        task_scaling: a :class:`~attnkit.pooling.TaskScaling` (TaSc) over the word embeddings (not the bigram
            features, so that a token's score stays its own); needs an attention pooling.
        attention_values: what the attention averages: ``"states"`` (the encoder's, the default) or
            ``"embeddings"`` (each position's own input vector, while the encoder's states still choose the
            weights: a weight then multiplies one word and nothing of its neighbours; needs an attention pooling
            whose ``dim`` is the encoder's and a classifier over ``E``, ``N`` with a value layer).
        value_layer: with ``attention_values="embeddings"``, the width ``N`` of a per-word ``GELU(W e + b)`` that
            the attention averages instead of ``e`` itself (:func:`word_values`; 0, the default: ``e``).
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
        bigram_buckets: int = 0,
        attend_content_only: bool = False,
        task_scaling: TaskScaling | None = None,
        attention_values: str = "states",
        value_layer: int = 0,
    ) -> None:
        super().__init__()
        self.attendable: torch.Tensor | None
        inputs = (attend_content_only, attention_values, bigram_buckets, value_layer)
        token_inputs(self, vocab_size, embed_dim, padding_idx, *inputs)
        self.encoder = encoder
        self.task_scaling = task_scaling
        feature_dim = getattr(encoder, "output_dim", embed_dim)
        self.pooling = pooling if pooling is not None else AttentionPooling(feature_dim)
        if attention_values == "embeddings" and not isinstance(_attention(self.pooling), AttentionPooling):
            raise ValueError("attention_values 'embeddings' needs an attention pooling (attention or multihead)")
        heads = getattr(self.pooling, "heads", 1)
        self.dropout = nn.Dropout(dropout)
        pooled_dim = value_dim(self, embed_dim) if attention_values == "embeddings" else feature_dim
        self.classifier = nn.Linear(pooled_dim * heads, num_classes)

    def forward(
        self, token_ids: torch.Tensor, mask: torch.Tensor, *, attend_mask: torch.Tensor | None = None
    ) -> PooledClassifierOutput:
        """token_ids ``[B, T]`` (long), mask ``[B, T]`` (True = real) -> logits ``[B, C]`` and pooling weights.

        ``attend_mask [B, T]`` (optional, within ``mask``): the positions every attention may attend to — the
        pooling's and a Transformer encoder's self-attention — while a BiGRU still reads all of ``mask``
        (faithfulness's ``mask`` erasure: a token kept in the sequence but masked out of every attention).
        """
        attend = mask if attend_mask is None else attend_mask & mask  # [B, T]
        x = self.embedding(token_ids)  # [B, T, E]
        scale = None if self.task_scaling is None else self.task_scaling(token_ids, x, mask)  # [B, T]
        x = embed_tokens(self, token_ids, mask, x)  # [B, T, E]
        values = word_values(self, x) if self.attention_values == "embeddings" else None  # [B, T, E or N]
        if isinstance(self.encoder, BiGRUEncoder):
            x = self.encoder(x, mask)  # [B, T, D]
        elif isinstance(self.encoder, TransformerEncoder):
            x = encode_packed(self.encoder, x, attend)  # [B, T, D]
        elif self.encoder is not None:
            x = self.encoder(x, mask)
        attend = attend if self.attendable is None else attend & self.attendable[token_ids]
        pooled = pool(self.pooling, x, attend, scale, values)
        encoded = () if self.encoder is None else (EncodedStates(x, mask),)
        return PooledClassifierOutput(self.classifier(self.dropout(pooled.context)), pooled, encoded)
