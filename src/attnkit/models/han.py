"""Hierarchical attention network (Yang et al. 2016): words -> sentence vectors -> document vector -> classes.

A BiGRU encodes the words of each sentence and attention pooling summarises them; a second BiGRU encodes the
sentence vectors and a second attention pooling summarises the document. Masks are nested: ``word_mask``
marks real words, ``sentence_mask`` real sentences. Empty sentences and empty documents are safe: they are
skipped by the encoders and pool to zeros with all-zero weights.

Shape glossary:
    B  documents   S  sentences per document   W  words per sentence
    E  embedding size   Dw, Ds  word- and sentence-level feature sizes (2 × GRU hidden)   C  classes
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from attnkit.distributions import Distribution
from attnkit.models.diversity import EncodedStates
from attnkit.models.encoders import BiGRUEncoder
from attnkit.models.pooled import build_pooling, embed_tokens, pool, token_inputs, value_dim, word_values
from attnkit.outputs import AttentionOutput
from attnkit.pooling import TaskScaling

__all__ = ["HANOutput", "HierarchicalAttentionClassifier"]


@dataclass
class HANOutput:
    """``logits [B, C]``; ``words``: weights ``[B, S, W]`` within each sentence; ``sentences``: weights ``[B, S]``;
    ``encoded``: the word BiGRU's states of the real sentences and the sentence BiGRU's states (for
    :func:`~attnkit.models.diversity.diversity_penalty`)."""

    logits: torch.Tensor
    words: AttentionOutput
    sentences: AttentionOutput
    encoded: tuple[EncodedStates, ...] = ()


def _compact(mask: torch.Tensor) -> torch.Tensor:
    """Indices that move each row's kept positions to the front, keeping their order. mask ``[B, S]`` -> ``[B, S]``."""
    return torch.sort((~mask).to(torch.int8), dim=1, stable=True).indices


