"""The faithfulness experiment's digits row (layer 6): deletion and insertion curves over the grid cells of the
shipped vision model (``attnkit models``: ``digits``), per attribution method, on a seeded sample of test images.

Deletion (Petsiuk et al. 2018, over grid cells instead of pixels): the cells leave the attention pooling one at a
time, most important first; the AUC of p(predicted class) over the fraction deleted is low when the method found
what the prediction needs. Insertion: the cells enter an empty grid in the same order; its AUC is high when the top
cells alone suffice. Both read against ``random``.

Shape glossary:
    T  grid cells   N  variants (T + 1 curve points)   K  classes
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["IMAGES", "VISION_METHODS", "measure_images", "run_digits"]

IMAGES = 200  # test images sampled (the digits test split has 359)
VISION_METHODS = ("attention", "gradient_x_input", "integrated_gradients", "leave_one_out", "random")
SHIPPED = "digits"


def measure_images(loaded, images: torch.Tensor, labels: Sequence[int], *, steps: int, seed: int = 0) -> list[dict]:
    """One record per image ``[N, C, H, W]``: whether the prediction is right, each method's deletion and
    insertion AUC."""
    from attnkit.explain.faithfulness.methods import method_scores
    from attnkit.tasks.vision.faithfulness import GridSubject, deletion_insertion_auc

    generator = torch.Generator().manual_seed(seed)
    records = []
    for image, label in zip(images, labels, strict=True):
        subject = GridSubject(loaded.model, image, loaded.label_names)
        found = method_scores(subject, VISION_METHODS, erase="delete", generator=generator, steps=steps)
        record: dict = {"correct": subject.label == int(label), "cells": len(subject.tokens), "methods": {}}
        for name, result in found.items():
            deletion, insertion = deletion_insertion_auc(subject, result.scores)
            record["methods"][name] = {"deletion_auc": deletion, "insertion_auc": insertion}
        records.append(record)
    return records


def run_digits(paths, documents: int, threads: int | None, device: str, *, minutes: float | None = None) -> dict:
    """The digits row: the shipped model on ``min(documents, IMAGES)`` seeded test images (reused when unchanged).
    ``minutes`` is not needed here: every image is measured (a few minutes)."""
    import attnkit
    from attnkit.data.images import load_data_set
    from attnkit.experiments.bootstrap import bootstrap_interval
    from attnkit.experiments.faithfulness.measure import IG_STEPS, reuse_or_measure, sample_documents
    from attnkit.pretrained import read_card

    card = read_card(SHIPPED)
    data = load_data_set(card["data"])
    numbers = sample_documents(len(data.test_images), min(documents, IMAGES))
    settings = {"model": [SHIPPED, card["measured"], card["value"]], "images": numbers, "steps": IG_STEPS}

    def measure() -> list[dict]:
        loaded = attnkit.load(SHIPPED, device=device)
        chosen = torch.as_tensor(numbers, dtype=torch.long)
        return measure_images(loaded, data.test_images[chosen], data.test_labels[chosen].tolist(), steps=IG_STEPS)

    records, minutes = reuse_or_measure(paths.runs / "faithfulness" / "digits" / "records.json", settings, measure)
    methods = {
        name: {
            figure: bootstrap_interval([r["methods"][name][figure] for r in records])
            for figure in ("deletion_auc", "insertion_auc")
        }
        for name in VISION_METHODS
        if all(name in r["methods"] for r in records)
    }
    return {
        "label": f"visual attention (shipped {SHIPPED})",
        "shipped": SHIPPED,
        "test_accuracy": card["value"],
        "documents": len(records),
        "sampled": len(numbers),
        "cells": records[0]["cells"] if records else 0,
        "correct": round(100 * sum(r["correct"] for r in records) / max(len(records), 1), 2),
        "minutes": {"measure": minutes},
        "methods": methods,
    }
