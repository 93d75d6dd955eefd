"""Train a document classifier: what ``attnkit train classify`` and ``attnkit demo`` run (layer 5).

    data = load_data("fine-foods")
    report = train_classifier(data, ClassifierConfig(model="han"), FitConfig(epochs=5), out_dir="runs/ff")

One trainer over rows in memory (:class:`InMemoryRows`: validation carved from the training split, stratified and
deterministic) or streamed (:class:`~attnkit.tasks.classify.streamed_rows.StreamedRows`). The test split is only
ever used for the final evaluation.

Shape glossary:
    B  documents   C  classes   S  sentences   W  words of a sentence   T  tokens
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

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
from attnkit.training.loop import FitConfig, fit
from attnkit.training.precision import place_model
from attnkit.training.run_report import TrainReport, count_parameters, replica, write_metrics

__all__ = ["TOKENIZER_DIR", "ClassifierRows", "InMemoryRows", "train_classifier", "validation_split"]

TOKENIZER_DIR = "tokenizer"


class ClassifierRows(Protocol):
    """Labelled rows :func:`train_classifier` trains on; its methods are called in the order given."""

    name: str
    texts: list[str]  # what self-trained vectors learn from

    def open(self, config: ClassifierConfig) -> tuple[list[str], bool]:
        """``(label_names, punctuated)`` of the rows, read as ``config``'s tokeniser options need."""

    def tokenizer(self, config: ClassifierConfig) -> TextTokenizer:
        """A new tokeniser of the training rows."""

    def describe(self) -> None:
        """Say what was read (rank 0)."""

    def batches(
        self, encoder: TextEncoder, *, batch_size: int, bucketed: bool, seed: int
    ) -> tuple[Callable, Callable | None]:
        """``(train, valid)``: ``epoch -> batches`` of this rank's training rows and of its validation shard
        (``[B, S, W]`` or ``[B, T]`` ids, ``[B]`` labels); valid None: no validation."""

    def test_metrics(
        self, model: nn.Module, encoder: TextEncoder, *, batch_size: int, precision: str
    ) -> dict[str, float] | None:
        """Accuracy, loss and count of ``model`` on the test rows (None: there are none)."""

    def details(self, *, bucketed: bool) -> dict:
        """What ``metrics.json``'s details say of the rows."""


