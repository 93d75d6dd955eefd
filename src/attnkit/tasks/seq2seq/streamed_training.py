"""Train a seq2seq model on a pair file read as a stream: what ``attnkit train seq2seq --data big.tsv`` runs when
the file is large (or ``--streaming always``) (layer 5).

The file is read once for its tokenisers and validation pairs
(:class:`~attnkit.data.seq2seq.pair_stream.PairFileStream`, cached), then the training pairs are encoded once and kept
on disk as ids (:class:`~attnkit.data.id_cache.EncodedStride`: the first epoch reads the text and writes them,
later epochs and runs read them), and batched by :class:`~attnkit.data.streaming.StreamedBatches` (bounded shuffle,
length buckets, equal rank strides). Pairs longer than ``--max-source-length`` / ``--max-target-length`` tokens
are cut to those lengths on the stream (the in-memory path skips them: counting them first would cost another
pass over the file); ``details.truncated_pairs`` in ``metrics.json`` counts the cuts over all epochs read. A
``--valid`` or ``--test`` file is read in memory.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import torch

from attnkit.data.cache import stream_cache_dir
from attnkit.data.id_cache import PAIR_IDS, EncodedStride, file_content_key, id_cache_dir
from attnkit.data.seq2seq import Seq2SeqData, collate_pairs, read_pairs
from attnkit.data.seq2seq.lengths import DEFAULT_MAX_SOURCE_LENGTH, DEFAULT_MAX_TARGET_LENGTH
from attnkit.data.seq2seq.pair_stream import PairFileStream
from attnkit.data.seq2seq.tokenization import load_tokenizers, tokenizer_text
from attnkit.data.streaming import StreamedBatches, StreamOptions
from attnkit.tasks.seq2seq.config import Seq2SeqConfig
from attnkit.tasks.seq2seq.training import TOKENIZER_DIR, fit_seq2seq, init_from_tokenizers, run_config
from attnkit.training.init_from import InitFrom
from attnkit.training.loop import FitConfig
from attnkit.training.run_report import TrainReport, replica

__all__ = ["train_seq2seq_streamed"]


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


def train_seq2seq_streamed(
    stream: PairFileStream,
    config: Seq2SeqConfig,
    fit_config: FitConfig,
    *,
    out_dir: str | Path,
    batch_size: int = 64,
    vocab_size: int = 8000,
    resume: bool = False,
    evaluate_test: bool = True,
    valid_path: str | None = None,
    test_path: str | None = None,
    max_source_length: int = DEFAULT_MAX_SOURCE_LENGTH,
    max_target_length: int = DEFAULT_MAX_TARGET_LENGTH,
    device: str | torch.device = "auto",
    init_from: InitFrom | None = None,
) -> TrainReport:
    """Train the model ``config`` describes on ``stream``'s training pairs; the rest as
    :func:`~attnkit.tasks.seq2seq.training.train_seq2seq` (same run directory, checkpoints and ``metrics.json``,
    whose details add ``load_seconds`` and the pair counts). ``init_from`` starts from a checkpoint's weights and
    tokenisers, with a fresh optimiser (``config.model`` must be its model's; the stream must have its levels).

    Raises:
        DataError: as :meth:`PairFileStream.scan`.
        ValueError: ``init_from`` was trained on other source/target levels.
    """
    started = time.monotonic()
    out_dir = Path(out_dir)
    rank, world = replica()
    scan, source_tok, target_tok = stream.scan(vocab_size=vocab_size)
    resuming = resume and (out_dir / "last").exists()
    if init_from is not None and not resuming:
        levels = (stream.source_level, stream.target_level)
        source_tok, target_tok = init_from_tokenizers(init_from, levels, stream.path.name)
    elif resume:
        with contextlib.suppress(ValueError):  # interrupted before they were written: the scan's, as a fresh run
            source_tok, target_tok = load_tokenizers(out_dir / TOKENIZER_DIR)
    data = _held_data(stream, scan.valid, test_path, valid_path)
    load_seconds = time.monotonic() - started
    if rank == 0:
        source = "from the cache" if scan.cached else f"in {scan.seconds:.1f} s"
        print(f"{stream.path}: {scan.train_pairs:,} training pairs, {scan.valid_pairs:,} held out ({source})")
    truncated = [0]

    def encode(pairs: list) -> list:  # once per pair: kept as ids after the first epoch
        sources = source_tok.encode_batch([s for s, _ in pairs])
        targets = target_tok.encode_batch([t for _, t in pairs])
        return [(s[:max_source_length], t[:max_target_length], int(len(s) > max_source_length or
                 len(t) > max_target_length)) for s, t in zip(sources, targets, strict=True)]  # fmt: skip

    def window(items: list) -> list:  # a window's items as collate_pairs takes them, the cuts counted
        truncated[0] += sum(cut for _, _, cut in items)
        return [(s, t, i) for i, (s, t, _) in enumerate(items)]

    reading = (tokenizer_text(source_tok), tokenizer_text(target_tok), max_source_length, max_target_length)
    directory = id_cache_dir(stream_cache_dir() / stream.cache_key(vocab_size), *reading, PAIR_IDS.name, world, rank)
    ids = EncodedStride(stream.training_pairs, encode, PAIR_IDS, directory, world=world, rank=rank,
                        limit=-(-scan.train_pairs // world), content=lambda: file_content_key(stream.path),
                        limits=(source_tok.vocab_size, target_tok.vocab_size, 2))  # fmt: skip
    train_batches = StreamedBatches(
        ids,
        scan.train_pairs,
        encode=window,
        length=lambda item: len(item[0]) + len(item[1]),
        collate=collate_pairs,
        options=StreamOptions(batch_size=batch_size, seed=fit_config.seed),
        world=world,
        rank=rank,
        strided=True,
    )

    def details() -> dict:  # read after training: the cuts are counted as the epochs read the file
        return {
            "streamed": True,
            "load_seconds": round(load_seconds, 2),
            "scan_cached": scan.cached,
            "sizes": {"train": scan.train_pairs, "valid": len(data.valid), "test": len(data.test)},
            "held_out_pairs": scan.valid_pairs,
            "bad_rows_skipped": scan.bad_rows,
            "truncated_pairs": truncated[0],
            "steps_per_epoch": len(train_batches),
            "epochs_read_as_ids": ids.epochs_from_cache,
            "scan_sampled_bytes": scan.sampled_bytes,
        }

    return fit_seq2seq(
        run_config(config, data, source_tok, target_tok),
        data,
        (source_tok, target_tok),
        lambda: train_batches,
        fit_config,
        out_dir=out_dir,
        batch_size=batch_size,
        resume=resume,
        evaluate_test=evaluate_test,
        device=device,
        save_tokenizers=True,
        init_from=init_from,
        details=details,
    )
