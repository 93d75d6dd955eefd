"""Train a seq2seq model on a pair file read as a stream: what ``attnkit train seq2seq --data big.tsv`` runs when
the file is large (or ``--streaming always``) (layer 5).

The file is read once for its tokenisers and validation pairs
(:class:`~attnkit.data.seq2seq.pair_stream.PairFileStream`, cached), then once per epoch for the training pairs,
encoded a window at a time and batched by :class:`~attnkit.data.streaming.StreamedBatches` (bounded shuffle,
length buckets, equal rank strides). Pairs longer than ``--max-source-length`` / ``--max-target-length`` tokens
are cut to those lengths on the stream (the in-memory path skips them: counting them first would cost another
pass over the file); ``details.truncated_pairs`` in ``metrics.json`` counts the cuts over all epochs read. A
``--valid`` or ``--test`` file is read in memory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from attnkit.data.seq2seq import Seq2SeqData, collate_pairs, encode_pairs, make_loader, read_pairs
from attnkit.data.seq2seq.lengths import DEFAULT_MAX_SOURCE_LENGTH, DEFAULT_MAX_TARGET_LENGTH
from attnkit.data.seq2seq.pair_stream import PairFileStream
from attnkit.data.seq2seq.tokenization import load_tokenizers
from attnkit.data.streaming import StreamedBatches, StreamOptions
from attnkit.models.seq2seq import build_seq2seq
from attnkit.tasks.seq2seq.config import KIND, Seq2SeqConfig
from attnkit.tasks.seq2seq.inference import LoadedSeq2Seq, evaluate_seq2seq
from attnkit.tasks.seq2seq.objective import Seq2SeqObjective
from attnkit.tasks.seq2seq.scoring import scoring_for
from attnkit.tasks.seq2seq.training import TOKENIZER_DIR, TOKENIZER_FILES, save_run_tokenizers
from attnkit.training.loop import FitConfig, fit
from attnkit.training.precision import place_model
from attnkit.training.run_report import TrainReport, count_parameters, replica, write_metrics

__all__ = ["train_seq2seq_streamed"]


def _held_data(stream: PairFileStream, valid: list, test_path: str | None, valid_path: str | None) -> Seq2SeqData:
    """The validation and test splits as :class:`Seq2SeqData` (no training pairs): each source once, with every
    target the split gives it as a reference."""
    keys = {"source_key": stream.source_key, "target_key": stream.target_key}
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
    model_options: Mapping[str, Any],
    fit_config: FitConfig,
    *,
    out_dir: str | Path,
    batch_size: int = 64,
    vocab_size: int = 8000,
    label_smoothing: float = 0.1,
    resume: bool = False,
    evaluate_test: bool = True,
    data_name: str | None = None,
    valid_path: str | None = None,
    test_path: str | None = None,
    max_source_length: int = DEFAULT_MAX_SOURCE_LENGTH,
    max_target_length: int = DEFAULT_MAX_TARGET_LENGTH,
    device: str | torch.device = "auto",
) -> TrainReport:
    """Train the model ``model_options`` describe on ``stream``'s training pairs; the rest as
    :func:`~attnkit.tasks.seq2seq.training.train_seq2seq` (same run directory, checkpoints and ``metrics.json``,
    whose details add ``load_seconds`` and the pair counts).

    Raises:
        DataError: as :meth:`PairFileStream.scan`.
    """
    started = time.monotonic()
    out_dir = Path(out_dir)
    rank, world = replica()
    scan, source_tok, target_tok = stream.scan(vocab_size=vocab_size)
    tokenizer_dir = out_dir / TOKENIZER_DIR
    if resume:
        with contextlib.suppress(ValueError):  # interrupted before they were written: the scan's, as a fresh run
            source_tok, target_tok = load_tokenizers(tokenizer_dir)
    data = _held_data(stream, scan.valid, test_path, valid_path)
    load_seconds = time.monotonic() - started
    if rank == 0:
        source = "from the cache" if scan.cached else f"in {scan.seconds:.1f} s"
        print(f"{stream.path}: {scan.train_pairs:,} training pairs, {scan.valid_pairs:,} held out ({source})")
    scoring = scoring_for(data)
    fit_config = dataclasses.replace(fit_config, select_metric=scoring.select_metric, select_mode=scoring.select_mode)
    model_config = {**model_options, "source_vocab_size": source_tok.vocab_size,
                    "target_vocab_size": target_tok.vocab_size}  # fmt: skip
    config = Seq2SeqConfig(
        model=model_config,
        data=data_name or data.name,
        metrics=scoring.name,
        source_level=data.source_level,
        target_level=data.target_level,
        label_smoothing=label_smoothing,
    )
    torch.manual_seed(fit_config.seed)
    model = build_seq2seq(model_config)
    place_model(model, device)
    if rank == 0:
        save_run_tokenizers(tokenizer_dir, source_tok, target_tok)
    names = TOKENIZER_FILES[:1] if source_tok is target_tok else TOKENIZER_FILES[1:]

    truncated = [0]

    def encode(pairs: list) -> list:
        sources = source_tok.encode_batch([s for s, _ in pairs])
        targets = target_tok.encode_batch([t for _, t in pairs])
        items = []
        for i, (s, t) in enumerate(zip(sources, targets, strict=True)):
            if len(s) > max_source_length or len(t) > max_target_length:
                truncated[0] += 1
            items.append((s[:max_source_length], t[:max_target_length], i))
        return items

    train_batches = StreamedBatches(
        stream.training_pairs,
        scan.train_pairs,
        encode=encode,
        length=lambda item: len(item[0]) + len(item[1]),
        collate=collate_pairs,
        options=StreamOptions(batch_size=batch_size, seed=fit_config.seed),
        world=world,
        rank=rank,
    )
    valid_shard = data.valid[rank::world]
    references = data.references_for("valid")[rank::world]
    valid_loader = make_loader(encode_pairs(valid_shard, source_tok, target_tok), batch_size=2 * batch_size,
                               shuffle=False)  # fmt: skip
    objective = Seq2SeqObjective(model, target_tok, scoring=scoring, label_smoothing=label_smoothing, references=references,
                       beam_size=1)  # fmt: skip
    result = fit(
        objective,
        train_batches,
        lambda: valid_loader,
        fit_config,
        checkpoint_dir=out_dir,
        resume=resume,
        model_config={"kind": KIND, **config.to_dict()},
        extra_files={name: tokenizer_dir / name for name in names},
    )
    test_metrics = None
    if evaluate_test and data.test and rank == 0:
        loaded = LoadedSeq2Seq(model.eval(), source_tok, target_tok, config, fit_config.precision)
        test_metrics = evaluate_seq2seq(loaded, data.test, data.references_for("test"), batch_size=2 * batch_size)
    details = {
        "streamed": True,
        "load_seconds": round(load_seconds, 2),
        "scan_cached": scan.cached,
        "sizes": {"train": scan.train_pairs, "valid": len(data.valid), "test": len(data.test)},
        "held_out_pairs": scan.valid_pairs,
        "bad_rows_skipped": scan.bad_rows,
        "truncated_pairs": truncated[0],
        "steps_per_epoch": len(train_batches),
    }
    report = TrainReport(result, test_metrics, out_dir / "best", count_parameters(model), config, details)
    write_metrics(out_dir, report, task=KIND, data=config.data, fit_config=fit_config, batch_size=batch_size)
    return report
