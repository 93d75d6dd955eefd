"""Train a visual-attention classifier: what ``attnkit train vision`` runs (layer 5).

The validation split is carved from the training images (stratified, seeded by the run's seed); the fixed test
split is used only for the final evaluation and for explaining test images.

Shape glossary:
    N  images   B  batch   C  channels   H, W  image size   K  classes
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import torch

from attnkit.data.classification import stratified_split
from attnkit.data.images import ImageClassificationData, image_batches, image_keys
from attnkit.tasks.vision.config import KIND, VisionConfig, build_vision_model
from attnkit.tasks.vision.objective import evaluate_vision, vision_objective
from attnkit.training.init_from import InitFrom
from attnkit.training.loop import FitConfig, fit
from attnkit.training.precision import place_model
from attnkit.training.run_report import TrainReport, count_parameters, replica, write_metrics

__all__ = ["train_vision"]


def train_vision(
    data: ImageClassificationData,
    config: VisionConfig,
    fit_config: FitConfig,
    *,
    out_dir: str | Path,
    batch_size: int = 64,
    valid_fraction: float = 0.1,
    max_shift: int = 1,
    resume: bool = False,
    device: str | torch.device = "auto",
    init_from: InitFrom | None = None,
) -> TrainReport:
    """Train ``config``'s model on ``data``'s training images; keep the best epoch by ``fit_config``'s selection
    metric on the validation split.

    ``max_shift`` augments training images by random translations of up to that many pixels. Under ``torchrun``
    batch-norm statistics are those of each rank's batches, and rank 0's running statistics are saved.
    """
    out_dir = Path(out_dir)
    config = _data_config(config, data, init_from)
    train_batches, valid_batches, counts = _batches(data, batch_size, valid_fraction, max_shift, fit_config.seed)

    torch.manual_seed(fit_config.seed)
    model = build_vision_model(config)
    place_model(model, device)
    result = fit(
        vision_objective(model),
        train_batches,
        lambda: valid_batches(0),
        fit_config,
        checkpoint_dir=out_dir,
        resume=resume,
        model_config={"kind": KIND, **config.to_dict()},
        init_from=None if init_from is None else init_from.checkpoint,
    )
    # fit has left the best epoch's weights in the model
    evaluation = {"batch_size": 4 * batch_size, "precision": fit_config.precision}
    test_metrics = evaluate_vision(model, data.test_images, data.test_labels, **evaluation)
    details = {"max_shift": max_shift, **counts}
    if init_from is not None:
        details["init_from"] = init_from.record()
    report = TrainReport(result, test_metrics, out_dir / "best", count_parameters(model), config, details)
    write_metrics(out_dir, report, task=KIND, data=data.name, fit_config=fit_config, batch_size=batch_size)
    return report


def _data_config(config: VisionConfig, data: ImageClassificationData, init_from: InitFrom | None) -> VisionConfig:
    """``config`` with ``data``'s name, labels and image shape; refuses an ``init_from`` checkpoint whose labels or
    image shape are not ``data``'s."""
    if init_from is not None and (
        list(config.label_names) != list(data.label_names) or list(config.image_shape) != list(data.image_shape)
    ):
        raise ValueError(f"--init-from {init_from.given}: its labels or image shape are not {data.name}'s")
    return dataclasses.replace(
        config, dataset=data.name, label_names=list(data.label_names), image_shape=list(data.image_shape)
    )


def _batches(
    data: ImageClassificationData, batch_size: int, valid_fraction: float, max_shift: int, seed: int
) -> tuple[Callable, Callable, dict[str, int]]:
    """This rank's training batches (shuffled, shifted by up to ``max_shift`` pixels) and validation batches, carved
    from the training images by a stratified split seeded by ``seed``; with the two splits' sizes."""
    rank, world = replica()
    labels = data.train_labels.tolist()
    train_idx, valid_idx = stratified_split(image_keys(len(labels)), labels, test_fraction=valid_fraction, seed=seed)
    train_images, train_labels = data.train_images[train_idx], data.train_labels[train_idx]
    shard = valid_idx[rank::world]
    shards = {"num_replicas": world, "rank": rank}
    train_batches = image_batches(
        train_images, train_labels, batch_size, shuffle=True, seed=seed, max_shift=max_shift, **shards
    )
    valid_batches = image_batches(data.train_images[shard], data.train_labels[shard], 4 * batch_size, shuffle=False)
    return train_batches, valid_batches, {"train_images": len(train_idx), "valid_images": len(valid_idx)}
