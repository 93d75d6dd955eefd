"""Document classification end to end: texts -> tokens -> batches -> HAN or pooled classifier -> checkpoint.

One :class:`ClassifierConfig` (saved as ``config.json`` in the checkpoint) says how to rebuild everything: the
model, the tokenizer (``tokenizer.json`` beside it) and the text preprocessing. :class:`ClassificationTask`
plugs the model into :func:`attnkit.training.loop.fit`.

Shape glossary:
    B  documents   T  tokens   S  sentences   W  words per sentence   C  classes
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
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
from attnkit.data.sentences import SentenceSplitter, encode_documents
from attnkit.data.tokenization import TextTokenizer
from attnkit.models import BiGRUEncoder, HierarchicalAttentionClassifier, PooledClassifier, TransformerEncoder
from attnkit.models.padding import PADDING_MODES
from attnkit.models.pooled import build_pooling

__all__ = [
    "ClassificationTask",
    "ClassifierConfig",
    "Prediction",
    "TextEncoder",
    "build_classifier",
    "make_batches",
    "predict_texts",
]

MODELS = ("han", "pooled")
ENCODERS = ("none", "bigru", "transformer")


@dataclass
class ClassifierConfig:
    """Everything needed to rebuild a trained classifier (stored as the checkpoint's ``config.json``)."""

    model: str = "han"
    label_names: list[str] = field(default_factory=list)
    punctuated: bool = True
    # tokenisation
    tokenizer: str = "word"
    vocab_size: int = 30_000
    min_frequency: int = 2
    # preprocessing: HAN reads sentences, the pooled classifier a flat token list
    max_sentences: int = 30
    max_words: int = 50
    words_per_pseudo_sentence: int = 20
    max_tokens: int = 800
    # model
    embed_dim: int = 128
    hidden: int = 64
    encoder: str = "bigru"
    pooling: str = "attention"
    attention_padding: str = "masked"  # masked | unmasked | renormalised: see attnkit.models.padding
    heads: int = 4
    layers: int = 2
    dropout: float = 0.3
    bigram_buckets: int = 0  # pooled: hashed word-bigram embeddings (0 = words only)

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {MODELS}, got {self.model!r}")
        if self.encoder not in ENCODERS:
            raise ValueError(f"encoder must be one of {ENCODERS}, got {self.encoder!r}")
        if self.bigram_buckets < 0:
            raise ValueError(f"bigram_buckets must be >= 0, got {self.bigram_buckets}")
        if self.bigram_buckets and self.model != "pooled":
            raise ValueError("bigram_buckets is a pooled-classifier option (--model pooled)")
        if self.attention_padding not in PADDING_MODES:
            raise ValueError(f"attention_padding must be one of {PADDING_MODES}, got {self.attention_padding!r}")

    def to_dict(self) -> dict:
        """JSON-ready dict."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> ClassifierConfig:
        """Rebuild from :meth:`to_dict`, refusing unknown keys."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown classifier config keys: {', '.join(unknown)}")
        return cls(**values)


def build_classifier(config: ClassifierConfig, vocab_size: int) -> nn.Module:
    """The model ``config`` describes, freshly initialised."""
    num_classes = len(config.label_names)
    if config.model == "han":
        return HierarchicalAttentionClassifier(
            vocab_size,
            num_classes,
            embed_dim=config.embed_dim,
            word_hidden=config.hidden,
            sentence_hidden=config.hidden,
            dropout=config.dropout,
        )
    if config.encoder == "bigru":
        encoder = BiGRUEncoder(config.embed_dim, config.hidden)
    elif config.encoder == "transformer":
        encoder = TransformerEncoder(config.embed_dim, config.heads, config.layers, dropout=config.dropout / 3)
    else:
        encoder = None
    feature_dim = getattr(encoder, "output_dim", config.embed_dim)
    return PooledClassifier(
        vocab_size,
        num_classes,
        embed_dim=config.embed_dim,
        encoder=encoder,
        pooling=build_pooling(config.pooling, feature_dim, heads=config.heads, padding=config.attention_padding),
        dropout=config.dropout,
        bigram_buckets=config.bigram_buckets,
    )


class TextEncoder:
    """Texts -> model inputs as the config says: nested sentence ids for HAN, flat ids otherwise."""

    def __init__(self, config: ClassifierConfig, tokenizer: TextTokenizer) -> None:
        self.config = config
        self.tokenizer = tokenizer
        self.splitter = SentenceSplitter(
            punctuated=config.punctuated, words_per_pseudo_sentence=config.words_per_pseudo_sentence
        )

    def sentences(self, texts: Sequence[str]) -> list[list[str]]:
        """The sentences each document is read as (HAN), after the ``max_sentences`` cap."""
        return [doc[: self.config.max_sentences] for doc in self.splitter.split_batch(texts)]

    def encode(self, texts: Sequence[str]) -> list:
        """``[D][S][W]`` nested ids (HAN) or ``[D][T]`` flat ids (pooled)."""
        if self.config.model == "han":
            return self.encode_sentences(self.sentences(texts))
        return self.tokenizer.encode_batch(list(texts), max_length=self.config.max_tokens)

    def encode_sentences(self, documents: Sequence[Sequence[str]]) -> list[list[list[int]]]:
        """``[D][S][W]`` ids of documents already split by :meth:`sentences`."""
        return encode_documents(
            documents,
            self.tokenizer.encode_batch,
            max_sentences=self.config.max_sentences,
            max_words=self.config.max_words,
        )

    def collate(self) -> Callable:
        """The collate function for this model kind."""
        pad = self.tokenizer.pad_id
        if self.config.model == "han":
            return lambda items: collate_documents(items, pad_id=pad)
        return lambda items: collate_tokens(items, pad_id=pad)


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
) -> Callable[[int], Iterable]:
    """``epoch -> batches``: length-bucketed (default) or random batches, split across DDP replicas."""
    sampler_cls = BucketBatchSampler if bucketed else RandomBatchSampler
    sampler = sampler_cls(
        dataset.lengths, batch_size, shuffle=shuffle, drop_last=False, num_replicas=num_replicas, rank=rank, seed=seed
    )

    def batches(epoch: int = 0) -> Iterable:
        sampler.set_epoch(epoch)
        for indices in sampler:
            yield collate([dataset[i] for i in indices])

    return batches


