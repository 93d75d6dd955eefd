"""Texts -> model inputs -> batches for the classifiers, and the attention a prediction shows (layer 5).

A :class:`TextEncoder` reads texts as its model family needs them (:data:`FAMILIES`): the HAN as sentences of
words (``[D][S][W]`` ids, collated to a :class:`~attnkit.data.batching.DocumentBatch`), the pooled classifier as
one token list (``[D][T]`` ids, a :class:`~attnkit.data.batching.TokenBatch`).

Shape glossary:
    B  documents   T  tokens   S  sentences   W  words per sentence   C  classes   heads  pooling heads
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from torch import nn

from attnkit.data.batching import (
    BucketBatchSampler,
    DocumentBatch,
    EncodedDataset,
    RandomBatchSampler,
    TokenBatch,
    collate_documents,
    collate_tokens,
)
from attnkit.data.classify.sentences import SentenceSplitter, encode_documents
from attnkit.data.classify.tokenization import TextTokenizer
from attnkit.tasks.classify.config import ClassifierConfig

__all__ = ["FAMILIES", "EpochBatches", "Prediction", "TextEncoder", "forward_batch", "make_batches"]


@dataclass
class Prediction:
    """One document's prediction and what the model attended to.

    ``sentences``/``word_weights``/``sentence_weights`` are filled for HAN; ``tokens``/``token_weights``
    (``[heads][T]``) for pooled classifiers. Words show as written; ``unknown_words`` (HAN, per sentence) and
    ``unknown_tokens`` (pooled) mark those the model read as ``[UNK]`` (outside its vocabulary).
    """

    text: str
    label: str
    probabilities: dict[str, float]
    sentences: list[list[str]] | None = None
    word_weights: list[list[float]] | None = None
    sentence_weights: list[float] | None = None
    tokens: list[str] | None = None
    token_weights: list[list[float]] | None = None
    unknown_words: list[list[bool]] | None = None
    unknown_tokens: list[bool] | None = None


class _HanFamily:
    """The HAN: documents as sentences of words."""

    def encode(self, encoder: TextEncoder, texts: Sequence[str]) -> list:
        return encoder.encode_sentences(encoder.sentences(texts))

    def read(self, encoder: TextEncoder, texts: Sequence[str]) -> tuple[list, list]:
        """``(ids, views)``: each text's ids and what it shows (its sentences)."""
        sentences = encoder.sentences(texts)
        return encoder.encode_sentences(sentences), sentences

    def collate(self, pad_id: int) -> Callable:
        return lambda items: collate_documents(items, pad_id=pad_id)

    def forward(self, model: nn.Module, batch: DocumentBatch):
        return model(batch.token_ids, batch.word_mask, batch.sentence_mask)

    def attach_attention(
        self, prediction: Prediction, encoder: TextEncoder, item: list, sentences: list[str], out, row: int
    ) -> None:
        """Fill the HAN fields: the text's own words (a word outside the vocabulary shows as itself)."""
        prediction.sentences = [
            encoder.tokenizer.tokens(sentence)[: len(ids)] for sentence, ids in zip(sentences, item, strict=False)
        ]
        prediction.word_weights = [out.words.weights[row, s, : len(ids)].tolist() for s, ids in enumerate(item)]
        prediction.sentence_weights = out.sentences.weights[row, : len(item)].tolist()
        unk = encoder.tokenizer.unk_id
        prediction.unknown_words = [[token == unk for token in ids] for ids in item]


