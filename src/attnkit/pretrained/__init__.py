"""Shipped models: trained checkpoints inside the package, loaded by name (layer 5; no torch at import).

Each shipped model is a folder of this package, ``attnkit/pretrained/NAME/``, holding a checkpoint exactly as a
run's ``best/`` holds it (``model.safetensors``, ``config.json``, tokenizer files; the weights may be stored in
float16) and two cards written by the maintainer's ``python -m scripts.ship_model`` (outside the package):

    card.json        the machine-readable card (:data:`CARD_KEYS`): name, kind, data (as ``--data`` takes it),
                     metric (as ``attnkit evaluate --json`` names it) and its value on the test split, the date it
                     was measured, size_bytes, training_minutes (all continuations added up) and the command that
                     trained it; a classifier's card also holds ``faithfulness``: attention against integrated
                     gradients and a random floor on a fixed sample of test documents, and the uniform-attention
                     gap (:mod:`attnkit.experiments.faithfulness.card`)
    MODEL_CARD.md    the same for people: task, data and split, the command, the figures (and a classifier's
                     faithfulness), known limits

A name is resolved wherever a checkpoint path is (``attnkit.load("NAME")``, ``--checkpoint NAME``) by
:func:`attnkit.checkpointing.resolve_checkpoint`, through one function, :func:`find_shipped`: an existing
path always wins, so a name only means a shipped model when nothing of that name is in the working directory.
``attnkit models`` lists them. This package is a leaf: it imports nothing of attnkit, and no torch.

Caps (tested): :data:`MAX_MODEL_BYTES` per model folder, :data:`MAX_TOTAL_BYTES` for all of them together.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = [
    "CARD_FILE",
    "CARD_KEYS",
    "MAX_MODEL_BYTES",
    "MAX_TOTAL_BYTES",
    "MODEL_CARD_FILE",
    "SHELF",
    "find_shipped",
    "folder_bytes",
    "read_card",
    "shipped_cards",
    "shipped_names",
    "shipped_path",
]

SHELF = Path(__file__).resolve().parent  # where the shipped model folders live
CARD_FILE = "card.json"
MODEL_CARD_FILE = "MODEL_CARD.md"
MAX_MODEL_BYTES = 12 * 2**20  # 12 MiB per shipped model (its whole folder)
MAX_TOTAL_BYTES = 48 * 2**20  # 48 MiB for every shipped model together
# the keys every card.json holds (``attnkit models --json`` prints these and any others the card has)
CARD_KEYS = (
    "name",
    "kind",
    "data",
    "metric",
    "value",
    "split",
    "measured",
    "size_bytes",
    "training_minutes",
    "command",
    "evaluate",
)


def shipped_names(shelf: Path | None = None) -> list[str]:
    """The names of the shipped models (folders of ``shelf`` holding a card), sorted."""
    shelf = SHELF if shelf is None else shelf
    if not shelf.is_dir():
        return []
    return sorted(path.name for path in shelf.iterdir() if (path / CARD_FILE).is_file())


def shipped_path(name: str, shelf: Path | None = None) -> Path | None:
    """The folder of the shipped model ``name``, or None when no model of that name is shipped."""
    shelf = SHELF if shelf is None else shelf
    if not name or "/" in name or "\\" in name or name.startswith("."):
        return None
    folder = shelf / name
    return folder if (folder / CARD_FILE).is_file() else None


def find_shipped(name: str, shelf: Path | None = None) -> Path:
    """The folder of the shipped model ``name`` (the one function the checkpoint reader calls).

    Raises:
        LookupError: no model of that name is shipped; the message lists the names.
    """
    folder = shipped_path(name, shelf)
    if folder is None:
        raise LookupError(f"not a shipped model's name ({describe_names(shelf)})")
    return folder


def read_card(name: str, shelf: Path | None = None) -> dict[str, Any]:
    """The card (``card.json``) of the shipped model ``name``.

    Raises:
        ValueError: no model of that name is shipped (the message lists the names), or its card is malformed.
    """
    folder = shipped_path(name, shelf)
    if folder is None:
        raise ValueError(f"{name!r} is not a shipped model ({describe_names(shelf)})")
    path = folder / CARD_FILE
    try:
        card = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: malformed card: {error}") from error
    missing = [key for key in CARD_KEYS if key not in card] if isinstance(card, dict) else list(CARD_KEYS)
    if missing:
        raise ValueError(f"{path}: the card lacks {', '.join(missing)}")
    return card


def shipped_cards(shelf: Path | None = None) -> list[dict[str, Any]]:
    """Every shipped model's card, by name."""
    return [read_card(name, shelf) for name in shipped_names(shelf)]


def describe_names(shelf: Path | None = None) -> str:
    """``"shipped models: a, b, c"`` (or ``"no model is shipped"``), for one-line errors."""
    names = shipped_names(shelf)
    return f"shipped models: {', '.join(names)}" if names else "no model is shipped"


def folder_bytes(folder: Path) -> int:
    """The bytes of every file in ``folder`` (what a shipped model costs the package)."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
