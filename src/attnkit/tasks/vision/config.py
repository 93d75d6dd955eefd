"""The visual-attention classifier's config (the checkpoint's ``config.json``) and the model it builds (layer 5)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import ClassVar

from attnkit.checkpointing.config_io import JsonConfig
from attnkit.models.visual import VisualAttentionClassifier, visual_attention_classifier

__all__ = ["KIND", "VisionConfig", "build_vision_model", "config_from_args"]

KIND = "vision"


@dataclass
class VisionConfig(JsonConfig):
    """Everything needed to rebuild a trained visual-attention classifier (the checkpoint's ``config.json``);
    ``dataset`` is the built-in data set ``attnkit explain --index`` reads test images from."""

    kind_name: ClassVar[str] = "vision config"

    dataset: str = "digits"
    label_names: list[str] = field(default_factory=list)
    image_shape: list[int] = field(default_factory=lambda: [1, 8, 8])
    channels: list[int] = field(default_factory=lambda: [32, 64, 64, 64])
    downsample: list[int] = field(default_factory=list)
    heads: int = 4
    hidden: int | None = None
    positions: str = "sinusoidal-2d"
    dropout: float = 0.1


def build_vision_model(config: VisionConfig) -> VisualAttentionClassifier:
    """The model ``config`` describes, freshly initialised."""
    options = {name: getattr(config, name) for name in ("channels", "downsample", "heads", "hidden", "positions")}
    return visual_attention_classifier(
        len(config.label_names), in_channels=config.image_shape[0], dropout=config.dropout, **options
    )


def config_from_args(args: argparse.Namespace) -> VisionConfig:
    """The config ``attnkit train vision``'s options describe (its data set, labels and image shape are filled in
    by training, from the data)."""
    return VisionConfig(
        **{name: getattr(args, name) for name in ("channels", "downsample", "heads", "positions", "dropout")}
    )
