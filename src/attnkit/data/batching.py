"""Batches with little padding: a length-aware sampler, a random one, and collate functions (layer 5).

Samplers yield lists of dataset indices, for ``DataLoader(dataset, batch_sampler=..., collate_fn=...)``.
Collate functions pad to the batch's own longest item — never to a global maximum — and return masks with
**True = real token / real sentence**, the polarity of every mask in attnkit.

Shape glossary:
    B  documents in the batch
    T  tokens per document (the batch's longest, at least 1)
    S  sentences per document (the batch's most, at least 1)
    W  tokens per sentence (the batch's longest sentence, at least 1)

Distributed training: with ``num_replicas=N`` the samplers first form *global* batches of ``N × batch_size``
items (exactly those a single process with batch size ``N × batch_size`` would form), then give replica
``rank`` the items ``rank, rank + N, ...`` of each. Every replica gets the same number of batches, and batches
of the same size; a final short global batch whose size is not a multiple of ``N`` is topped up by repeating
its first items (``drop_last=True`` drops it instead). Call ``set_epoch(epoch)`` before each epoch on every
replica, as with ``DistributedSampler``; the order depends only on ``(seed, epoch)``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any

import torch
from torch.utils.data import Dataset, Sampler

__all__ = [
    "BucketBatchSampler",
    "DocumentBatch",
    "EncodedDataset",
    "RandomBatchSampler",
    "TokenBatch",
    "collate_documents",
    "collate_tokens",
]

Document = Sequence[Sequence[int]]  # sentences of token ids


class _ReplicaBatchSampler(Sampler[list[int]]):
    """Shared machinery: epochs, seeds and the split of global batches across replicas (see the module docstring)."""

    def __init__(
        self,
        lengths: Sequence[int] | torch.Tensor,
        batch_size: int,
        *,
        shuffle: bool = True,
        drop_last: bool = False,
        num_replicas: int = 1,
        rank: int = 0,
        seed: int = 0,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if num_replicas < 1 or not 0 <= rank < num_replicas:
            raise ValueError(f"need num_replicas >= 1 and 0 <= rank < num_replicas, got {num_replicas}, {rank}")
        self.lengths = torch.as_tensor(lengths, dtype=torch.long).flatten()
        self.batch_size, self.shuffle, self.drop_last = batch_size, shuffle, drop_last
        self.num_replicas, self.rank, self.seed, self.epoch = num_replicas, rank, seed, 0

    @property
    def global_batch_size(self) -> int:
        """Items per step over all replicas: ``batch_size × num_replicas``."""
        return self.batch_size * self.num_replicas

    def set_epoch(self, epoch: int) -> None:
        """Choose the epoch whose order the next ``iter()`` yields."""
        self.epoch = epoch

    def __len__(self) -> int:
        full, rest = divmod(len(self.lengths), self.global_batch_size)
        return full + (1 if rest and not self.drop_last else 0)

    def __iter__(self) -> Iterator[list[int]]:
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        for batch in self._global_batches(generator):
            if len(batch) < self.global_batch_size:
                if self.drop_last:
                    continue
                short = -len(batch) % self.num_replicas
                batch = batch + [batch[i % len(batch)] for i in range(short)]  # top up: equal replica sizes
            yield batch[self.rank :: self.num_replicas]

    def _global_batches(self, generator: torch.Generator) -> list[list[int]]:
        raise NotImplementedError

    def _order(self, generator: torch.Generator) -> torch.Tensor:
        n = len(self.lengths)
        return torch.randperm(n, generator=generator) if self.shuffle else torch.arange(n)


class BucketBatchSampler(_ReplicaBatchSampler):
    """Batches of items with similar lengths (one per item: tokens, or any cost padding scales with), in random order.

    Each epoch: shuffle all indices, cut them into pools of ``pool_batches`` global batches (None: one pool), sort
    each pool by length (ties keep their shuffled order), cut pools into batches, and shuffle the batches. With
    ``shuffle=False`` the order is fixed: pools of consecutive indices, each sorted by length (evaluation). The
    other options (``shuffle``, ``drop_last``, ``num_replicas``, ``rank``, ``seed``) are the module docstring's.
    """

    def __init__(
        self, lengths: Sequence[int] | torch.Tensor, batch_size: int, *, pool_batches: int | None = 50, **options: Any
    ) -> None:
        super().__init__(lengths, batch_size, **options)
        if pool_batches is not None and pool_batches < 1:
            raise ValueError(f"pool_batches must be at least 1 or None, got {pool_batches}")
        self.pool_batches = pool_batches

    def _global_batches(self, generator: torch.Generator) -> list[list[int]]:
        order = self._order(generator)
        size = self.global_batch_size
        pool = len(order) if self.pool_batches is None else self.pool_batches * size
        batches: list[list[int]] = []
        for start in range(0, len(order), max(pool, 1)):
            members = order[start : start + pool]
            members = members[torch.argsort(self.lengths[members], stable=True)]
            batches.extend(members[i : i + size].tolist() for i in range(0, len(members), size))
        if self.shuffle:
            batches = [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]
        return batches


class RandomBatchSampler(_ReplicaBatchSampler):
    """Batches of randomly chosen items, lengths ignored (the padding-heavy baseline).

    ``shuffle=False`` gives consecutive indices. Arguments as :class:`BucketBatchSampler`; ``lengths`` only
    fixes the dataset size (pass ``range(n)`` or the real lengths).
    """

    def _global_batches(self, generator: torch.Generator) -> list[list[int]]:
        order = self._order(generator)
        size = self.global_batch_size
        return [order[i : i + size].tolist() for i in range(0, len(order), size)]


class EncodedDataset(Dataset):
    """Encoded documents (token ids, or sentences of token ids for the HAN) and their labels (None to predict), as
    ``(item, label)`` pairs; ``lengths[i]`` counts item ``i``'s tokens, for :class:`BucketBatchSampler`."""

    def __init__(self, items: Sequence[Sequence[int]] | Sequence[Document], labels: Sequence[int] | None = None):
        if labels is not None and len(labels) != len(items):
            raise ValueError(f"items has {len(items)} entries but labels has {len(labels)}")
        self.items = items
        self.labels = labels
        self.lengths = [_token_count(item) for item in items]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> tuple[Sequence[int] | Document, int | None]:
        return self.items[index], None if self.labels is None else self.labels[index]


