"""Several trained classifiers as one: their class probabilities averaged (layer 5).

    ensemble = ClassifierEnsemble([load_classifier(path) for path in ("runs/r8-0", "runs/r8-1", "runs/r8-2")])
    ensemble.evaluate(texts, label_names)["accuracy"]

Each member reads the texts with its own tokeniser (members may differ in vocabulary and model family); they must
share the classes, in one order. Averaging probabilities (not logits): a member that is unsure weighs less.

Shape glossary:
    N  documents   C  classes   M  members
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from attnkit.data.inputs import as_texts
from attnkit.tasks.classify.inference import Classifier, labelled_texts

__all__ = ["ClassifierEnsemble"]


class ClassifierEnsemble:
    """Classifiers trained on one label set whose probabilities are averaged."""

    def __init__(self, members: Sequence[Classifier]) -> None:
        if not members:
            raise ValueError("an ensemble needs at least one classifier")
        names = list(members[0].label_names)
        for index, member in enumerate(members[1:], start=1):
            if list(member.label_names) != names:
                raise ValueError(
                    f"member {index}'s classes {list(member.label_names)} are not member 0's {names}: "
                    "an ensemble's classifiers must be trained on one label set"
                )
        self.members = list(members)

    @property
    def label_names(self) -> list[str]:
        """The classes, in the order of the outputs."""
        return list(self.members[0].label_names)

    def probabilities(self, texts: Sequence[str], *, batch_size: int = 64) -> torch.Tensor:
        """The mean of the members' class probabilities ``[N, C]`` (float32, CPU, input order)."""
        texts = as_texts(texts)
        stacked = torch.stack([m.probabilities(texts, batch_size=batch_size) for m in self.members])  # [M, N, C]
        return stacked.mean(0)  # [N, C]

    def label_ids(self, labels: Sequence[str]) -> list[int]:
        """The class ids of label names (refusing names that are not the members' classes)."""
        return self.members[0].label_ids(labels)

    def evaluate(self, texts: Sequence[str], labels: Sequence[str], *, batch_size: int = 64) -> dict[str, Any]:
        """What :meth:`Classifier.evaluate` gives, for the averaged probabilities (``loss``: mean negative log of the
        gold class's averaged probability), and ``members`` (how many)."""
        from attnkit.tasks.classify.report import classification_report

        texts, gold = labelled_texts(texts, labels, self.label_ids)
        probabilities = self.probabilities(texts, batch_size=batch_size)  # [N, C]
        report = classification_report(gold, probabilities.argmax(-1).tolist(), self.label_names)
        picked = probabilities[torch.arange(len(gold)), torch.tensor(gold)]  # [N]
        loss = float(-picked.clamp_min(torch.finfo(torch.float32).tiny).log().mean())
        correct = sum(int(g == p) for g, p in zip(gold, probabilities.argmax(-1).tolist(), strict=True))
        scores = {"accuracy": 100 * correct / len(gold), "loss": loss, "count": len(gold)}
        return {**report, **scores, "members": len(self.members)}
