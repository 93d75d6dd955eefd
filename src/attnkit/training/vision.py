"""Image classification with visual attention end to end: what ``attnkit train vision`` and ``attnkit explain``
run for vision checkpoints.

One :class:`VisionConfig` (saved, with ``"kind": "vision"``, as the checkpoint's ``config.json``) rebuilds the
model; :class:`VisionTask` plugs it into :func:`attnkit.training.loop.fit`. The validation split is carved from
the training images (stratified, seeded by the run's seed); the fixed test split is used only for the final
evaluation and for explaining test images.

Shape glossary:
    N  images   B  batch   C  channels   H, W  image size   Hg, Wg  attention grid   heads  pooling heads
    K  classes
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from attnkit.data.images import (
    ImageBatch,
    ImageClassificationData,
    image_batches,
    load_image_dataset,
    stratified_indices,
)
from attnkit.models.visual import VisualAttentionClassifier, visual_attention_classifier
from attnkit.training.checkpoint import CheckpointError, load_model_weights, read_config_of_kind
from attnkit.training.loop import FitConfig, FitResult, fit

__all__ = [
    "ImagePrediction",
    "VisionConfig",
    "VisionTask",
    "VisionTrainReport",
    "build_vision_model",
    "evaluate_vision",
    "load_test_images",
    "load_vision",
    "predict_images",
    "train_vision",
]

KIND = "vision"


@dataclass
class VisionConfig:
    """Everything needed to rebuild a trained visual-attention classifier (the checkpoint's ``config.json``).

    Attributes:
        dataset: the built-in dataset it was trained on (``attnkit explain --index`` reads its test split).
        label_names: the class names.
        image_shape: ``[C, H, W]`` of the input images.
        channels, downsample, heads, hidden, positions, dropout: see
            :func:`attnkit.models.visual.visual_attention_classifier`.
    """

    dataset: str = "digits"
    label_names: list[str] = field(default_factory=list)
    image_shape: list[int] = field(default_factory=lambda: [1, 8, 8])
    channels: list[int] = field(default_factory=lambda: [32, 64, 64, 64])
    downsample: list[int] = field(default_factory=list)
    heads: int = 4
    hidden: int | None = None
    positions: str = "sinusoidal-2d"
    dropout: float = 0.1

    def to_dict(self) -> dict:
        """JSON-ready dict."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: Mapping) -> VisionConfig:
        """Rebuild from :meth:`to_dict`, refusing unknown keys."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown vision config keys: {', '.join(unknown)}")
        return cls(**values)


def build_vision_model(config: VisionConfig) -> VisualAttentionClassifier:
    """The model ``config`` describes, freshly initialised."""
    return visual_attention_classifier(
        len(config.label_names),
        in_channels=config.image_shape[0],
        channels=config.channels,
        downsample=config.downsample,
        heads=config.heads,
        hidden=config.hidden,
        positions=config.positions,
        dropout=config.dropout,
    )


class VisionTask:
    """Cross-entropy training and accuracy evaluation of a visual-attention classifier (a ``Task`` for ``fit``)."""

    def __init__(self, model: VisualAttentionClassifier) -> None:
        self.model = model

    def loss(self, batch: ImageBatch) -> torch.Tensor:
        """Mean cross-entropy of the batch."""
        return F.cross_entropy(self.model(batch.images).logits, batch.labels)

    @torch.no_grad()
    def evaluate_sums(self, batches: Iterable[ImageBatch]) -> dict[str, float]:
        """Additive statistics: ``correct``, ``count``, ``loss_sum`` (summed across DDP ranks by ``fit``)."""
        was_training = self.model.training
        self.model.eval()
        correct = count = 0
        loss_sum = 0.0
        for batch in batches:
            logits = self.model(batch.images).logits  # [B, K]
            loss_sum += float(F.cross_entropy(logits, batch.labels, reduction="sum"))
            correct += int((logits.argmax(-1) == batch.labels).sum())
            count += len(batch.labels)
        self.model.train(was_training)
        return {"correct": float(correct), "count": float(count), "loss_sum": loss_sum}

    @staticmethod
    def metrics_from_sums(sums: Mapping[str, float]) -> dict[str, float]:
        """``accuracy``, mean ``loss`` and ``count`` from :meth:`evaluate_sums`' totals."""
        count = max(sums["count"], 1.0)
        return {"accuracy": sums["correct"] / count, "loss": sums["loss_sum"] / count, "count": sums["count"]}

    def evaluate(self, batches: Iterable[ImageBatch]) -> dict[str, float]:
        """``accuracy``, mean ``loss`` and ``count`` over the batches."""
        return self.metrics_from_sums(self.evaluate_sums(batches))


@dataclass
class VisionTrainReport:
    """What a training run produced: the fit history, test metrics, timings, the checkpoint written."""

    fit: FitResult
    test_metrics: dict[str, float]
    train_seconds: float
    checkpoint: Path
    num_parameters: int


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
) -> VisionTrainReport:
    """Train ``config``'s model on ``data``'s training images; keep the best epoch by ``fit_config``'s selection
    metric on the validation split (``"accuracy"`` or ``"loss"``).

    ``max_shift`` augments training images by random translations of up to that many pixels. Writes
    ``out_dir/best`` and ``out_dir/last`` (safetensors + ``config.json``) and ``out_dir/metrics.json``. Runs
    under ``torchrun`` too: each rank trains and validates on its own shard (batch-norm statistics are those of
    each rank's batches, and rank 0's running statistics are saved).
    """
    out_dir = Path(out_dir)
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    config.dataset = data.name
    config.label_names = list(data.label_names)
    config.image_shape = list(data.image_shape)
    train_idx, valid_idx = stratified_indices(data.train_labels.tolist(), valid_fraction, seed=fit_config.seed)
    train_images, train_labels = data.train_images[train_idx], data.train_labels[train_idx]
    shard = valid_idx[rank::world]
    train_batches = image_batches(
        train_images,
        train_labels,
        batch_size,
        shuffle=True,
        seed=fit_config.seed,
        max_shift=max_shift,
        num_replicas=world,
        rank=rank,
    )
    valid_batches = image_batches(data.train_images[shard], data.train_labels[shard], 4 * batch_size, shuffle=False)

    torch.manual_seed(fit_config.seed)
    model = build_vision_model(config)
    result = fit(
        VisionTask(model),
        train_batches,
        lambda: valid_batches(0),
        fit_config,
        checkpoint_dir=out_dir,
        resume=resume,
        model_config={"kind": KIND, **config.to_dict()},
    )
    train_seconds = result.wall_time  # the whole run's training time, resumed parts included
    load_model_weights(model, out_dir / "best")
    test_metrics = evaluate_vision(model, data.test_images, data.test_labels, batch_size=4 * batch_size)
    report = VisionTrainReport(
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
            "batch_size": batch_size,
            "max_shift": max_shift,
            "train_images": len(train_idx),
            "valid_images": len(valid_idx),
            "best_epoch": result.best_epoch,
            "best_valid": result.best_metrics,
            "test": test_metrics,
            "train_seconds": round(train_seconds, 1),
            "num_parameters": report.num_parameters,
        }
        (out_dir / "metrics.json").write_text(json.dumps(summary, indent=2) + "\n")
    return report


