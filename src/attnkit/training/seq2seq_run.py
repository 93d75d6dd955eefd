"""Train a sequence-to-sequence model: what ``attnkit train seq2seq`` runs (loading, evaluating and using the
checkpoints it writes: :mod:`attnkit.training.seq2seq_inference`).

    data = load_data("dates")                                        # or a pair file: load_data("pairs.tsv", ...)
    report = train_seq2seq(data, {"model": "rnn", "attention": "bahdanau"}, FitConfig(epochs=10), out_dir="runs/d")

A run directory holds ``best/`` and ``last/`` checkpoints — ``model.safetensors``, ``config.json`` (``"kind":
"seq2seq"`` plus :class:`Seq2SeqConfig`) and the tokeniser file(s), ``tokenizer.json`` for a shared vocabulary or
``source_tokenizer.json`` + ``target_tokenizer.json`` — plus ``tokenizers/`` (the run's own copy, reused by
``resume``) and ``metrics.json``.

Model selection uses the task's validation split only, every epoch: lowest WER for sequence tasks (cmudict, dates,
character or symbol targets), highest BLEU for text (subword targets). The test split is decoded once, after
training, with the best weights.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader

from attnkit.data.seq2seq import (
    BucketBatchSampler,
    PairDataset,
    Seq2SeqData,
    Tokenizer,
    build_tokenizers,
    collate_pairs,
    encode_pairs,
    load_pair_files,
    load_task,
    load_tokenizers,
    make_loader,
    read_pairs,
    save_tokenizers,
    task_names,
)
from attnkit.data.seq2seq.dataset import Pair
from attnkit.data.seq2seq.tokenization import SHARED_FILENAME, SOURCE_FILENAME, TARGET_FILENAME
from attnkit.models.seq2seq import build_seq2seq
from attnkit.training.loop import FitConfig, FitResult, fit
from attnkit.training.seq2seq import SELECTION, Seq2SeqTask, metric_kind
from attnkit.training.seq2seq_inference import KIND, LoadedSeq2Seq, Seq2SeqConfig, evaluate_seq2seq

__all__ = [
    "LEVELS",
    "Seq2SeqTrainReport",
    "evaluation_data",
    "load_data",
    "pairs_with_references",
    "subset",
    "train_seq2seq",
]

LEVELS = ("char", "symbol", "subword")
TOKENIZER_DIR = "tokenizers"
TOKENIZER_FILES = (SHARED_FILENAME, SOURCE_FILENAME, TARGET_FILENAME)


# ------------------------------------------------------------------------------------------------------ data


def load_data(
    data: str,
    *,
    valid: str | None = None,
    test: str | None = None,
    source_column: str = "source",
    target_column: str = "target",
    source_level: str = "char",
    target_level: str = "char",
) -> Seq2SeqData:
    """A built-in task by name (``cmudict``, ``dates``, ``bible-en-es``) or a TSV/CSV/JSONL pair file.

    For a file: ``valid`` and ``test`` files are optional (without ``valid``, a hashed 5% of the training sources
    is held out; without ``test`` nothing is tested); the levels say how to tokenise each side.

    Raises:
        ValueError: file options given with a built-in task, or an unknown level.
        DataError / PairFileError: unreadable or bad files (``file:line: ...``).
        FileNotFoundError: ``data`` is neither a built-in task nor a file.
    """
    if data in task_names():
        given = [flag for flag, value in (("--valid", valid), ("--test", test)) if value is not None]
        if given:
            raise ValueError(f"{' and '.join(given)} are for pair files; the built-in task {data!r} has its own splits")
        return load_task(data)
    for name, level in (("source_level", source_level), ("target_level", target_level)):
        if level not in LEVELS:
            raise ValueError(f"{name} must be one of {', '.join(LEVELS)}, got {level!r}")
    if not Path(data).exists():
        raise FileNotFoundError(f"{data}: neither a built-in task ({', '.join(task_names())}) nor a file")
    return load_pair_files(
        data,
        valid,
        test,
        source_level=source_level,  # type: ignore[arg-type]
        target_level=target_level,  # type: ignore[arg-type]
        source_key=source_column,
        target_key=target_column,
    )


def subset(data: Seq2SeqData, limit: int) -> Seq2SeqData:
    """The first ``limit`` training pairs and at most ``max(limit // 4, 1)`` validation and test pairs (smoke runs)."""
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    held = max(limit // 4, 1)
    return dataclasses.replace(data, train=data.train[:limit], valid=data.valid[:held], test=data.test[:held])


def pairs_with_references(pairs: Sequence[Pair]) -> tuple[list[Pair], list[list[str]]]:
    """One pair per distinct source (its first), and every target the pairs give that source, in order."""
    references: dict[str, list[str]] = {}
    for source, target in pairs:
        targets = references.setdefault(source, [])
        if target not in targets:
            targets.append(target)
    return [(source, targets[0]) for source, targets in references.items()], list(references.values())


def evaluation_data(
    config: Seq2SeqConfig,
    data: str | None = None,
    *,
    split: str | None = None,
    source_column: str = "source",
    target_column: str = "target",
) -> tuple[list[Pair], list[list[str]], str]:
    """The pairs to evaluate a checkpoint on, each one's acceptable references, and a label for them.

    ``data`` is a built-in task (its ``split``: ``test`` by default, or ``valid``) or a pair file (every distinct
    source in it, with all its targets as references); None means the task the checkpoint was trained on.
    """
    name = config.data if data is None else data
    if name in task_names():
        split = split or "test"
        if split not in ("valid", "test"):
            raise ValueError(f"split must be 'valid' or 'test', got {split!r}")
        task = load_task(name)
        return task.split(split), task.references_for(split), f"{name} {split} split"
    if data is None:
        raise ValueError(
            f"the checkpoint was trained on {config.data!r}, not a built-in task: give the pairs with --data FILE"
        )
    if split is not None:
        raise ValueError(f"--split is for built-in tasks; the file {data} is evaluated whole")
    pairs, references = pairs_with_references(read_pairs(data, source_key=source_column, target_key=target_column))
    return pairs, references, data


def _replica() -> tuple[int, int]:
    """``(rank, world_size)`` from torchrun's environment (``(0, 1)`` outside it)."""
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def _train_batches(dataset: PairDataset, batch_size: int, seed: int, world: int, rank: int) -> Callable:
    """``batches(epoch)``: this rank's length-bucketed, shuffled batches of epoch ``epoch``."""
    sampler = BucketBatchSampler(dataset.lengths, batch_size, shuffle=True, seed=seed, num_replicas=world, rank=rank)
    loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=collate_pairs)

    def batches(epoch: int) -> DataLoader:
        sampler.set_epoch(epoch)
        return loader

    return batches


# -------------------------------------------------------------------------------------------------- training


@dataclass
class Seq2SeqTrainReport:
    """What a training run produced: the fit history, test metrics (None without a test split), timings."""

    fit: FitResult
    test_metrics: dict[str, float] | None
    train_seconds: float
    checkpoint: Path
    num_parameters: int
    config: Seq2SeqConfig


def _tokenizers(
    data: Seq2SeqData, directory: Path, *, vocab_size: int, resume: bool
) -> tuple[Tokenizer, Tokenizer, bool]:
    """``(source, target, built)``: the run's own tokenisers when resuming and they exist, else new ones from the
    training split (``built``: they still have to be saved). A shared tokeniser is one object twice."""
    if resume:
        try:
            return (*load_tokenizers(directory), False)
        except ValueError:  # interrupted before the tokenisers were written: build them as a fresh run would
            pass
    return (*build_tokenizers(data, vocab_size=vocab_size), True)


def _save_tokenizers(directory: Path, source: Tokenizer, target: Tokenizer) -> None:
    """Write the tokenisers, removing files of the other layout (they would shadow the new ones on resume)."""
    for name in TOKENIZER_FILES:
        (directory / name).unlink(missing_ok=True)
    save_tokenizers(directory, source, target)


def train_seq2seq(
    data: Seq2SeqData,
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
) -> Seq2SeqTrainReport:
    """Train the model ``model_options`` describe on ``data.train``, validating on ``data.valid`` every epoch.

    Args:
        data: the task's three splits (the test split is only decoded after training).
        model_options: :func:`~attnkit.models.seq2seq.build_seq2seq`'s config without the vocabulary sizes
            (``{"model": "rnn", "attention": "local-p", ...}``).
        fit_config: the loop's options; its selection metric and mode are replaced by the task's (WER min for
            sequence tasks, BLEU max for text), its ``max_minutes`` is the time budget.
        out_dir: the run directory (see the module docstring).
        vocab_size: of subword tokenisers.
        resume: continue from ``out_dir/last`` with the run's own tokenisers.
        evaluate_test: decode the test split (greedily) with the best weights at the end, if it has pairs.
        data_name: what ``config.json`` records as the data (default ``data.name``).

    Returns:
        A :class:`Seq2SeqTrainReport`. Writes ``out_dir/{best,last}/``, ``out_dir/tokenizers/``,
        ``out_dir/metrics.json``. Runs under ``torchrun``: each rank trains on its shard of every global batch and
        decodes its own shard of the validation split; the metrics are reduced exactly.
    """
    if not data.train:
        raise ValueError(f"{data.name}: the training split is empty")
    if not data.valid:
        raise ValueError(f"{data.name}: the validation split is empty; give a --valid file or more training pairs")
    out_dir = Path(out_dir)
    rank, world = _replica()
    kind = metric_kind(data)
    select_metric, select_mode = SELECTION[kind]
    fit_config = dataclasses.replace(fit_config, select_metric=select_metric, select_mode=select_mode)
    tokenizer_dir = out_dir / TOKENIZER_DIR
    source_tok, target_tok, built = _tokenizers(data, tokenizer_dir, vocab_size=vocab_size, resume=resume)
    model_config = {
        **model_options,
        "source_vocab_size": source_tok.vocab_size,
        "target_vocab_size": target_tok.vocab_size,
    }
    config = Seq2SeqConfig(
        model=model_config,
        data=data_name or data.name,
        metrics=kind,
        source_level=data.source_level,
        target_level=data.target_level,
        label_smoothing=label_smoothing,
    )
    torch.manual_seed(fit_config.seed)
    model = build_seq2seq(model_config)  # bad options fail here, before anything is written
    if built and rank == 0:
        _save_tokenizers(tokenizer_dir, source_tok, target_tok)
    names = TOKENIZER_FILES[:1] if source_tok is target_tok else TOKENIZER_FILES[1:]

    train_set = encode_pairs(data.train, source_tok, target_tok)
    valid_shard = data.valid[rank::world]
    references = data.references_for("valid")[rank::world]
    valid_loader = make_loader(
        encode_pairs(valid_shard, source_tok, target_tok), batch_size=2 * batch_size, shuffle=False
    )
    task = Seq2SeqTask(
        model, target_tok, metrics=kind, label_smoothing=label_smoothing, references=references, beam_size=1
    )
    result = fit(
        task,
        _train_batches(train_set, batch_size, fit_config.seed, world, rank),
        lambda: valid_loader,
        fit_config,
        checkpoint_dir=out_dir,
        resume=resume,
        model_config={"kind": KIND, **config.to_dict()},
        extra_files={name: tokenizer_dir / name for name in names},
    )
    train_seconds = result.wall_time  # the whole run's training time, resumed parts included

    test_metrics = None
    if evaluate_test and data.test and rank == 0:
        loaded = LoadedSeq2Seq(model.eval(), source_tok, target_tok, config)
        test_metrics = evaluate_seq2seq(loaded, data.test, data.references_for("test"), batch_size=2 * batch_size)
    report = Seq2SeqTrainReport(
        fit=result,
        test_metrics=test_metrics,
        train_seconds=train_seconds,
        checkpoint=out_dir / "best",
        num_parameters=sum(p.numel() for p in model.parameters()),
        config=config,
    )
    if rank == 0:
        summary = {
            "data": config.data,
            "sizes": data.sizes,
            "config": config.to_dict(),
            "seed": fit_config.seed,
            "batch_size": batch_size,
            "lr": fit_config.lr,
            "best_epoch": result.best_epoch,
            "best_valid": result.best_metrics,
            "test": test_metrics,
            "stop_reason": result.stop_reason,
            "epochs_run": len(result.history),
            "train_seconds": round(train_seconds, 1),
            "num_parameters": report.num_parameters,
        }
        (out_dir / "metrics.json").write_text(json.dumps(summary, indent=2) + "\n")
    return report
