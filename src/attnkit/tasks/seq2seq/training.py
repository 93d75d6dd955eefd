"""Train a sequence-to-sequence model: what ``attnkit train seq2seq`` runs (layer 5; loading, evaluating and
using the checkpoints it writes: :mod:`attnkit.tasks.seq2seq.inference`).

    data = load_data("dates")                                        # or a pair file: load_data("pairs.tsv", ...)
    config = Seq2SeqConfig(model={"model": "rnn", "attention": "bahdanau"})
    report = train_seq2seq(data, config, FitConfig(epochs=10), out_dir="runs/d")

One trainer over pairs in memory (:class:`InMemoryPairs`) or streamed
(:class:`~attnkit.tasks.seq2seq.streamed_pairs.StreamedPairs`). Checkpoints carry their tokeniser file(s); the
run's own copy in ``tokenizers/`` is reused by ``resume``. Selection uses the validation split only (lowest WER
for sequence data, highest BLEU for text); the test split is decoded once, with the best weights.

Shape glossary:
    B  pairs   S  source tokens   T  target tokens
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol

import torch
from torch.utils.data import DataLoader

from attnkit.data.seq2seq import (
    BucketBatchSampler,
    Seq2SeqData,
    Tokenizer,
    build_tokenizers,
    collate_pairs,
    encode_pairs,
    load_tokenizers,
    make_loader,
    save_tokenizers,
)
from attnkit.data.seq2seq.lengths import DEFAULT_MAX_SOURCE_LENGTH, DEFAULT_MAX_TARGET_LENGTH, limit_pair_lengths
from attnkit.data.seq2seq.tokenization import SHARED_FILENAME, SOURCE_FILENAME, TARGET_FILENAME
from attnkit.tasks.seq2seq.config import KIND, Seq2SeqConfig, build_seq2seq_model
from attnkit.tasks.seq2seq.distill.student import Distillation, distilled_data, provenance
from attnkit.tasks.seq2seq.inference import LoadedSeq2Seq, evaluate_seq2seq
from attnkit.tasks.seq2seq.objective import Seq2SeqObjective
from attnkit.tasks.seq2seq.scoring import scoring_for, scoring_named
from attnkit.training.init_from import InitFrom
from attnkit.training.loop import FitConfig, fit
from attnkit.training.precision import place_model
from attnkit.training.run_report import TrainReport, count_parameters, replica, write_metrics

__all__ = ["TOKENIZER_DIR", "InMemoryPairs", "PairSource", "run_config", "run_tokenizers", "train_seq2seq"]

TOKENIZER_DIR = "tokenizers"
TOKENIZER_FILES = (SHARED_FILENAME, SOURCE_FILENAME, TARGET_FILENAME)


class PairSource(Protocol):
    """Pairs :func:`train_seq2seq` trains on, in memory or streamed; its methods are called in the order given."""

    name: str
    levels: tuple[str, str]
    teacher: torch.nn.Module | None  # whose distributions the loss matches, with teacher_weight
    teacher_weight: float

    def open(self, vocab_size: int) -> None:
        """Check or read what new tokenisers of ``vocab_size`` would come from."""

    def tokenizers(self) -> tuple[Tokenizer, Tokenizer]:
        """New ``(source, target)`` tokenisers of the training pairs."""

    def prepare(
        self, tokenizers: tuple[Tokenizer, Tokenizer], config: Seq2SeqConfig, fit_config: FitConfig, *,
        batch_size: int, lengths: tuple[int, int],
    ) -> tuple[Seq2SeqData, Seq2SeqConfig]:  # fmt: skip
        """Ready the training pairs for ``tokenizers`` and ``lengths``; returns the held-out pairs and ``config``."""

    def train_batches(self) -> Callable[[int], Iterable]:
        """``epoch -> batches`` of this rank's training pairs (:func:`~attnkit.data.seq2seq.collate_pairs`'s)."""

    def details(self) -> dict:
        """What ``metrics.json``'s details say of the pairs (read after training)."""