class _PooledFamily:
    """The pooled classifier: documents as one token list."""

    def encode(self, encoder: TextEncoder, texts: Sequence[str]) -> list:
        return encoder.tokenizer.encode_batch(list(texts), max_length=encoder.config.max_tokens)

    def read(self, encoder: TextEncoder, texts: Sequence[str]) -> tuple[list, list]:
        """``(ids, views)``: each text's ids and what it shows (the text itself)."""
        return self.encode(encoder, texts), list(texts)

    def collate(self, pad_id: int) -> Callable:
        return lambda items: collate_tokens(items, pad_id=pad_id)

    def forward(self, model: nn.Module, batch: TokenBatch):
        return model(batch.token_ids, batch.mask)

    def attach_attention(
        self, prediction: Prediction, encoder: TextEncoder, item: list, text: str, out, row: int
    ) -> None:
        """Fill the pooled fields: one weight row per pooling head over the document's tokens."""
        prediction.tokens = encoder.tokenizer.tokens(text)[: len(item)]
        prediction.token_weights = out.pooling.weights[row, :, : len(item)].tolist()  # [heads][T]
        prediction.unknown_tokens = [token == encoder.tokenizer.unk_id for token in item]


# The model family by ClassifierConfig.model.
FAMILIES = {"han": _HanFamily(), "pooled": _PooledFamily()}


class TextEncoder:
    """Texts -> model inputs as the config says: nested sentence ids for HAN, flat ids otherwise."""

    def __init__(self, config: ClassifierConfig, tokenizer: TextTokenizer) -> None:
        self.config, self.tokenizer, self.family = config, tokenizer, FAMILIES[config.model]
        pseudo = config.words_per_pseudo_sentence
        self.splitter = SentenceSplitter(punctuated=config.punctuated, words_per_pseudo_sentence=pseudo)

    def sentences(self, texts: Sequence[str]) -> list[list[str]]:
        """The sentences each document is read as (HAN), after the ``max_sentences`` cap."""
        return [doc[: self.config.max_sentences] for doc in self.splitter.split_batch(texts)]

    def encode(self, texts: Sequence[str]) -> list:
        """``[D][S][W]`` nested ids (HAN) or ``[D][T]`` flat ids (pooled)."""
        return self.family.encode(self, texts)

    def encode_sentences(self, documents: Sequence[Sequence[str]]) -> list[list[list[int]]]:
        """``[D][S][W]`` ids of documents already split by :meth:`sentences`."""
        limits = {"max_sentences": self.config.max_sentences, "max_words": self.config.max_words}
        return encode_documents(documents, self.tokenizer.encode_batch, **limits)

    def collate(self) -> Callable:
        """The collate function for this model family."""
        return self.family.collate(self.tokenizer.pad_id)


def forward_batch(model: nn.Module, batch: TokenBatch | DocumentBatch):
    """Run ``model`` on a collated batch; returns the model's output dataclass."""
    if isinstance(batch, DocumentBatch):
        return FAMILIES["han"].forward(model, batch)
    return FAMILIES["pooled"].forward(model, batch)


class EpochBatches:
    """One epoch's collated batches: iterable, and sized (``len`` = batches per epoch, so a step-counted cosine
    schedule knows its horizon)."""

    def __init__(self, sampler: BucketBatchSampler | RandomBatchSampler, dataset: EncodedDataset, collate: Callable):
        self.sampler, self.dataset, self.collate = sampler, dataset, collate

    def __len__(self) -> int:
        return len(self.sampler)

    def __iter__(self) -> Iterator:
        for indices in self.sampler:
            yield self.collate([self.dataset[i] for i in indices])


def make_batches(
    dataset: EncodedDataset,
    collate: Callable,
    batch_size: int,
    *,
    shuffle: bool,
    bucketed: bool = True,
    seed: int = 0,
    num_replicas: int = 1,
    rank: int = 0,
) -> Callable[[int], EpochBatches]:
    """``epoch -> batches``: length-bucketed (default) or random batches, split across DDP replicas."""
    sampler_cls = BucketBatchSampler if bucketed else RandomBatchSampler
    sampler = sampler_cls(
        dataset.lengths, batch_size, shuffle=shuffle, drop_last=False, num_replicas=num_replicas, rank=rank, seed=seed
    )

    def batches(epoch: int = 0) -> EpochBatches:
        sampler.set_epoch(epoch)
        return EpochBatches(sampler, dataset, collate)

    return batches
