"""A small labelled CSV for the classifier's training tests: short texts whose words give their label away."""

from __future__ import annotations

import random
from pathlib import Path


def write_csv(path: Path, rows: int, *, seed: int = 0) -> Path:
    """Write ``rows`` texts with a ``pos`` or ``neg`` label (``text,label`` header) to ``path``, the same for one
    ``seed``; return ``path``."""
    generator = random.Random(seed)
    cues = {"pos": "good great fine", "neg": "bad awful poor"}
    lines = ["text,label"]
    for _ in range(rows):
        label = generator.choice(["pos", "neg"])
        words = generator.choices([*cues[label].split(), "the", "film", "was", "a"], k=generator.randint(2, 12))
        lines.append(f"{' '.join(words)},{label}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
