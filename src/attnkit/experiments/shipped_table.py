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
    faithfulness = _faithfulness(table)
    return HEADER + "\n".join(rows) + "\n" + faithfulness + ("\n" + notes.read_text() if notes.exists() else "")


FAITHFULNESS_HEADER = """
Faithfulness of the shipped classifiers (each card's `faithfulness` block, written by
`python -m scripts.ship_model --refresh-faithfulness NAME` or when shipped): mean AOPC comprehensiveness of the
model's attention, integrated gradients and a random floor on the card's fixed sample of test documents (erasing by
deletion), re-computed from the shipped weights by `tests/pretrained/test_shipped_faithfulness.py`; the
uniform-attention gap (learned − uniform test accuracy, points, 95% interval) is the faithfulness experiment's,
which trained the uniform twin, and is not re-computed. For a model whose attention averages the word embeddings
(`--attention-values embeddings`), "α·part / IG" is the share of attention times each word's own part of the
logit (`attention_contribution`), the explanation such a model gives.

| name | documents | attention | integrated gradients | random | attention / IG | α·part / IG | uniform gap |
|---|---|---|---|---|---|---|---|
"""


METHODS = ("attention", "integrated_gradients", "random")


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _faithfulness(table: dict) -> str:
    """The faithfulness table of the rows that carry figures (empty when none does)."""
    rows = []
    for name, row in table.items():
        found = row.get("faithfulness")
        if not found:
            continue
        aopc, gap = found["aopc_comprehensiveness"], found.get("uniform_difference")
        share = found.get("attention_share_of_ig")
        cells = [str(found["documents"]), *(_number(aopc.get(method)) for method in METHODS)]
        cells.append("–" if share is None else f"{share:.0%}")
        part = aopc.get("attention_contribution")
        cells.append("–" if part is None else f"{part / aopc['integrated_gradients']:.0%}")
        cells.append("–" if not gap else f"{gap['mean']:+.2f} [{gap['low']:+.2f}, {gap['high']:+.2f}]")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return FAITHFULNESS_HEADER + "\n".join(rows) + "\n" if rows else ""
