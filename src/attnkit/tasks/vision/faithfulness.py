"""Visual attention as a faithfulness subject (layer 5): one image of a
:class:`~attnkit.models.visual.VisualAttentionClassifier`, its units the cells of the feature grid (row-major).

A grid cell is erased after the backbone: ``delete`` and ``mask`` leave it out of the attention pooling (a set
pooling: the two are the same thing), ``unk`` sets its features to zero. Gradient methods attribute to the grid's
features; ``attention`` is the pooling's weights, heads averaged.

    model = attnkit.load("runs/digits")
    results = vision_faithfulness(model, images)          # images [N, C, H, W]

Shape glossary:
    N  images or erased variants   C, H, W  image   Hg, Wg  grid   D  grid features   K  classes
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import torch
from torch import nn

from attnkit.explain.faithfulness.erasure import Erasure, as_erasure
from attnkit.explain.faithfulness.evaluate import faithfulness_of
from attnkit.explain.faithfulness.methods import DEFAULT_METHODS
from attnkit.explain.faithfulness.metrics import curve_auc, deletion_insertion_auc
from attnkit.explain.faithfulness.results import DocumentFaithfulness
from attnkit.explain.faithfulness.subject import GradientInputs

__all__ = ["GridSubject", "curve_auc", "deletion_insertion_auc", "faithfulness_command", "vision_faithfulness"]


class GridSubject:
    """One image ``[C, H, W]`` of a visual attention classifier; units: its ``Hg·Wg`` grid cells."""

    def __init__(self, model: nn.Module, image: torch.Tensor, label_names: Sequence[str]) -> None:
        self.model, self.label_names = model.eval(), list(label_names)
        device = next(model.parameters()).device
        with torch.no_grad():
            self.grid = model.backbone(image[None].to(device))  # [1, Hg, Wg, D]
            out = model.attend(self.grid)
        rows, columns = self.grid.shape[1:3]
        self.tokens = [f"r{r}c{c}" for r in range(rows) for c in range(columns)]
        self.probabilities = torch.softmax(out.logits[0].float(), -1).cpu()  # [K]
        self.label = int(self.probabilities.argmax())
        self._weights = out.pooling.weights[0].float().cpu()  # [heads, Hg·Wg]

    def probabilities_when(self, keep: torch.Tensor, erase: Erasure | str) -> torch.Tensor:
        """keep ``[N, Hg·Wg]`` -> probabilities ``[N, K]``: an absent or unattended cell leaves the pooling (a set
        pooling: the two are one), a blanked cell's features are zero."""
        if keep.shape[-1] != len(self.tokens):
            raise ValueError(f"keep: expected [N, {len(self.tokens)}], got {tuple(keep.shape)}")
        cells = torch.arange(len(self.tokens)).expand(keep.shape[0], -1)  # [N, Hg·Wg]
        erased = as_erasure(erase).erase(cells, keep.cpu(), blank=-1)
        pooled = erased.present if erased.attend is None else erased.present & erased.attend
        grid = self.grid.expand(keep.shape[0], -1, -1, -1)  # [N, Hg, Wg, D]
        blank = (erased.values < 0).reshape(grid.shape[:3])[..., None].to(grid.device)  # [N, Hg, Wg, 1]
        grid = grid.masked_fill(blank, 0.0) if bool(blank.any()) else grid
        attend_mask = None if bool(pooled.all()) else pooled.to(grid.device)
        with torch.no_grad():
            out = self.model.attend(grid, attend_mask=attend_mask)
        return torch.softmax(out.logits.float(), -1).cpu()

    def attention_scores(self) -> dict[str, torch.Tensor]:
        """``attention [Hg·Wg]``: the pooling's weights, heads averaged."""
        return {"attention": self._weights.mean(0)}

    def attention_details(self) -> dict[str, list]:
        """``attention_heads [heads][Hg·Wg]`` and ``grid [Hg, Wg]``."""
        return {"attention_heads": self._weights.tolist(), "grid": list(self.grid.shape[1:3])}

    def gradient_inputs(self) -> GradientInputs:
        """The grid features ``[1, Hg, Wg, D]``; the forward pools and classifies a given grid."""

        def forward(grid: torch.Tensor) -> torch.Tensor:  # [n, Hg, Wg, D] -> [n, K]
            return torch.softmax(self.model.attend(grid).logits.float(), -1)

        return GradientInputs(self.grid.detach(), forward, lambda a: a[0].sum(-1).flatten().cpu())


def vision_faithfulness(
    loaded,
    images: torch.Tensor,
    *,
    methods: Sequence[str] = DEFAULT_METHODS,
    erase: str = "delete",
    seed: int = 0,
    steps: int = 32,
) -> list[DocumentFaithfulness]:
    """The faithfulness tests on each image ``[N, C, H, W]`` over its grid cells (``loaded``: what
    ``attnkit.load`` returns for a vision checkpoint, or anything with ``model`` and ``label_names``)."""
    subjects = [GridSubject(loaded.model, image, loaded.label_names) for image in images]
    names = [f"image {i + 1}" for i in range(len(subjects))]
    return faithfulness_of(subjects, texts=names, methods=methods, erase=erase, seed=seed, steps=steps)


def faithfulness_command(args: argparse.Namespace, loaded, images: torch.Tensor, titles: Sequence[str]) -> int:
    """``attnkit faithfulness`` for a vision model: a table or one JSON object per image (the classifiers' keys,
    plus ``deletion_auc`` and ``insertion_auc`` over the cells ``rRcC``)."""
    from attnkit.explain.faithfulness.results import print_results

    subjects = [GridSubject(loaded.model, image, loaded.label_names) for image in images]
    tests = {"methods": args.methods, "erase": args.erase, "seed": args.seed, "steps": args.steps}
    results = faithfulness_of(subjects, texts=list(titles), **tests)
    for subject, result in zip(subjects, results, strict=True):
        for found in result.methods.values():
            deletion, insertion = deletion_insertion_auc(subject, found.scores)
            found.extra |= {"deletion_auc": deletion, "insertion_auc": insertion}
    print_results(results, as_json=args.json, noun="image")
    return 0
