"""The vision task's data: a built-in image data set (``digits``), cut to ``--limit`` training images, and test images
picked by index (layer 5).

Shape glossary:
    N  images   C  channels   H, W  image size
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from attnkit.data.images import ImageClassificationData, load_data_set
from attnkit.tasks.vision.config import VisionConfig

__all__ = ["load_data", "load_test_images"]

MIN_TRAINING_IMAGES = 20  # --limit below this leaves too few images to carve a stratified validation split


def load_data(name: str, *, limit: int | None = None) -> ImageClassificationData:
    """The built-in data set ``name``, its training split cut to the first ``limit`` images when given."""
    if limit is not None and limit < MIN_TRAINING_IMAGES:
        raise ValueError(f"--limit must be at least {MIN_TRAINING_IMAGES} images, got {limit}")
    data = load_data_set(name)
    return data if limit is None else data.subset_train(limit)


def load_test_images(config: VisionConfig, indices: Sequence[int]) -> tuple[torch.Tensor, list[str]]:
    """Test images ``[len(indices), C, H, W]`` of the checkpoint's dataset, and their true label names."""
    data = load_data_set(config.dataset)
    count = len(data.test_images)
    bad = [index for index in indices if not 0 <= index < count]
    if bad:
        split = f"the {config.dataset} test split has {count} images (0..{count - 1})"
        raise ValueError(f"test image index {bad[0]} is out of range: {split}")
    chosen = torch.as_tensor(list(indices), dtype=torch.long)
    return data.test_images[chosen], [data.label_names[int(label)] for label in data.test_labels[chosen]]
