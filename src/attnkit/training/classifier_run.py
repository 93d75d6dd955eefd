"""Train, load and evaluate a document classifier: what ``attnkit train classify``, ``evaluate``, ``predict``
and ``demo`` run.

The validation split is carved from the training data (stratified, deterministic); the test split is only
ever used for the final evaluation.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from attnkit.data.batching import EncodedDataset
from attnkit.data.classification import TextClassificationData, builtin_names, load_builtin, stratified_split
from attnkit.data.files import load_files
from attnkit.data.tokenization import TextTokenizer
from attnkit.training.checkpoint import load_model_weights, read_config_of_kind
from attnkit.training.classification import (
    ClassificationTask,
    ClassifierConfig,
    TextEncoder,
    build_classifier,
    make_batches,
)
from attnkit.training.loop import FitConfig, FitResult, fit

__all__ = ["TrainReport", "evaluate_classifier", "load_classifier", "load_data", "train_classifier"]


def load_data(
    data: str, *, test_path: str | None = None, text_column: str = "text", label_column: str = "label"
) -> TextClassificationData:
    """A built-in dataset name, or a CSV/TSV/JSONL training file (with an optional test file)."""
    if data in builtin_names():
        if test_path is not None:
            raise ValueError(f"--test is for user files; the built-in dataset {data!r} has its own test split")
        return load_builtin(data)
    if not Path(data).exists():
        raise FileNotFoundError(f"{data}: neither a built-in dataset ({', '.join(builtin_names())}) nor a file")
    return load_files(data, test_path, text_column=text_column, label_column=label_column)


def _replica() -> tuple[int, int]:
    """``(rank, world_size)`` from torchrun's environment (``(0, 1)`` outside it)."""
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


@dataclass
class TrainReport:
    """What a training run produced: the fit history, test metrics (if a test split exists), timings."""

    fit: FitResult
    test_metrics: dict[str, float] | None
    train_seconds: float
    checkpoint: Path
    num_parameters: int


def train_classifier(
    data: TextClassificationData,
    config: ClassifierConfig,
    fit_config: FitConfig,
    *,
    out_dir: str | Path,
    batch_size: int = 32,
    valid_fraction: float = 0.1,
    resume: bool = False,
    bucketed: bool = True,
) -> TrainReport:
    """Train ``config``'s model on ``data``'s training split; keep the best checkpoint by validation accuracy.

    Writes ``out_dir/best`` and ``out_dir/last`` (safetensors + ``config.json`` + ``tokenizer.json``) and
    ``out_dir/metrics.json``. Returns the :class:`TrainReport`.
    """
    out_dir = Path(out_dir)
    rank, world = _replica()
    config.label_names = list(data.label_names)
    config.punctuated = data.punctuated
    train_idx, valid_idx = stratified_split(
        data.train_texts, data.train_labels, test_fraction=valid_fraction, seed=fit_config.seed
    )
    train_texts = [data.train_texts[i] for i in train_idx]
    tokenizer_dir = out_dir / "tokenizer"
    if resume and (tokenizer_dir / TextTokenizer.FILENAME).exists():
        tokenizer = TextTokenizer.load(tokenizer_dir)
    else:
        tokenizer = TextTokenizer.train(
            train_texts, kind=config.tokenizer, vocab_size=config.vocab_size, min_frequency=config.min_frequency
        )
        if rank == 0:
            tokenizer.save(tokenizer_dir)
    encoder = TextEncoder(config, tokenizer)

    def dataset(texts: list[str], labels: list[int]) -> EncodedDataset:
        return EncodedDataset(encoder.encode(texts), labels)

    train_set = dataset(train_texts, [data.train_labels[i] for i in train_idx])
    # validation: each DDP rank scores its own disjoint shard; fit sums the counts across ranks
    shard = valid_idx[rank::world]
    valid_set = dataset([data.train_texts[i] for i in shard], [data.train_labels[i] for i in shard])
    collate = encoder.collate()
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
    valid_batches = make_batches(valid_set, collate, 2 * batch_size, shuffle=False)

    torch.manual_seed(fit_config.seed)
    model = build_classifier(config, tokenizer.vocab_size)
    task = ClassificationTask(model)
    result = fit(
        task,
        train_batches,
        lambda: valid_batches(0),
        fit_config,
        checkpoint_dir=out_dir,
        resume=resume,
        model_config={"kind": "classifier", **config.to_dict()},
        extra_files={TextTokenizer.FILENAME: tokenizer_dir / TextTokenizer.FILENAME},
    )
    train_seconds = result.wall_time  # the whole run's training time, resumed parts included

    test_metrics = None
    if data.test_texts:  # fit has left the best epoch's weights in the model
        test_metrics = evaluate_classifier(model, encoder, data.test_texts, data.test_labels, batch_size=2 * batch_size)
    report = TrainReport(
        fit=result,
        test_metrics=test_metrics,
        train_seconds=train_seconds,
        checkpoint=out_dir / "best",
        num_parameters=sum(p.numel() for p in model.parameters()),
    )
    if rank == 0:
        summary = {
            "data": data.name,
            "config": config.to_dict(),
            "seed": fit_config.seed,
            "best_epoch": result.best_epoch,
            "best_valid": result.best_metrics,
            "test": test_metrics,
            "train_seconds": round(train_seconds, 1),
            "wall_time": round(result.wall_time, 1),  # the whole run's training time, resumed parts included
            "stop_reason": result.stop_reason,
            "num_parameters": report.num_parameters,
        }
        (out_dir / "metrics.json").write_text(json.dumps(summary, indent=2) + "\n")
    return report


def load_classifier(checkpoint: str | Path) -> tuple[nn.Module, TextEncoder]:
    """Rebuild a trained classifier and its text encoder from a checkpoint directory (``.../best``)."""
    values = read_config_of_kind(checkpoint, "classifier")
    config = ClassifierConfig.from_dict(values)
    tokenizer = TextTokenizer.load(checkpoint)
    model = build_classifier(config, tokenizer.vocab_size)
    load_model_weights(model, checkpoint)
    model.eval()
    return model, TextEncoder(config, tokenizer)


def evaluate_classifier(
    model: nn.Module, encoder: TextEncoder, texts: list[str], labels: list[int], *, batch_size: int = 64
) -> dict[str, float]:
    """Accuracy and loss of ``model`` on ``texts``/``labels`` (length-bucketed batches, no shuffling)."""
    if not texts:
        raise ValueError("nothing to evaluate: the test split is empty")
    dataset = EncodedDataset(encoder.encode(texts), labels)
    batches = make_batches(dataset, encoder.collate(), batch_size, shuffle=False)
    metrics = ClassificationTask(model).evaluate(batches(0))
    return {"accuracy": metrics["accuracy"], "loss": metrics["loss"], "count": metrics["count"]}
