"""Length limits for sequence-to-sequence pairs: skip (or refuse) pairs too long to batch (layer 5).

A batch is padded to its longest pair, so one very long pair makes every tensor of its batch that long.
:func:`limit_pair_lengths` drops the pairs whose source or target has more tokens than the limits (as the task's
own tokenisers count them, without ``<bos>``/``<eos>``), or with ``strict=True`` refuses the first one with its
``file:line``. It hands back the encodings it measured, so nothing is encoded twice:

    source_tok, target_tok = build_tokenizers(data)
    limited = limit_pair_lengths(data, source_tok, target_tok)   # 256 / 256 tokens by default
    if limited.skipped_total:
        print(limited.message())       # "skipped 3 pairs longer than 256 source / 256 target tokens (train 3)"
    data, train_set = limited.data, limited.encoded["train"]     # = encode_pairs(data.train, ...)

The defaults, 256 source and 256 target tokens, keep every pair of the built-in data sets with room (the longest:
116 / 108 subwords, in ``bible-en-es``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from attnkit.data.reading import DataError
from attnkit.data.seq2seq.batching import PairDataset
from attnkit.data.seq2seq.dataset import SPLITS, Pair, Seq2SeqData
from attnkit.data.seq2seq.files import pair_line

__all__ = [
    "DEFAULT_MAX_SOURCE_LENGTH",
    "DEFAULT_MAX_TARGET_LENGTH",
    "LengthLimit",
    "LongPair",
    "find_long_pairs",
    "limit_pair_lengths",
]

DEFAULT_MAX_SOURCE_LENGTH = 256
DEFAULT_MAX_TARGET_LENGTH = 256


@dataclass(frozen=True)
class LongPair:
    """A pair over a limit: its position in the list, the side (``"source"`` or ``"target"``), its length in
    tokens and the limit it exceeds (the source side is reported when both are over)."""

    index: int
    side: str
    length: int
    limit: int


@dataclass
class LengthLimit:
    """What :func:`limit_pair_lengths` kept (``data``, with ``references`` and ``files`` unchanged; ``encoded[s]``
    equals ``encode_pairs(data.split(s), ...)``) and dropped (``skipped``: pairs per split)."""

    data: Seq2SeqData
    encoded: dict[str, PairDataset]
    skipped: dict[str, int]
    max_source_length: int
    max_target_length: int

    @property
    def skipped_total(self) -> int:
        """Pairs dropped over all splits."""
        return sum(self.skipped.values())

    def message(self) -> str:
        """One line for the user: ``skipped 3 pairs longer than 256 source / 256 target tokens (train 2, test 1)``."""
        total = self.skipped_total
        where = ", ".join(f"{split} {n}" for split, n in self.skipped.items() if n)
        noun = "pair" if total == 1 else "pairs"
        limits = f"{self.max_source_length} source / {self.max_target_length} target tokens"
        return f"skipped {total} {noun} longer than {limits}" + (f" ({where})" if where else "")


def find_long_pairs(
    pairs: Sequence[Pair],
    source_tokenizer,
    target_tokenizer,
    *,
    max_source_length: int = DEFAULT_MAX_SOURCE_LENGTH,
    max_target_length: int = DEFAULT_MAX_TARGET_LENGTH,
) -> list[LongPair]:
    """The pairs whose source has more than ``max_source_length`` tokens or whose target has more than
    ``max_target_length``, in order; ValueError for a limit below 1."""
    _check_limits(max_source_length, max_target_length)
    sources = source_tokenizer.encode_batch([source for source, _ in pairs])
    targets = target_tokenizer.encode_batch([target for _, target in pairs])
    return _long(sources, targets, max_source_length, max_target_length)


def _long(
    sources: Sequence[list[int]], targets: Sequence[list[int]], max_source: int, max_target: int
) -> list[LongPair]:
    found = []
    for index, (source, target) in enumerate(zip(sources, targets, strict=True)):
        if len(source) > max_source:
            found.append(LongPair(index, "source", len(source), max_source))
        elif len(target) > max_target:
            found.append(LongPair(index, "target", len(target), max_target))
    return found


def limit_pair_lengths(
    data: Seq2SeqData,
    source_tokenizer,
    target_tokenizer,
    *,
    max_source_length: int = DEFAULT_MAX_SOURCE_LENGTH,
    max_target_length: int = DEFAULT_MAX_TARGET_LENGTH,
    strict: bool = False,
) -> LengthLimit:
    """Drop the pairs of every split whose source or target is longer than the limits (in tokens), or with
    ``strict`` refuse the data. Call it after building the tokenisers, instead of :func:`encode_pairs`.
    Validation and test pairs are limited as well, since decoding pads to the longest source too.

    Raises:
        ValueError: a limit below 1.
        DataError: with ``strict``, one line for the first long pair — ``file:line: the source has 5012
            tokens, over the limit of 256 source tokens (3 pairs in all are over the limits)``; ``task split pair
            N: ...`` for a built-in data set — and, without ``strict``, when no training pair would be left.
    """
    _check_limits(max_source_length, max_target_length)
    ids = {
        split: (
            source_tokenizer.encode_batch([source for source, _ in data.split(split)]),
            target_tokenizer.encode_batch([target for _, target in data.split(split)]),
        )
        for split in SPLITS
    }
    long_pairs = {split: _long(*ids[split], max_source_length, max_target_length) for split in SPLITS}
    total = sum(len(found) for found in long_pairs.values())
    if strict and total:
        split = next(split for split in SPLITS if long_pairs[split])
        raise DataError(_refusal(data, split, long_pairs[split][0], total))
    if long_pairs["train"] and len(long_pairs["train"]) == len(data.train):
        raise DataError(
            f"{_where(data, 'train', None)}: every training pair is longer than {max_source_length} source / "
            f"{max_target_length} target tokens; raise the limits"
        )
    kept, encoded = {}, {}
    for split in SPLITS:
        dropped = {pair.index for pair in long_pairs[split]}
        keep = [i for i in range(len(data.split(split))) if i not in dropped]
        kept[split] = [data.split(split)[i] for i in keep]
        sources, targets = ids[split]
        encoded[split] = PairDataset([sources[i] for i in keep], [targets[i] for i in keep])
    return LengthLimit(
        data=dataclasses.replace(data, **kept),
        encoded=encoded,
        skipped={split: len(found) for split, found in long_pairs.items()},
        max_source_length=max_source_length,
        max_target_length=max_target_length,
    )


def _check_limits(max_source_length: int, max_target_length: int) -> None:
    for name, value in (("max_source_length", max_source_length), ("max_target_length", max_target_length)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number of tokens >= 1, got {value!r}")


def _where(data: Seq2SeqData, split: str, pair: Pair | None) -> str:
    """``file:line`` of ``pair`` when its split came from a file and the line is found, else a description."""
    file = data.files.get(split)
    if file is None:
        return f"{data.name} {split} split"
    line = pair_line(file, pair) if pair is not None else None
    return file.path if line is None else f"{file.path}:{line}"


def _refusal(data: Seq2SeqData, split: str, first: LongPair, total: int) -> str:
    pair = data.split(split)[first.index]
    where = _where(data, split, pair)
    if split not in data.files:
        where += f" pair {first.index + 1}"
    also = f" ({total} pairs in all are over the limits)" if total > 1 else ""
    over = f"over the limit of {first.limit} {first.side} tokens"
    return f"{where}: the {first.side} has {first.length} tokens, {over}{also}"