def train_seq2seq(
    data: Seq2SeqData | PairSource,
    config: Seq2SeqConfig,
    fit_config: FitConfig,
    *,
    out_dir: str | Path,
    batch_size: int = 64,
    vocab_size: int = 8000,
    resume: bool = False,
    evaluate_test: bool = True,
    max_source_length: int = DEFAULT_MAX_SOURCE_LENGTH,
    max_target_length: int = DEFAULT_MAX_TARGET_LENGTH,
    strict: bool = False,
    device: str | torch.device = "auto",
    init_from: InitFrom | None = None,
    load_seconds: float | None = None,
    distill: Distillation | None = None,
) -> TrainReport:
    """Train the model ``config`` describes on ``data``'s training pairs, validating every epoch.

    ``data`` is a loaded data set (read as :class:`InMemoryPairs`) or any :class:`PairSource`. The vocabulary sizes,
    metric kind and levels come from the data (:func:`run_config`); ``fit_config``'s selection metric is replaced
    by the objective's. ``init_from`` starts from a checkpoint's weights and tokenisers with a fresh optimiser.
    Under ``torchrun`` each rank trains and validates on its own shard; the metrics are reduced exactly.
    """
    if isinstance(data, Seq2SeqData):
        data = InMemoryPairs(data, strict=strict, load_seconds=load_seconds, distill=distill)
    out_dir = Path(out_dir)
    data.open(vocab_size)
    source_tok, target_tok, built = run_tokenizers(data, out_dir, resume=resume, init_from=init_from)
    lengths = (max_source_length, max_target_length)
    held, config = data.prepare((source_tok, target_tok), config, fit_config, batch_size=batch_size, lengths=lengths)
    return fit_seq2seq(run_config(config, held, source_tok, target_tok), held, data, (source_tok, target_tok),
                       fit_config, out_dir=out_dir, batch_size=batch_size, resume=resume, evaluate_test=evaluate_test,
                       device=device, new_tokenizers=built, init_from=init_from)  # fmt: skip


class InMemoryPairs:
    """A loaded data set for :func:`train_seq2seq`. Pairs over the length limits are skipped in every split
    (``strict``: refused). ``distill`` trains on these teachers' outputs instead (:mod:`attnkit.tasks.seq2seq.distill`),
    recorded in the config's ``distillation`` so that a resumed run must have the same teachers."""

    def __init__(
        self, data: Seq2SeqData, *, strict: bool = False, load_seconds: float | None = None,
        distill: Distillation | None = None,
    ) -> None:  # fmt: skip
        self.data, self.strict, self.load_seconds, self.distill = data, strict, load_seconds, distill
        self.name, self.levels = data.name, (data.source_level, data.target_level)
        self.teacher: torch.nn.Module | None = None
        self.teacher_weight = 0.0

    def open(self, vocab_size: int) -> None:
        if not self.data.train:
            raise ValueError(f"{self.name}: the training split is empty")
        if not self.data.valid:
            raise ValueError(f"{self.name}: the validation split is empty; give a --valid file or more training pairs")
        self.vocab_size = vocab_size

    def tokenizers(self) -> tuple[Tokenizer, Tokenizer]:
        return build_tokenizers(self.data, vocab_size=self.vocab_size)

    def prepare(
        self, tokenizers: tuple[Tokenizer, Tokenizer], config: Seq2SeqConfig, fit_config: FitConfig, *,
        batch_size: int, lengths: tuple[int, int],
    ) -> tuple[Seq2SeqData, Seq2SeqConfig]:  # fmt: skip
        rank = replica()[0]
        data, distilled = self.data, {}
        if self.distill is not None:
            teachers, say = self.distill.load(), print if rank == 0 else lambda line: None
            data, distilled["distill"] = distilled_data(data, *tokenizers, self.distill, teachers=teachers, report=say,
                                                       progress=fit_config.progress and rank == 0)  # fmt: skip
            config = dataclasses.replace(config, distillation=provenance(distilled["distill"]))
            if self.distill.token_weight:  # the loss matches the teachers' distributions too
                self.teacher, self.teacher_weight = teachers.loaded.model, self.distill.token_weight
        limited = limit_pair_lengths(data, *tokenizers, max_source_length=lengths[0], max_target_length=lengths[1],
                                     strict=self.strict)  # fmt: skip
        if limited.skipped_total and rank == 0:
            print(limited.message())
        self._details = {"sizes": limited.data.sizes, **distilled}
        if self.load_seconds is not None:
            self._details["load_seconds"] = round(self.load_seconds, 2)
        self._train = (limited.encoded["train"], batch_size, fit_config.seed)
        return limited.data, config

    def train_batches(self) -> Callable[[int], DataLoader]:
        """This rank's length-bucketed batches, shuffled by epoch."""
        (dataset, size, seed), (rank, world) = self._train, replica()
        sampler = BucketBatchSampler(dataset.lengths, size, shuffle=True, seed=seed, num_replicas=world, rank=rank)
        loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=collate_pairs)

        def batches(epoch: int) -> DataLoader:
            sampler.set_epoch(epoch)
            return loader

        return batches

    def details(self) -> dict:
        return self._details


