"""Batches of source/target pairs for encoder-decoder training and decoding (layer 5).

A pair of id lists becomes teacher-forcing tensors: the decoder reads ``<bos> y1 .. yn`` and must predict
``y1 .. yn <eos>``. Every tensor is padded to the batch's own longest sequence (at least 1), and masks are
**True = real token**, as everywhere in attnkit. For batches of similar lengths use
:class:`~attnkit.data.batching.BucketBatchSampler` (re-exported here) with :attr:`PairDataset.lengths`.

Shape glossary:
    B  pairs in the batch
    S  source positions (the batch's longest source, at least 1)
    T  target positions: the longest target + 1 (for ``<bos>`` in ``target_in`` / ``<eos>`` in ``target_out``)
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch.utils.data import DataLoader, Dataset

from attnkit.data.batching import BucketBatchSampler, TensorFields
from attnkit.data.seq2seq.dataset import Pair
from attnkit.data.seq2seq.vocab import BOS_ID, EOS_ID, PAD_ID

__all__ = ["BucketBatchSampler", "PairDataset", "Seq2SeqBatch", "collate_pairs", "encode_pairs", "make_loader"]

Ids = Sequence[int]


@dataclass
class Seq2SeqBatch(TensorFields):
    """A padded batch of pairs (targets ``None`` when the pairs carry none, for translation).

    Attributes:
        source_ids: ``[B, S]`` long, padded with ``<pad>``.
        source_mask: ``[B, S]`` bool, True = real source token.
        source_lengths: ``[B]`` long.
        target_in: ``[B, T]`` long, ``<bos> y1 .. yn`` then ``<pad>``: the decoder's input.
        target_out: ``[B, T]`` long, ``y1 .. yn <eos>`` then ``<pad>``: what it must predict.
        target_mask: ``[B, T]`` bool, True at the ``n + 1`` real positions of both ``target_in`` and ``target_out``.
        target_lengths: ``[B]`` long, ``n + 1``.
        indices: ``[B]`` long, each pair's position in its :class:`PairDataset` (to put decoded outputs back in
            dataset order), or ``None`` when the examples carried none.
    """

    source_ids: torch.Tensor
    source_mask: torch.Tensor
    source_lengths: torch.Tensor
    target_in: torch.Tensor | None = None
    target_out: torch.Tensor | None = None
    target_mask: torch.Tensor | None = None
    target_lengths: torch.Tensor | None = None
    indices: torch.Tensor | None = None

    def __len__(self) -> int:
        return self.source_ids.shape[0]

    @property
    def num_target_tokens(self) -> int:
        """Real target positions (``<eos>`` included): the denominator of a per-token loss."""
        return 0 if self.target_mask is None else int(self.target_mask.sum())


def _pad(sequences: Sequence[Ids], width: int, pad_id: int) -> torch.Tensor:
    out = torch.full((len(sequences), width), pad_id, dtype=torch.long)  # [B, width]
    for row, ids in enumerate(sequences):
        out[row, : len(ids)] = torch.as_tensor(list(ids), dtype=torch.long)
    return out


def collate_pairs(
    examples: Sequence[tuple[Ids, Ids | None] | tuple[Ids, Ids | None, int]],
    *,
    pad_id: int = PAD_ID,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
) -> Seq2SeqBatch:
    """Pad ``(source_ids, target_ids[, index])`` examples (no specials inside) into a :class:`Seq2SeqBatch`.

    Sources are padded to ``[B, S]``; targets gain ``<bos>``/``<eos>`` and are padded to ``[B, T]``. If every
    target is ``None`` the target fields are ``None``; a mix raises ``ValueError``. Indices, when the examples
    carry them (as :class:`PairDataset` items do), become ``indices``.
    """
    if not examples:
        raise ValueError("cannot collate an empty batch")
    sources = [example[0] for example in examples]
    indices = torch.tensor([e[2] for e in examples], dtype=torch.long) if len(examples[0]) > 2 else None  # [B]
    source_lengths = torch.tensor([len(s) for s in sources], dtype=torch.long)  # [B]
    s_width = max(int(source_lengths.max()), 1)
    source_ids = _pad(sources, s_width, pad_id)  # [B, S]
    source_mask = torch.arange(s_width) < source_lengths[:, None]  # [B, S]
    targets = [example[1] for example in examples]
    if all(t is None for t in targets):
        return Seq2SeqBatch(source_ids, source_mask, source_lengths, indices=indices)
    if any(t is None for t in targets):
        raise ValueError("either every example has a target or none has")
    target_lengths = torch.tensor([len(t) + 1 for t in targets], dtype=torch.long)  # [B]
    t_width = int(target_lengths.max())
    target_in = _pad([[bos_id, *t] for t in targets], t_width, pad_id)  # [B, T]
    target_out = _pad([[*t, eos_id] for t in targets], t_width, pad_id)  # [B, T]
    target_mask = torch.arange(t_width) < target_lengths[:, None]  # [B, T]
    return Seq2SeqBatch(
        source_ids, source_mask, source_lengths, target_in, target_out, target_mask, target_lengths, indices
    )


class PairDataset(Dataset):
    """Encoded pairs; item ``i`` is ``(source_ids, target_ids or None, i)`` for :func:`collate_pairs`.

    ``lengths[i]`` (source + target tokens) is the sort key for :class:`BucketBatchSampler`; ``source_lengths``
    suits decoding, whose cost follows the source.
    """

    def __init__(self, sources: Sequence[list[int]], targets: Sequence[list[int]] | None = None) -> None:
        if targets is not None and len(targets) != len(sources):
            raise ValueError(f"sources has {len(sources)} items but targets has {len(targets)}")
        self.sources = list(sources)
        self.targets = None if targets is None else list(targets)
        self.source_lengths = [len(s) for s in self.sources]
        target_lengths = [0] * len(self.sources) if self.targets is None else [len(t) + 1 for t in self.targets]
        self.lengths = [s + t for s, t in zip(self.source_lengths, target_lengths, strict=True)]

    def __len__(self) -> int:
        return len(self.sources)

    def __getitem__(self, index: int) -> tuple[list[int], list[int] | None, int]:
        return self.sources[index], None if self.targets is None else self.targets[index], index


def encode_pairs(pairs: Sequence[Pair], source_tokenizer, target_tokenizer) -> PairDataset:
    """Encode ``(source, target)`` texts with the two tokenisers (any with ``encode_batch``)."""
    sources = source_tokenizer.encode_batch([s for s, _ in pairs])
    targets = target_tokenizer.encode_batch([t for _, t in pairs])
    return PairDataset(sources, targets)


def make_loader(
    dataset: PairDataset,
    *,
    batch_size: int,
    shuffle: bool = True,
    seed: int = 0,
    by: str = "lengths",
    pad_id: int = PAD_ID,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
) -> DataLoader:
    """A ``DataLoader`` of length-bucketed :class:`Seq2SeqBatch` es, sorted ``by`` ``"lengths"`` (source + target,
    training) or ``"source_lengths"`` (decoding). ``shuffle``: random batch order, reshuffled by
    ``loader.batch_sampler.set_epoch(epoch)``; else a fixed order sorted by length (evaluation, decoding)."""
    if by not in ("lengths", "source_lengths"):
        raise ValueError(f"by must be 'lengths' or 'source_lengths', got {by!r}")
    sampler = BucketBatchSampler(
        getattr(dataset, by), batch_size, shuffle=shuffle, seed=seed, pool_batches=50 if shuffle else None
    )
    collate = functools.partial(collate_pairs, pad_id=pad_id, bos_id=bos_id, eos_id=eos_id)
    return DataLoader(dataset, batch_sampler=sampler, collate_fn=collate)
