"""A trained visual-attention classifier, ready to use: what ``attnkit.load``, ``evaluate``, ``predict`` and
``explain`` get for a ``vision`` checkpoint (layer 5).

Shape glossary:
    N  images   B  batch   C  channels   H, W  image size   Hg, Wg  attention grid   heads  pooling heads
    K  classes
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from attnkit.checkpointing import (
    CONFIG_FILE,
    CheckpointError,
    load_model_weights,
    read_config_of_kind,
    resolve_checkpoint,
)
from attnkit.models.visual import VisualAttentionClassifier
from attnkit.runtime.devices import autocast, device_of, ready_for_inference, to_host
from attnkit.tasks.vision.config import KIND, VisionConfig, build_vision_model
from attnkit.tasks.vision.objective import evaluate_vision

__all__ = ["ImagePrediction", "VisionModel", "load_vision", "predict_images"]


@dataclass
class ImagePrediction:
    """One image's prediction (``image [C, H, W]`` as the model saw it) and its attention ``[heads, Hg, Wg]``,
    each map summing to 1."""

    image: torch.Tensor
    label: str
    probabilities: dict[str, float]
    attention: torch.Tensor


@torch.no_grad()
def predict_images(
    model: VisualAttentionClassifier,
    images: torch.Tensor,
    label_names: Sequence[str],
    *,
    batch_size: int = 256,
    precision: str = "fp32",
) -> list[ImagePrediction]:
    """Predict ``images [N, C, H, W]`` and collect each one's attention maps (under autocast in ``precision``)."""
    if images.dim() != 4:
        raise ValueError(f"images must have shape [N, C, H, W], got {tuple(images.shape)}")
    model.eval()
    device = device_of(model)
    results: list[ImagePrediction] = []
    for start in range(0, len(images), batch_size):
        chunk = images[start : start + batch_size]
        with autocast(device, precision):
            out = model(chunk.to(device))
            logits, maps = to_host(out.logits), to_host(out.attention_maps())  # [B, K], [B, heads, Hg, Wg]
        probabilities = torch.softmax(logits, dim=-1)  # [B, K]
        for row in range(len(chunk)):
            probs = {name: float(p) for name, p in zip(label_names, probabilities[row], strict=True)}
            label = label_names[int(probabilities[row].argmax())]
            results.append(ImagePrediction(chunk[row], label, probs, maps[row]))
    return results


@dataclass
class VisionModel:
    """A trained visual-attention classifier (in eval mode) and its config, run under autocast in ``precision``."""

    model: VisualAttentionClassifier
    config: VisionConfig
    precision: str = "fp32"

    @property
    def device(self) -> torch.device:
        """Where the model runs."""
        return device_of(self.model)

    @property
    def label_names(self) -> list[str]:
        """The classes, in the order of the model's outputs."""
        return list(self.config.label_names)

    def predict(self, images: torch.Tensor, *, batch_size: int = 256) -> list[ImagePrediction]:
        """Each image's label, probabilities and attention maps (``images [N, C, H, W]``)."""
        return predict_images(
            self.model, images, self.config.label_names, batch_size=batch_size, precision=self.precision
        )

    def evaluate(self, images: torch.Tensor, labels: torch.Tensor, *, batch_size: int = 256) -> dict[str, float]:
        """``accuracy``, mean ``loss`` and ``count`` on ``images [N, C, H, W]`` with class ids ``labels [N]``."""
        return evaluate_vision(self.model, images, labels, batch_size=batch_size, precision=self.precision)


def load_vision(checkpoint: str | Path, *, device: str | torch.device = "auto", precision: str = "fp32") -> VisionModel:
    """Rebuild a trained model (in eval mode) and its config from a checkpoint (a run directory means its ``best/``;
    a shipped model's name means that model), ready on ``device`` to run in ``precision``."""
    checkpoint = resolve_checkpoint(checkpoint)
    values = read_config_of_kind(checkpoint, KIND)
    try:
        config = VisionConfig.from_dict(values)
        model = build_vision_model(config)
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{checkpoint / CONFIG_FILE}: {error}") from error
    load_model_weights(model, checkpoint)
    return VisionModel(ready_for_inference(model, device, precision), config, precision)
