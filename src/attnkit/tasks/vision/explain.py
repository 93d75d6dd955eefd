"""The vision task's explanation: each image with every head's attention map laid over it, one report section per
image, written as one self-contained HTML page (layer 5).

Shape glossary:
    N  images   C  channels   H, W  image size
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from attnkit.explain.html import write_report
from attnkit.explain.sections import visual_section

__all__ = ["DEFAULT_TITLE", "vision_report"]

DEFAULT_TITLE = "What the visual attention model looked at"


def vision_report(
    vision,
    images: torch.Tensor,
    titles: Sequence[str],
    true_labels: Sequence[str | None],
    path: str | Path,
    *,
    title: str | None = None,
) -> Path:
    """Write the report of ``vision`` (a :class:`~attnkit.tasks.vision.inference.VisionModel`) on ``images``
    ``[N, C, H, W]``, one section per image; returns the path written."""
    label_names = vision.label_names
    sections = [
        visual_section(
            prediction.image,
            prediction.attention,
            label_names=label_names,
            probabilities=[prediction.probabilities[name] for name in label_names],
            true_label=gold,
            title=heading,
        )
        for prediction, heading, gold in zip(vision.predict(images), titles, true_labels, strict=True)
    ]
    return write_report(path, sections, title=title or DEFAULT_TITLE)