def _token_count(item: Sequence[int] | Document) -> int:
    if len(item) and isinstance(item[0], (list, tuple)):
        return sum(len(sentence) for sentence in item)
    return len(item)


class TensorFields:
    """``to`` and ``pin_memory`` for a dataclass of tensors (fields that are None stay None)."""

    def to(self, device: torch.device | str, *, non_blocking: bool = False):
        """A copy with every tensor moved to ``device``."""
        moved = {
            f.name: None if (v := getattr(self, f.name)) is None else v.to(device, non_blocking=non_blocking)
            for f in fields(self)
        }
        return type(self)(**moved)

    def pin_memory(self):
        """A copy in pinned memory (``DataLoader(pin_memory=True)`` calls this)."""
        pinned = {f.name: None if (v := getattr(self, f.name)) is None else v.pin_memory() for f in fields(self)}
        return type(self)(**pinned)


@dataclass
class TokenBatch(TensorFields):
    """A padded batch of flat documents.

    Attributes:
        token_ids: ``[B, T]`` long, padded with the pad id.
        mask: ``[B, T]`` bool, True = real token.
        lengths: ``[B]`` long, tokens per document.
        labels: ``[B]`` long, or ``None`` when the items carry no labels.
    """

    token_ids: torch.Tensor
    mask: torch.Tensor
    lengths: torch.Tensor
    labels: torch.Tensor | None = None


@dataclass
class DocumentBatch(TensorFields):
    """A padded batch of documents as sentences of tokens (HAN).

    Attributes:
        token_ids: ``[B, S, W]`` long, padded with the pad id.
        word_mask: ``[B, S, W]`` bool, True = real token.
        sentence_mask: ``[B, S]`` bool, True = a sentence with at least one token; all False for an empty
            document. Empty sentences keep their position (and are masked), so sentence ``s`` stays sentence ``s``.
        sentence_lengths: ``[B, S]`` long, tokens per sentence.
        labels: ``[B]`` long, or ``None``.
    """

    token_ids: torch.Tensor
    word_mask: torch.Tensor
    sentence_mask: torch.Tensor
    sentence_lengths: torch.Tensor
    labels: torch.Tensor | None = None


def collate_tokens(items: Sequence[tuple[Sequence[int], int | None]], *, pad_id: int = 0) -> TokenBatch:
    """Pad ``(token_ids, label)`` pairs to the longest in the batch → :class:`TokenBatch` ``[B, T]``."""
    lengths = torch.tensor([len(ids) for ids, _ in items], dtype=torch.long)  # [B]
    longest = max(int(lengths.max()) if len(items) else 0, 1)
    mask = torch.arange(longest) < lengths[:, None]  # [B, T]
    token_ids = torch.full((len(items), longest), pad_id, dtype=torch.long)  # [B, T]
    token_ids[mask] = torch.tensor([t for ids, _ in items for t in ids], dtype=torch.long)  # row-major order
    return TokenBatch(token_ids, mask, lengths, _labels(items))


def collate_documents(items: Sequence[tuple[Document, int | None]], *, pad_id: int = 0) -> DocumentBatch:
    """Pad ``(sentences, label)`` pairs to the batch's most sentences and longest sentence: a
    :class:`DocumentBatch` with ``token_ids``/``word_mask`` ``[B, S, W]`` and ``sentence_mask`` ``[B, S]``."""
    sentences = max([len(doc) for doc, _ in items] + [1])
    words = max([len(s) for doc, _ in items for s in doc] + [1])
    sentence_lengths = torch.tensor(
        [[len(ids) for ids in doc] + [0] * (sentences - len(doc)) for doc, _ in items], dtype=torch.long
    ).reshape(len(items), sentences)  # [B, S]
    word_mask = torch.arange(words) < sentence_lengths[..., None]  # [B, S, W]
    token_ids = torch.full((len(items), sentences, words), pad_id, dtype=torch.long)  # [B, S, W]
    flat = [t for doc, _ in items for ids in doc for t in ids]  # row-major order of word_mask's True entries
    token_ids[word_mask] = torch.tensor(flat, dtype=torch.long)
    sentence_mask = sentence_lengths > 0  # [B, S]
    return DocumentBatch(token_ids, word_mask, sentence_mask, sentence_lengths, _labels(items))


def _labels(items: Sequence[tuple[object, int | None]]) -> torch.Tensor | None:
    labels = [label for _, label in items]
    if any(label is None for label in labels):
        return None
    return torch.tensor(labels, dtype=torch.long)  # [B]
