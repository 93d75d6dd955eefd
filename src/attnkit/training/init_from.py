"""``--init-from NAME|PATH``: start a run from trained weights — a shipped model's, a run's ``best/``, any checkpoint
— with a fresh optimiser, so that training accumulates across sittings (layer 5).

The model a run starts from decides what the new run trains: its architecture, vocabulary (tokenisers) and labels
come from the checkpoint's ``config.json``, and each task builds the same model from them; :func:`fit` then loads the
weights before the first step (a resumed run's ``last/`` wins over them). What the new run records
(``metrics.json``: ``details.init_from``) lets the card of a model shipped from it count the minutes of every
continuation: :func:`earlier_minutes`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["InitFrom", "earlier_minutes", "resolve_init_from"]


@dataclass(frozen=True)
class InitFrom:
    """Where a run's first weights come from: what the user gave (a shipped model's name or a path), the checkpoint
    directory it resolves to, its model config (without ``"kind"``) and the training minutes behind those weights."""

    given: str
    checkpoint: Path
    config: dict[str, Any]
    minutes: float

    def record(self) -> dict[str, Any]:
        """What ``metrics.json`` keeps of it (``details.init_from``)."""
        return {"checkpoint": self.given, "resolved": str(self.checkpoint), "training_minutes": round(self.minutes, 2)}


def resolve_init_from(given: str | None, kind: str) -> InitFrom | None:
    """The :class:`InitFrom` of ``--init-from given`` for a task of checkpoint ``kind`` (None when not given);
    ``CheckpointError`` when ``given`` is no checkpoint, run directory or shipped model's name, or of another kind."""
    if given is None:
        return None
    from attnkit.checkpointing import read_config_of_kind, resolve_checkpoint

    checkpoint = resolve_checkpoint(given)
    config = read_config_of_kind(checkpoint, kind)
    return InitFrom(given=given, checkpoint=checkpoint, config=config, minutes=earlier_minutes(checkpoint))


def earlier_minutes(checkpoint: Path) -> float:
    """The training minutes behind ``checkpoint``: a shipped model's card's ``training_minutes``; for a run's
    checkpoint, its ``metrics.json``'s ``train_seconds`` plus those of the model that run started from; else 0."""
    card = checkpoint / "card.json"
    if card.is_file():
        return float(json.loads(card.read_text()).get("training_minutes", 0.0))
    metrics_path = checkpoint.parent / "metrics.json"
    if not metrics_path.is_file():
        return 0.0
    metrics = json.loads(metrics_path.read_text())
    before = (metrics.get("details") or {}).get("init_from") or {}
    return float(metrics.get("train_seconds", 0.0)) / 60 + float(before.get("training_minutes", 0.0))