def run_tokenizers(
    pairs: PairSource, out_dir: Path, *, resume: bool, init_from: InitFrom | None
) -> tuple[Tokenizer, Tokenizer, bool]:
    """``(source, target, built)``: ``init_from``'s tokenisers when it starts the run; else, resuming, the run's
    own copy; else ``pairs.tokenizers()`` (``built``: they still have to be saved). A shared tokeniser is one object
    twice."""
    if init_from is not None and not (resume and (out_dir / "last").exists()):
        trained = (init_from.config.get("source_level"), init_from.config.get("target_level"))
        if trained != tuple(pairs.levels):
            raise ValueError(
                f"--init-from {init_from.given}: trained on {trained[0]} -> {trained[1]} pairs, "
                f"{pairs.name} has {pairs.levels[0]} -> {pairs.levels[1]}"
            )
        return (*load_tokenizers(init_from.checkpoint), True)
    if resume:
        with contextlib.suppress(ValueError):  # interrupted before they were written: new ones, as a fresh run
            return (*load_tokenizers(out_dir / TOKENIZER_DIR), False)
    return (*pairs.tokenizers(), True)


def run_config(config: Seq2SeqConfig, data: Seq2SeqData, source: Tokenizer, target: Tokenizer) -> Seq2SeqConfig:
    """What the run's ``config.json`` holds: ``config`` with the tokenisers' vocabulary sizes and the data's
    scoring, levels and name."""
    model = {**config.model, "source_vocab_size": source.vocab_size, "target_vocab_size": target.vocab_size}
    levels = {"source_level": data.source_level, "target_level": data.target_level}
    return dataclasses.replace(
        config, model=model, data=config.data or data.name, metrics=scoring_for(data).name, **levels
    )


def fit_seq2seq(
    config: Seq2SeqConfig,
    data: Seq2SeqData,
    pairs: PairSource,
    tokenizers: tuple[Tokenizer, Tokenizer],
    fit_config: FitConfig,
    *,
    out_dir: Path,
    batch_size: int,
    resume: bool,
    evaluate_test: bool,
    device: str | torch.device,
    new_tokenizers: bool,
    init_from: InitFrom | None = None,
) -> TrainReport:
    """Build ``config``'s model, save new tokenisers, fit on ``pairs`` selecting on ``data.valid``, decode
    ``data.test`` (``evaluate_test``) and write ``metrics.json``."""
    rank, world = replica()
    source_tok, target_tok = tokenizers
    scoring = scoring_named(config.metrics)
    fit_config = dataclasses.replace(fit_config, select_metric=scoring.select_metric, select_mode=scoring.select_mode)
    tokenizer_dir = out_dir / TOKENIZER_DIR
    torch.manual_seed(fit_config.seed)
    model = build_seq2seq_model(config)  # bad options fail here, before anything is written
    place_model(model, device)
    if new_tokenizers and rank == 0:  # files of the other layout would shadow the new ones on resume
        for name in TOKENIZER_FILES:
            (tokenizer_dir / name).unlink(missing_ok=True)
        save_tokenizers(tokenizer_dir, source_tok, target_tok)
    names = TOKENIZER_FILES[:1] if source_tok is target_tok else TOKENIZER_FILES[1:]
    batches = pairs.train_batches()
    valid_shard = encode_pairs(data.valid[rank::world], source_tok, target_tok)
    valid_loader = make_loader(valid_shard, batch_size=2 * batch_size, shuffle=False)
    objective = Seq2SeqObjective(model, target_tok, scoring=scoring, label_smoothing=config.label_smoothing,
                                 references=data.references_for("valid")[rank::world], beam_size=1,
                                 teacher=pairs.teacher, teacher_weight=pairs.teacher_weight)  # fmt: skip
    result = fit(
        objective,
        batches,
        lambda: valid_loader,
        fit_config,
        checkpoint_dir=out_dir,
        resume=resume,
        model_config={"kind": KIND, **config.to_dict()},
        extra_files={name: tokenizer_dir / name for name in names},
        init_from=None if init_from is None else init_from.checkpoint,
    )
    test_metrics = None
    if evaluate_test and data.test and rank == 0:
        loaded = LoadedSeq2Seq(model.eval(), source_tok, target_tok, config, fit_config.precision)
        test_metrics = evaluate_seq2seq(loaded, data.test, data.references_for("test"), batch_size=2 * batch_size)
    details = pairs.details() | ({} if init_from is None else {"init_from": init_from.record()})
    report = TrainReport(result, test_metrics, out_dir / "best", count_parameters(model), config, details)
    write_metrics(out_dir, report, task=KIND, data=config.data, fit_config=fit_config, batch_size=batch_size)
    return report