def train_classifier(
    data: TextClassificationData | ClassifierRows,
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
    """Train ``config``'s model on ``data``'s training rows; keep the best checkpoint by validation accuracy.

    ``data`` is a loaded data set (read as :class:`InMemoryRows`) or any :class:`ClassifierRows`; ``config``'s
    ``label_names`` and ``punctuated`` are taken from the rows. ``init_from`` starts from a checkpoint's weights and
    tokeniser (the rows must have its labels, in its order).
    """
    if isinstance(data, TextClassificationData):
        seed = fit_config.seed if valid_seed is None else valid_seed
        data = InMemoryRows(data, valid_fraction=valid_fraction, seed=seed, load_seconds=load_seconds)
    out_dir = Path(out_dir)
    label_names, punctuated = data.open(config)
    if init_from is not None and list(config.label_names) != list(label_names):
        raise ValueError(
            f"--init-from {init_from.given}: its labels {config.label_names} are not {data.name}'s {label_names}"
        )
    build = functools.partial(data.tokenizer, config)
    tokenizer = run_tokenizer(out_dir / TOKENIZER_DIR, resume=resume, init_from=init_from, build=build)
    data.describe()
    config = dataclasses.replace(config, label_names=list(label_names), punctuated=punctuated)
    encoder = TextEncoder(config, tokenizer)
    train_batches, valid_batches = data.batches(encoder, batch_size=batch_size, bucketed=bucketed, seed=fit_config.seed)
    model, config = prepared_model(
        config, tokenizer, device, fit_config, out_dir=out_dir, resume=resume, init_from=init_from, texts=data.texts
    )
    result = fit_classifier(
        model, config, train_batches, valid_batches, fit_config, out_dir=out_dir, resume=resume, init_from=init_from
    )
    test_metrics = data.test_metrics(model, encoder, batch_size=2 * batch_size, precision=fit_config.precision)
    details = data.details(bucketed=bucketed) | ({} if init_from is None else {"init_from": init_from.record()})
    report = TrainReport(result, test_metrics, out_dir / "best", count_parameters(model), config, details)
    write_metrics(out_dir, report, task=KIND, data=data.name, fit_config=fit_config, batch_size=batch_size)
    return report


@dataclasses.dataclass
class InMemoryRows:
    """A loaded data set's rows for :func:`train_classifier`: ``valid_fraction`` of its training split carved for
    validation (0: none, the last epoch is kept), its test split scored after training."""

    data: TextClassificationData
    valid_fraction: float = 0.1
    seed: int = 0
    load_seconds: float | None = None

    @property
    def name(self) -> str:
        return self.data.name

    @functools.cached_property
    def split(self) -> tuple[list[int], list[int]]:
        """``(train, valid)`` indices into the training split."""
        return validation_split(self.data, self.valid_fraction, self.seed)

    @functools.cached_property
    def texts(self) -> list[str]:
        return [self.data.train_texts[i] for i in self.split[0]]

    def open(self, config: ClassifierConfig) -> tuple[list[str], bool]:
        return self.data.label_names, self.data.punctuated

    def tokenizer(self, config: ClassifierConfig) -> TextTokenizer:
        kind, size, frequency = config.tokenizer, config.vocab_size, config.min_frequency
        return TextTokenizer.train(self.texts, kind=kind, vocab_size=size, min_frequency=frequency)

    def describe(self) -> None:
        """Nothing: the command has said what it read."""

    def batches(
        self, encoder: TextEncoder, *, batch_size: int, bucketed: bool, seed: int
    ) -> tuple[Callable, Callable | None]:
        rank, world = replica()
        train_idx, valid_idx = self.split
        train_set = EncodedDataset(encoder.encode(self.texts), [self.data.train_labels[i] for i in train_idx])
        shard = valid_idx[rank::world]  # each DDP rank scores its own disjoint shard; fit sums the counts
        texts = [self.data.train_texts[i] for i in shard]
        valid_set = EncodedDataset(encoder.encode(texts), [self.data.train_labels[i] for i in shard])
        collate = encoder.collate()
        train = make_batches(train_set, collate, batch_size, shuffle=True, bucketed=bucketed, seed=seed,
                             num_replicas=world, rank=rank)  # fmt: skip
        return train, make_batches(valid_set, collate, 2 * batch_size, shuffle=False) if valid_idx else None

    def test_metrics(
        self, model: nn.Module, encoder: TextEncoder, *, batch_size: int, precision: str
    ) -> dict[str, float] | None:
        if not self.data.test_texts:  # fit has left the best epoch's weights in the model
            return None
        return evaluate_encoded(model, encoder, self.data.test_texts, self.data.test_labels, batch_size=batch_size,
                                precision=precision)  # fmt: skip

    def details(self, *, bucketed: bool) -> dict:
        train_idx, valid_idx = self.split
        details = {"train_documents": len(train_idx), "valid_documents": len(valid_idx), "valid_seed": self.seed,
                   "bucketed": bucketed}  # fmt: skip
        if self.load_seconds is not None:
            details["load_seconds"] = round(self.load_seconds, 2)
        return details


def run_tokenizer(
    directory: Path, *, resume: bool, init_from: InitFrom | None, build: Callable[[], TextTokenizer]
) -> TextTokenizer:
    """The run's tokeniser: its own copy in ``directory`` when resuming; else ``init_from``'s; else ``build()`` (a
    new one is saved in ``directory``)."""
    if resume and (directory / TextTokenizer.FILENAME).exists():
        return TextTokenizer.load(directory)
    tokenizer = build() if init_from is None else TextTokenizer.load(init_from.checkpoint)
    if replica()[0] == 0:
        tokenizer.save(directory)
    return tokenizer


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
    """The model a run trains and the config its checkpoints store, with the pre-trained vectors
    ``config.embeddings`` names copied in unless the run resumes (the config keeps the vectors' settings its first
    start recorded) or starts from ``init_from``."""
    torch.manual_seed(fit_config.seed)
    model = build_classifier(config, tokenizer.vocab_size)
    if config.attend == "content":
        from attnkit.tasks.classify.attended_words import content_word_table

        model.attendable.copy_(content_word_table(tokenizer))
    place_model(model, device)
    if config.embeddings == "random":
        return model, config
    if resume and (out_dir / "last").exists():
        return model, resumed_embeddings(config, out_dir / "last")
    if init_from is None:
        config = initialise_embeddings(model, config, tokenizer, texts, seed=fit_config.seed)
    return model, config


def validation_split(data: TextClassificationData, valid_fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """``(train, valid)`` indices into ``data``'s training split: ``valid_fraction`` of each label carved for
    validation with ``seed`` (0: none)."""
    if valid_fraction == 0:
        return list(range(len(data.train_texts))), []
    return stratified_split(data.train_texts, data.train_labels, test_fraction=valid_fraction, seed=seed)


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
    """:func:`~attnkit.training.loop.fit` on a classifier, with checkpoints holding ``config`` and the tokeniser."""
    tokenizer_file = out_dir / TOKENIZER_DIR / TextTokenizer.FILENAME
    objective = classification_objective(
        model, label_smoothing=config.label_smoothing, encoder_diversity=config.encoder_diversity
    )
    return fit(
        objective,
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
    existed keeps writing its config without them, so that resuming compares equal configs."""
    values = {"kind": KIND, **config.to_dict()}
    saved = Path(out_dir) / "last" / "config.json"
    if resume and saved.is_file():
        then = json.loads(saved.read_text(encoding="utf-8"))
        for key, before in RECIPE_BEFORE_OPTIONS.items():
            if isinstance(then, dict) and key not in then and values.get(key) == before:
                del values[key]
    return values