class HierarchicalAttentionClassifier(nn.Module):
    """HAN document classifier.

    Args:
        vocab_size, num_classes, embed_dim: ``V``, ``C``, ``E``; token id ``padding_idx`` is padding.
        word_hidden, sentence_hidden: GRU hidden sizes per direction.
        attention_hidden: size of the pooling's ``tanh(W h + b)`` (default: the pooled feature size).
        dropout: on embeddings and before the classifier.
        attention_padding: how both attention poolings treat padded words and sentences: ``masked`` (the
            default), ``unmasked`` or ``renormalised`` (see :mod:`attnkit.models.padding`).
        packed: ``True`` (the default) packs both BiGRUs; ``False`` runs them over the padding
            (:class:`~attnkit.models.encoders.BiGRUEncoder`), so a padded word or sentence has a non-zero,
            input-dependent encoding that an unmasked pooling can attend to: the masking experiment's HAN.
        attend_content_only: keep a ``[V]`` boolean buffer ``attendable`` (all True until set, saved with the
            weights): the word attention may then only attend to tokens it marks (e.g. not stop words or
            punctuation), while the BiGRU still reads every token, so "not" still shapes the "good" after it.
            A sentence with nothing attendable gets a zero vector.
        distribution: builds the distribution of each attention pooling (e.g. ``Sparsemax``; default softmax).
        task_scaling: a :class:`~attnkit.pooling.TaskScaling` over the word embeddings (TaSc, at the word level:
            the words are scaled before the sentence level reads the sentence vectors); its vocabulary and
            embedding sizes must be the model's.
        attention_values: what both attentions average: ``"states"`` (the BiGRUs', the default) or
            ``"embeddings"``: the word attention averages the words' own embeddings and the sentence attention the
            sentence vectors so made, while the BiGRUs' states still choose the weights. The document vector is
            then ``Σ_s β_s Σ_w α_sw e_sw``: each word's weight ``β_s·α_sw`` multiplies that word's embedding and
            nothing of its neighbours (sentence and document vectors of size ``E``, ``N`` with a value layer).
        bigram_buckets: if > 0, each word's vector also adds the embedding of its hashed bigram with the next word
            of its sentence (:func:`~attnkit.models.pooled.bigram_ids`, as the pooled classifier's); 0 = words only.
        value_layer: with ``attention_values="embeddings"``, the width ``N`` of a per-word ``GELU(W e + b)`` that
            the word attention averages instead of ``e`` (:func:`~attnkit.models.pooled.word_values`; 0: ``e``).
    """

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        *,
        embed_dim: int = 128,
        word_hidden: int = 64,
        sentence_hidden: int = 64,
        attention_hidden: int | None = None,
        dropout: float = 0.3,
        padding_idx: int = 0,
        attention_padding: str = "masked",
        packed: bool = True,
        attend_content_only: bool = False,
        distribution: Callable[[], Distribution] | None = None,
        task_scaling: TaskScaling | None = None,
        attention_values: str = "states",
        bigram_buckets: int = 0,
        value_layer: int = 0,
    ) -> None:
        super().__init__()
        self.attendable: torch.Tensor | None
        inputs = (attend_content_only, attention_values, bigram_buckets, value_layer)
        token_inputs(self, vocab_size, embed_dim, padding_idx, *inputs)
        self.task_scaling = task_scaling
        self.word_encoder = BiGRUEncoder(embed_dim, word_hidden, packed=packed)
        options = {"hidden": attention_hidden, "padding": attention_padding}
        self.word_pooling = build_pooling(
            "attention", self.word_encoder.output_dim, distribution=distribution and distribution(), **options
        )
        values_dim = value_dim(self, embed_dim)
        sentence_dim = values_dim if attention_values == "embeddings" else self.word_encoder.output_dim
        self.sentence_encoder = BiGRUEncoder(sentence_dim, sentence_hidden, packed=packed)
        self.sentence_pooling = build_pooling(
            "attention", self.sentence_encoder.output_dim, distribution=distribution and distribution(), **options
        )
        self.dropout = nn.Dropout(dropout)
        document_dim = values_dim if attention_values == "embeddings" else self.sentence_encoder.output_dim
        self.classifier = nn.Linear(document_dim, num_classes)

    def forward(
        self,
        token_ids: torch.Tensor,
        word_mask: torch.Tensor,
        sentence_mask: torch.Tensor,
        *,
        attend_mask: torch.Tensor | None = None,
    ) -> HANOutput:
        """token_ids ``[B, S, W]``, word_mask ``[B, S, W]``, sentence_mask ``[B, S]`` -> :class:`HANOutput`.

        ``attend_mask [B, S, W]`` (optional, within ``word_mask``): the words the word attention may attend to;
        the word GRU still reads all of ``word_mask``, and a sentence with no attendable word is left out of the
        sentence attention (faithfulness's ``mask`` erasure: words kept in the text, masked out of every attention).
        """
        batch, sentences, words = token_ids.shape
        sentence_mask = sentence_mask & word_mask.any(dim=2)  # a sentence with no word is not a sentence
        attend = word_mask if attend_mask is None else attend_mask & word_mask  # [B, S, W]
        flat_mask = word_mask.reshape(batch * sentences, words)
        real = sentence_mask.reshape(-1).nonzero().squeeze(1)  # only real sentences go through the word GRU

        real_ids = token_ids.reshape(batch * sentences, words)[real]  # [N, W]
        pooled_words, word_states = self._read_words(
            real_ids, flat_mask[real], attend.reshape(batch * sentences, words)[real]
        )  # context [N, Dw], weights [N, W]

        # in the pooled vectors' dtype: under autocast it is not the encoder's
        sentence_vectors = pooled_words.context.new_zeros(batch * sentences, pooled_words.context.shape[-1])
        sentence_vectors[real] = pooled_words.context
        word_weights = pooled_words.weights.new_zeros(batch * sentences, words)
        word_weights[real] = pooled_words.weights

        logits, document, sentence_states = self._read_sentences(
            sentence_vectors.view(batch, sentences, -1), sentence_mask, sentence_mask & attend.any(dim=2)
        )
        return HANOutput(
            logits,
            AttentionOutput(sentence_vectors.view(batch, sentences, -1), word_weights.view(batch, sentences, words)),
            document,
            (word_states, sentence_states),
        )

    def encode_sentences(
        self, token_ids: torch.Tensor, word_mask: torch.Tensor, *, attend_mask: torch.Tensor | None = None
    ) -> AttentionOutput:
        """The word level alone, on sentences that each have a word: token_ids ``[N, W]``, word_mask ``[N, W]``,
        attend_mask ``[N, W]`` (optional, within ``word_mask``) -> ``AttentionOutput(context [N, Dw], weights
        [N, W])``: each sentence's vector, computed from its own words only (so it can be computed once and reused
        in every document that contains the sentence unchanged)."""
        return self._read_words(token_ids, word_mask, attend_mask)[0]

    def _read_words(
        self, token_ids: torch.Tensor, word_mask: torch.Tensor, attend_mask: torch.Tensor | None
    ) -> tuple[AttentionOutput, EncodedStates]:
        """:meth:`encode_sentences` and the word BiGRU's states ``[N, W, Dw]`` with ``word_mask``."""
        attend = word_mask if attend_mask is None else attend_mask & word_mask  # [N, W]
        if self.attendable is not None:
            attend = attend & self.attendable[token_ids]
        embedded = self.embedding(token_ids)  # [N, W, E]
        scale = None if self.task_scaling is None else self.task_scaling(token_ids, embedded, word_mask)  # [N, W]
        embedded = self.dropout(embed_tokens(self, token_ids, word_mask, embedded))  # + bigrams within the sentence
        encoded = self.word_encoder(embedded, word_mask)  # [N, W, Dw]
        values = word_values(self, embedded) if self.attention_values == "embeddings" else None  # [N, W, E or Nv]
        pooled = pool(self.word_pooling, encoded, attend, scale, values)  # context [N, Dw | E | Nv], weights [N, 1, W]
        return AttentionOutput(pooled.context, pooled.weights[:, 0]), EncodedStates(encoded, word_mask)

    def classify_sentences(
        self, vectors: torch.Tensor, sentence_mask: torch.Tensor, attend_sentences: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, AttentionOutput]:
        """The sentence level alone: sentence vectors ``[B, S, Dw]`` (as :meth:`encode_sentences` gives them),
        sentence_mask ``[B, S]`` (real sentences; gaps allowed), attend_sentences ``[B, S]`` (optional, within
        ``sentence_mask``: the sentences the attention may weigh) -> ``logits [B, C]`` and
        ``AttentionOutput(document [B, Ds], weights [B, S])`` (weights at the sentences' own positions)."""
        return self._read_sentences(vectors, sentence_mask, attend_sentences)[:2]

    def _read_sentences(
        self, vectors: torch.Tensor, sentence_mask: torch.Tensor, attend_sentences: torch.Tensor | None
    ) -> tuple[torch.Tensor, AttentionOutput, EncodedStates]:
        """:meth:`classify_sentences` and the sentence BiGRU's states ``[B, S, Ds]`` (real sentences first)."""
        attend = sentence_mask if attend_sentences is None else attend_sentences & sentence_mask
        # the sentence GRU reads each document's real sentences in order, without gaps
        order = _compact(sentence_mask)  # [B, S]
        packed_mask = torch.gather(sentence_mask, 1, order)
        vectors = torch.gather(vectors, 1, order[..., None].expand_as(vectors))  # [B, S, Dw]
        encoded_sentences = self.sentence_encoder(vectors, packed_mask)  # [B, S, Ds]
        values = vectors if self.attention_values == "embeddings" else None
        document = pool(self.sentence_pooling, encoded_sentences, torch.gather(attend, 1, order), None, values)
        sentence_weights = torch.zeros_like(document.weights[:, 0]).scatter(1, order, document.weights[:, 0])
        logits = self.classifier(self.dropout(document.context))
        return (
            logits,
            AttentionOutput(document.context, sentence_weights),
            EncodedStates(encoded_sentences, packed_mask),
        )
