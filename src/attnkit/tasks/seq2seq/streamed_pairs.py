"""A seq2seq model's pair file read as a stream: the pairs ``attnkit train seq2seq --data big.tsv`` trains on when
the file is large (or ``--streaming always``) (layer 5).

The file is read once for its tokenisers and validation pairs (cached), then the training pairs are encoded once
and kept on disk as ids (:class:`~attnkit.data.id_cache.EncodedStride`). Pairs over the length limits are cut on
the stream (the in-memory path skips them: counting them first would cost another pass over the file);
``details.truncated_pairs`` counts the cuts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import torch

from attnkit.data.cache import stream_cache_dir
from attnkit.data.id_cache import PAIR_IDS, EncodedStride, file_content_key, id_cache_dir
from attnkit.data.seq2seq import Seq2SeqData, Tokenizer, collate_pairs, read_pairs
from attnkit.data.seq2seq.pair_stream import PairFileStream
from attnkit.data.seq2seq.tokenization import tokenizer_text
from attnkit.data.streaming import StreamedBatches, StreamOptions
from attnkit.tasks.seq2seq.config import Seq2SeqConfig
from attnkit.training.loop import FitConfig
from attnkit.training.run_report import replica

__all__ = ["StreamedPairs"]


class StreamedPairs:
    """``stream``'s pairs for :func:`~attnkit.tasks.seq2seq.training.train_seq2seq`, validated on the pairs the
    scan held out (or the ``valid_path`` file), ``test_path`` decoded at the end."""

    def __init__(self, stream: PairFileStream, *, valid_path: str | None = None, test_path: str | None = None) -> None:
        self.stream, self.valid_path, self.test_path = stream, valid_path, test_path
        self.name, self.levels = stream.path.name, (stream.source_level, stream.target_level)
        self.teacher: torch.nn.Module | None = None
        self.teacher_weight = 0.0
        self.truncated = 0

    def open(self, vocab_size: int) -> None:
        self.started, self.vocab_size = time.monotonic(), vocab_size
        self.scan, *self.scanned = self.stream.scan(vocab_size=vocab_size)

    def tokenizers(self) -> tuple[Tokenizer, Tokenizer]:
        return self.scanned[0], self.scanned[1]

    def prepare(
        self, tokenizers: tuple[Tokenizer, Tokenizer], config: Seq2SeqConfig, fit_config: FitConfig, *,
        batch_size: int, lengths: tuple[int, int],
    ) -> tuple[Seq2SeqData, Seq2SeqConfig]:  # fmt: skip
        """The held-out pairs read, said, and the training pairs kept as ids, cut to ``lengths``."""
        rank, world = replica()
        scan, stream = self.scan, self.stream
        self.held = _held_data(stream, scan.valid, self.test_path, self.valid_path)
        self.load_seconds = time.monotonic() - self.started
        if rank == 0:
            source = "from the cache" if scan.cached else f"in {scan.seconds:.1f} s"
            print(f"{stream.path}: {scan.train_pairs:,} training pairs, {scan.valid_pairs:,} held out ({source})")
        reading = (*(tokenizer_text(tokenizer) for tokenizer in tokenizers), *lengths)
        directory = id_cache_dir(stream_cache_dir() / stream.cache_key(self.vocab_size), *reading, PAIR_IDS.name, world,
                                 rank)  # fmt: skip
        self.ids = EncodedStride(stream.training_pairs, lambda pairs: _encode(pairs, tokenizers, lengths), PAIR_IDS,
                                 directory, world=world, rank=rank, limit=-(-scan.train_pairs // world),
                                 content=lambda: file_content_key(stream.path),
                                 limits=(tokenizers[0].vocab_size, tokenizers[1].vocab_size, 2))  # fmt: skip
        self.train = StreamedBatches(self.ids, scan.train_pairs, encode=self._window,
                                     length=lambda item: len(item[0]) + len(item[1]), collate=collate_pairs,
                                     options=StreamOptions(batch_size=batch_size, seed=fit_config.seed), world=world,
                                     rank=rank, strided=True)  # fmt: skip
        return self.held, config

    def _window(self, items: list) -> list:
        """A window's items as :func:`~attnkit.data.seq2seq.collate_pairs` takes them, the cuts counted."""
        self.truncated += sum(cut for _, _, cut in items)
        return [(s, t, i) for i, (s, t, _) in enumerate(items)]

    def train_batches(self) -> Callable[[int], Iterable]:
        return self.train

    def details(self) -> dict:
        """Read after training: the cuts are counted as the epochs read the file."""
        scan = self.scan
        return {
            "streamed": True,
            "load_seconds": round(self.load_seconds, 2),
            "scan_cached": scan.cached,
            "sizes": {"train": scan.train_pairs, "valid": len(self.held.valid), "test": len(self.held.test)},
            "held_out_pairs": scan.valid_pairs,
            "bad_rows_skipped": scan.bad_rows,
            "truncated_pairs": self.truncated,
            "steps_per_epoch": len(self.train),
            "epochs_read_as_ids": self.ids.epochs_from_cache,
            "scan_sampled_bytes": scan.sampled_bytes,
        }


def _encode(pairs: list, tokenizers: tuple[Tokenizer, Tokenizer], lengths: tuple[int, int]) -> list:
    """``(source ids, target ids, cut)`` of each pair, cut to ``lengths`` (once per pair: kept as ids after the
    first epoch)."""
    (source_tok, target_tok), (max_source, max_target) = tokenizers, lengths
    sources = source_tok.encode_batch([s for s, _ in pairs])
    targets = target_tok.encode_batch([t for _, t in pairs])
    return [(s[:max_source], t[:max_target], int(len(s) > max_source or len(t) > max_target))
            for s, t in zip(sources, targets, strict=True)]  # fmt: skip


def _held_data(stream: PairFileStream, valid: list, test_path: str | None, valid_path: str | None) -> Seq2SeqData:
    """The validation and test splits as :class:`Seq2SeqData` (no training pairs): each source once, with every
    target the split gives it as a reference."""
    keys = {"source_key": stream.source_key, "target_key": stream.target_key, "delimiter": stream.delimiter}
    valid_pairs = read_pairs(valid_path, **keys) if valid_path else [tuple(pair) for pair in valid]
    test_pairs = read_pairs(test_path, **keys) if test_path else []
    references: dict[str, list[str]] = {}
    firsts: dict[str, dict[str, str]] = {"valid": {}, "test": {}}
    for split, pairs in (("valid", valid_pairs), ("test", test_pairs)):
        for source, target in pairs:
            firsts[split].setdefault(source, target)
            targets = references.setdefault(source, [])
            if target not in targets:
                targets.append(target)
    return Seq2SeqData(
        name=stream.path.stem,
        train=[],
        valid=list(firsts["valid"].items()),
        test=list(firsts["test"].items()),
        source_level=stream.source_level,  # type: ignore[arg-type]
        target_level=stream.target_level,  # type: ignore[arg-type]
        shared_vocab=stream.shared_vocab,
        references={s: t for s, t in references.items() if len(t) > 1},
    )