def load_vision(checkpoint: str | Path) -> tuple[VisualAttentionClassifier, VisionConfig]:
    """Rebuild a trained model (in eval mode) and its config from a checkpoint directory (``.../best``).

    Raises:
        CheckpointError: not an attnkit checkpoint, not a vision one, or weights that do not fit.
    """
    values = read_config_of_kind(checkpoint, KIND)
    try:
        config = VisionConfig.from_dict(values)
        model = build_vision_model(config)
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{checkpoint}/config.json: {error}") from error
    load_model_weights(model, checkpoint)
    model.eval()
    return model, config


def evaluate_vision(
    model: VisualAttentionClassifier, images: torch.Tensor, labels: torch.Tensor, *, batch_size: int = 256
) -> dict[str, float]:
    """``accuracy``, mean ``loss`` and ``count`` of ``model`` on ``images [N, C, H, W]``, ``labels [N]``."""
    if len(images) == 0:
        raise ValueError("nothing to evaluate: no images")
    return VisionTask(model).evaluate(image_batches(images, labels, batch_size, shuffle=False)(0))


def load_test_images(config: VisionConfig, indices: Sequence[int]) -> tuple[torch.Tensor, list[str]]:
    """Test images ``[len(indices), C, H, W]`` of the checkpoint's dataset, and their true label names."""
    data = load_image_dataset(config.dataset)
    count = len(data.test_images)
    bad = [index for index in indices if not 0 <= index < count]
    if bad:
        raise ValueError(
            f"test image index {bad[0]} is out of range: "
            f"the {config.dataset} test split has {count} images (0..{count - 1})"
        )
    chosen = torch.as_tensor(list(indices), dtype=torch.long)
    return data.test_images[chosen], [data.label_names[int(label)] for label in data.test_labels[chosen]]


@dataclass
class ImagePrediction:
    """One image's prediction and what the model attended to.

    Attributes:
        image: ``[C, H, W]`` as the model saw it.
        label: the predicted class name.
        probabilities: ``{class name: probability}``.
        attention: ``[heads, Hg, Wg]``, each map summing to 1.
    """

    image: torch.Tensor
    label: str
    probabilities: dict[str, float]
    attention: torch.Tensor


@torch.no_grad()
def predict_images(
    model: VisualAttentionClassifier, images: torch.Tensor, label_names: Sequence[str], *, batch_size: int = 256
) -> list[ImagePrediction]:
    """Predict ``images [N, C, H, W]`` and collect each one's attention maps."""
    if images.dim() != 4:
        raise ValueError(f"images must have shape [N, C, H, W], got {tuple(images.shape)}")
    model.eval()
    results: list[ImagePrediction] = []
    for start in range(0, len(images), batch_size):
        chunk = images[start : start + batch_size]
        out = model(chunk)
        probabilities = torch.softmax(out.logits.float(), dim=-1)  # [B, K]
        maps = out.attention_maps()  # [B, heads, Hg, Wg]
        for row in range(len(chunk)):
            probs = {name: float(p) for name, p in zip(label_names, probabilities[row], strict=True)}
            label = label_names[int(probabilities[row].argmax())]
            results.append(ImagePrediction(chunk[row], label, probs, maps[row]))
    return results