def forward_batch(model: nn.Module, batch: TokenBatch | DocumentBatch):
    """Run ``model`` on a collated batch; returns the model's output dataclass."""
    if isinstance(batch, DocumentBatch):
        return model(batch.token_ids, batch.word_mask, batch.sentence_mask)
    return model(batch.token_ids, batch.mask)


class ClassificationTask:
    """Cross-entropy training and accuracy evaluation of a classifier (a ``Task`` for ``fit``)."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model

    def loss(self, batch: TokenBatch | DocumentBatch) -> torch.Tensor:
        """Mean cross-entropy of the batch."""
        return F.cross_entropy(forward_batch(self.model, batch).logits, batch.labels)

    @torch.no_grad()
    def evaluate_sums(self, batches: Iterable[TokenBatch | DocumentBatch]) -> dict[str, float]:
        """Additive statistics over the batches: ``correct``, ``count``, ``loss_sum`` (summed across DDP ranks)."""
        was_training = self.model.training
        self.model.eval()
        correct = count = 0
        loss_sum = 0.0
        for batch in batches:
            logits = forward_batch(self.model, batch).logits
            loss_sum += float(F.cross_entropy(logits, batch.labels, reduction="sum"))
            correct += int((logits.argmax(-1) == batch.labels).sum())
            count += len(batch.labels)
        self.model.train(was_training)
        return {"correct": float(correct), "count": float(count), "loss_sum": loss_sum}

    @staticmethod
    def metrics_from_sums(sums: dict[str, float]) -> dict[str, float]:
        """``accuracy`` and mean ``loss`` from :meth:`evaluate_sums`' totals."""
        count = max(sums["count"], 1.0)
        return {"accuracy": sums["correct"] / count, "loss": sums["loss_sum"] / count, "count": sums["count"]}

    def evaluate(self, batches: Iterable[TokenBatch | DocumentBatch]) -> dict[str, float]:
        """``accuracy``, mean ``loss`` and ``count`` over the batches."""
        return self.metrics_from_sums(self.evaluate_sums(batches))


@dataclass
class Prediction:
    """One document's prediction and what the model attended to.

    ``sentences``/``word_weights``/``sentence_weights`` are filled for HAN; ``tokens``/``token_weights``
    (``[heads][T]``) for pooled classifiers.
    """

    text: str
    label: str
    probabilities: dict[str, float]
    sentences: list[list[str]] | None = None
    word_weights: list[list[float]] | None = None
    sentence_weights: list[float] | None = None
    tokens: list[str] | None = None
    token_weights: list[list[float]] | None = None


@torch.no_grad()
def predict_texts(
    model: nn.Module, encoder: TextEncoder, texts: Sequence[str], *, batch_size: int = 32
) -> list[Prediction]:
    """Predict labels for ``texts`` and collect the attention weights for explanation."""
    model.eval()
    config, tokenizer = encoder.config, encoder.tokenizer
    results: list[Prediction] = []
    collate = encoder.collate()
    for start in range(0, len(texts), batch_size):
        chunk = list(texts[start : start + batch_size])
        sentences = encoder.sentences(chunk) if config.model == "han" else None
        items = encoder.encode_sentences(sentences) if sentences is not None else encoder.encode(chunk)
        batch = collate([(item, None) for item in items])
        out = forward_batch(model, batch)
        probabilities = torch.softmax(out.logits.float(), dim=-1)
        for row, text in enumerate(chunk):
            probs = {name: float(p) for name, p in zip(config.label_names, probabilities[row], strict=True)}
            prediction = Prediction(text, config.label_names[int(probabilities[row].argmax())], probs)
            # shown words are the text's own pieces (a word outside the vocabulary shows as itself)
            if config.model == "han":
                doc = items[row]
                prediction.sentences = [
                    tokenizer.tokens(sentence)[: len(ids)] for sentence, ids in zip(sentences[row], doc, strict=False)
                ]
                prediction.word_weights = [
                    out.words.weights[row, s, : len(sentence)].tolist() for s, sentence in enumerate(doc)
                ]
                prediction.sentence_weights = out.sentences.weights[row, : len(doc)].tolist()
            else:
                ids = items[row]
                prediction.tokens = tokenizer.tokens(text)[: len(ids)]
                prediction.token_weights = out.pooling.weights[row, :, : len(ids)].tolist()
            results.append(prediction)
    return results


def load_tokenizer(directory: str | Path) -> TextTokenizer:
    """The checkpoint's ``tokenizer.json``."""
    return TextTokenizer.load(directory)
