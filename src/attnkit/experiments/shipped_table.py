"""The "Shipped models" section of ``docs/results.md``: the figures recorded in ``docs/results/shipped.json`` by
``python -m scripts.ship_model`` (one per model shipped inside attnkit, re-computed by its own test) (layer 6)."""

from __future__ import annotations

from pathlib import Path

from attnkit.experiments.common import read_json

__all__ = ["render_shipped"]

HEADER = """## Shipped models

Trained checkpoints inside the package (`src/attnkit/pretrained/NAME/`, listed by `attnkit models`), each with a
`MODEL_CARD.md` and a `card.json`. A name works wherever a checkpoint path does (`attnkit.load("r8")`,
`--checkpoint r8`); each figure below was measured from the shipped files by the command in its row, and
`tests/pretrained/test_shipped_figures.py` re-computes it on every `make test`, within 3 test items (a near tie
may flip on another CPU's kernels; see [`contributing.md`](contributing.md)).

| name | kind | data | test figure | measured | training minutes | re-check | trained with |
|---|---|---|---|---|---|---|---|
"""


def render_shipped(results: Path) -> str:
    """The section (empty when nothing is shipped), followed by ``shipped_notes.md`` when it exists."""
    table = read_json(results / "shipped.json")
    if not table:
        return ""
    rows = [
        f"| {name} | {row['kind']} | {row['data']} | {row['metric']} {row['value']:.2f} | {row['measured']} "
        f"| {row['training_minutes']:.1f} | `{row['evaluate']}` | `{row['command']}` |"
        for name, row in table.items()
    ]
    notes = results / "shipped_notes.md"
    return HEADER + "\n".join(rows) + "\n" + ("\n" + notes.read_text() if notes.exists() else "")
