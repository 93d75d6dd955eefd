"""Train a document classifier: what ``attnkit train classify`` and ``attnkit demo`` run (layer 5).

    data = load_data("fine-foods")
    report = train_classifier(data, ClassifierConfig(model="han"), FitConfig(epochs=5), out_dir="runs/ff")

The validation split is carved from the training data (stratified, deterministic); the test split is only
ever used for the final evaluation. A run directory holds ``best/`` and ``last/`` (safetensors + ``config.json`` +
``tokenizer.json``), ``tokenizer/`` (the run's own copy, reused by ``resume``) and ``metrics.json``.

Shape glossary:
    B  documents   C  classes
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from attnkit.data.batching import EncodedDataset
from attnkit.data.classification import TextClassificationData, stratified_split
from attnkit.data.classify.tokenization import TextTokenizer
from attnkit.tasks.classify.config import KIND, RECIPE_BEFORE_OPTIONS, ClassifierConfig, build_classifier
from attnkit.tasks.classify.embedding_init import initialise_embeddings, resumed_embeddings
from attnkit.tasks.classify.encoding import TextEncoder, make_batches
from attnkit.tasks.classify.objective import classification_objective, evaluate_encoded
from attnkit.training.init_from import InitFrom
from attnkit.training.loop import FitConfig, FitResult, fit
from attnkit.training.precision import place_model
from attnkit.training.run_report import TrainReport, count_parameters, replica, write_metrics

__all__ = [
    "TOKENIZER_DIR",
    "checkpoint_config",
    "fit_classifier",
    "placed_model",
    "prepared_model",
    "run_report",
    "run_tokenizer",
    "train_classifier",
]

TOKENIZER_DIR = "tokenizer"


def run_tokenizer(
    directory: Path, *, resume: bool, init_from: InitFrom | None, build: Callable[[], TextTokenizer]
) -> TextTokenizer:
    """The run's tokeniser, by one rule for in-memory and streamed data: its own copy in ``directory`` when resuming
    and it exists; else ``init_from``'s (the vocabulary its weights were trained with); else ``build()`` (from the
    training texts). A new one is saved in ``directory`` (by rank 0)."""
    if resume and (directory / TextTokenizer.FILENAME).exists():
        return TextTokenizer.load(directory)
    tokenizer = build() if init_from is None else TextTokenizer.load(init_from.checkpoint)
    if replica()[0] == 0:
        tokenizer.save(directory)
    return tokenizer


def train_classifier(
    data: TextClassificationData,
    config: ClassifierConfig,
    fit_config: FitConfig,
    *,
    out_dir: str | Path,
    batch_size: int = 32,
    valid_fraction: float = 0.1,
    valid_seed: int | None = None,
    resume: bool = False,
    bucketed: bool = True,
    device: str | torch.device = "auto",
    init_from: InitFrom | None = None,
    load_seconds: float | None = None,
) -> TrainReport:
    """Train ``config``'s model on ``data``'s training split; keep the best checkpoint by validation accuracy.

    ``config``'s ``label_names`` and ``punctuated`` are taken from ``data`` (the report carries the config the
    checkpoint stores; ``config`` itself is not changed). The model trains on ``device`` (``"auto"``: CUDA when
    available; see :func:`~attnkit.runtime.devices.resolve_device`) in ``fit_config.precision``. Writes
    ``out_dir/best``, ``out_dir/last`` and ``out_dir/metrics.json`` (its details hold ``load_seconds``, the time the
    caller spent reading ``data``, when given); returns the
    :class:`~attnkit.training.run_report.TrainReport`. ``init_from`` starts from a checkpoint's weights and
    tokeniser (``config`` must be its config; ``data`` must have its labels, in its order). The validation
    split is ``valid_fraction`` of the training split, carved with ``valid_seed`` (default: ``fit_config.seed``);
    ``valid_fraction=0`` trains on the whole training split without validation and keeps the last epoch (or the
    average of the last ``fit_config.average_last``): a recipe chosen on a validation split, refitted on all the
    data, which needs a schedule that does not watch validation (``fit_config.schedule`` cosine or inverse-sqrt).
    """
    out_dir = Path(out_dir)
    rank, world = replica()
    if init_from is not None and list(config.label_names) != list(data.label_names):
        raise ValueError(
            f"--init-from {init_from.given}: its labels {config.label_names} are not {data.name}'s {data.label_names}"
        )
    config = dataclasses.replace(config, label_names=list(data.label_names), punctuated=data.punctuated)
    split_seed = fit_config.seed if valid_seed is None else valid_seed
    train_idx, valid_idx = validation_split(data, valid_fraction, split_seed)
    train_texts = [data.train_texts[i] for i in train_idx]
    tokenizer = run_tokenizer(
        out_dir / TOKENIZER_DIR,
        resume=resume,
        init_from=init_from,
        build=lambda: TextTokenizer.train(
            train_texts, kind=config.tokenizer, vocab_size=config.vocab_size, min_frequency=config.min_frequency
        ),
    )
    encoder = TextEncoder(config, tokenizer)

    def dataset(texts: list[str], labels: list[int]) -> EncodedDataset:
        return EncodedDataset(encoder.encode(texts), labels)

    train_set = dataset(train_texts, [data.train_labels[i] for i in train_idx])
    # validation: each DDP rank scores its own disjoint shard; fit sums the counts across ranks
    shard = valid_idx[rank::world]
    valid_set = dataset([data.train_texts[i] for i in shard], [data.train_labels[i] for i in shard])
    collate = encoder.collate()  # [B, S, W] word ids for the HAN, [B, T] for the pooled model
    train_batches = make_batches(
        train_set,
        collate,
        batch_size,
        shuffle=True,
        bucketed=bucketed,
        seed=fit_config.seed,
        num_replicas=world,
        rank=rank,
    )
    valid_batches = make_batches(valid_set, collate, 2 * batch_size, shuffle=False) if valid_idx else None

    model, config = prepared_model(
        config, tokenizer, device, fit_config, out_dir=out_dir, resume=resume, init_from=init_from, texts=train_texts
    )
    result = fit_classifier(
        model, config, train_batches, valid_batches, fit_config, out_dir=out_dir, resume=resume, init_from=init_from
    )
    test_metrics = None
    if data.test_texts:  # fit has left the best epoch's weights in the model
        test_metrics = evaluate_encoded(
            model, encoder, data.test_texts, data.test_labels, batch_size=2 * batch_size, precision=fit_config.precision
        )
    details = {
        "train_documents": len(train_idx),
        "valid_documents": len(valid_idx),
        "valid_seed": split_seed,
        "bucketed": bucketed,
    }
    if load_seconds is not None:
        details["load_seconds"] = round(load_seconds, 2)
    return run_report(result, test_metrics, model, config, details, out_dir=out_dir, data=data.name,
                      fit_config=fit_config, batch_size=batch_size, init_from=init_from)  # fmt: skip


def prepared_model(
    config: ClassifierConfig,
    tokenizer: TextTokenizer,
    device: str | torch.device,
    fit_config: FitConfig,
    *,
    out_dir: Path,
    resume: bool,
    init_from: InitFrom | None,
    texts: list[str],
) -> tuple[nn.Module, ClassifierConfig]:
    """The model a run trains and the config its checkpoints store, by one rule for in-memory and streamed data:
    :func:`placed_model`, with the pre-trained vectors ``config.embeddings`` names copied in (``texts``: what
    self-trained vectors learn from) unless the run resumes (its checkpoint's weights replace any initialisation,
    and the config keeps the vectors' settings its first start recorded) or starts from ``init_from``."""
    model = placed_model(config, tokenizer, device, seed=fit_config.seed)
    if config.embeddings == "random":
        return model, config
    if resume and (out_dir / "last").exists():
        return model, resumed_embeddings(config, out_dir / "last")
    if init_from is None:
        config = initialise_embeddings(model, config, tokenizer, texts, seed=fit_config.seed)
    return model, config


def run_report(
    result: FitResult,
    test_metrics: dict[str, float] | None,
    model: nn.Module,
    config: ClassifierConfig,
    details: dict,
    *,
    out_dir: Path,
    data: str,
    fit_config: FitConfig,
    batch_size: int,
    init_from: InitFrom | None,
) -> TrainReport:
    """The run's :class:`~attnkit.training.run_report.TrainReport` (``details`` with ``init_from``'s record), written
    to ``out_dir/metrics.json``: the tail every classifier run shares, in memory or streamed."""
    if init_from is not None:
        details = {**details, "init_from": init_from.record()}
    report = TrainReport(result, test_metrics, out_dir / "best", count_parameters(model), config, details)
    write_metrics(out_dir, report, task=KIND, data=data, fit_config=fit_config, batch_size=batch_size)
    return report


def validation_split(data: TextClassificationData, valid_fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """``(train, valid)`` indices into ``data``'s training split: ``valid_fraction`` of each label carved for
    validation with ``seed`` (:func:`~attnkit.data.classification.stratified_split`), or, for ``valid_fraction``
    0, every document in training and none in validation."""
    if valid_fraction == 0:
        return list(range(len(data.train_texts))), []
    return stratified_split(data.train_texts, data.train_labels, test_fraction=valid_fraction, seed=seed)


def placed_model(
    config: ClassifierConfig, tokenizer: TextTokenizer, device: str | torch.device, *, seed: int
) -> nn.Module:
    """``config``'s untrained model for ``tokenizer``'s vocabulary, seeded by ``seed``, its word attention limited
    to content words when ``config.attend`` says so, on ``device`` (what the in-memory and streamed trainers share)."""
    torch.manual_seed(seed)
    model = build_classifier(config, tokenizer.vocab_size)
    if config.attend == "content":
        from attnkit.tasks.classify.attended_words import content_word_table

        model.attendable.copy_(content_word_table(tokenizer))
    place_model(model, device)
    return model


def fit_classifier(
    model: nn.Module,
    config: ClassifierConfig,
    train_batches,
    valid_batches,
    fit_config: FitConfig,
    *,
    out_dir: Path,
    resume: bool,
    init_from: InitFrom | None = None,
):
    """:func:`~attnkit.training.loop.fit` on a classifier: the label-smoothed loss, validation accuracy, and
    checkpoints holding ``config`` and the run's tokeniser (``out_dir/tokenizer``). Returns fit's result."""
    tokenizer_file = out_dir / TOKENIZER_DIR / TextTokenizer.FILENAME
    return fit(
        classification_objective(
            model, label_smoothing=config.label_smoothing, encoder_diversity=config.encoder_diversity
        ),
        train_batches,
        None if valid_batches is None else lambda: valid_batches(0),
        fit_config,
        checkpoint_dir=out_dir,
        resume=resume,
        model_config=checkpoint_config(config, out_dir, resume=resume),
        extra_files={TextTokenizer.FILENAME: tokenizer_file},
        init_from=None if init_from is None else init_from.checkpoint,
    )


def checkpoint_config(config: ClassifierConfig, out_dir: Path, *, resume: bool) -> dict:
    """The ``config.json`` of the run's checkpoints. A resumed run started before the faithful-attention options
    existed keeps writing its config as it started (without them, which reads as the recipe it was trained with:
    :data:`~attnkit.tasks.classify.config.RECIPE_BEFORE_OPTIONS`), so that resuming compares equal configs."""
    values = {"kind": KIND, **config.to_dict()}
    saved = Path(out_dir) / "last" / "config.json"
    if resume and saved.is_file():
        then = json.loads(saved.read_text(encoding="utf-8"))
        for key, before in RECIPE_BEFORE_OPTIONS.items():
            if isinstance(then, dict) and key not in then and values.get(key) == before:
                del values[key]
    return values
