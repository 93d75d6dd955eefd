"""The ``faithfulness`` block of a shipped classifier's cards (a maintainer's tool, beside :mod:`scripts.ship_model`).

:func:`measure_faithfulness` measures it from a checkpoint folder (one CPU thread, as the test that re-computes it);
:func:`refresh_faithfulness` adds it to a model already shipped, without retraining or touching its weights
(``python -m scripts.ship_model --refresh-faithfulness NAME``): ``card.json`` gains the block, ``MODEL_CARD.md`` is
rendered again and ``docs/results/shipped.json`` records the summary the results table shows.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from attnkit.pretrained import CARD_FILE, MODEL_CARD_FILE, find_shipped

__all__ = ["measure_faithfulness", "published_faithfulness", "refresh_faithfulness"]


def measure_faithfulness(folder: Path, *, name: str, data: str, results: Path | None) -> dict[str, Any]:
    """The ``faithfulness`` block (:mod:`attnkit.experiments.faithfulness.card`) of the classifier in ``folder``
    on the test split of ``data``, on one CPU thread; the uniform-attention gap is the faithfulness experiment's
    row of the shipped model ``name`` in ``results`` (a ``faithfulness.json``), when there is one."""
    import torch

    from attnkit.data.classification import load_data_set
    from attnkit.experiments.faithfulness.card import faithfulness_block, uniform_gap
    from attnkit.tasks.classify.inference import load_classifier

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        classifier = load_classifier(folder, device="cpu")
        dataset = load_data_set(data)
        uniform = uniform_gap(results, name) if results is not None else None
        block = faithfulness_block(classifier, dataset.test_texts, dataset.test_labels, uniform=uniform)
    finally:
        torch.set_num_threads(threads)
    return {**block, "measured": datetime.date.today().isoformat()}


def published_faithfulness(block: dict[str, Any]) -> dict[str, Any]:
    """What ``docs/results/shipped.json`` records of a card's block: each method's mean AOPC comprehensiveness,
    attention's share of IG's, the documents measured and the uniform-attention gap (mean, low, high)."""
    uniform = block.get("uniform") or {}
    return {
        "documents": block["documents_measured"],
        "aopc_comprehensiveness": {
            name: figures["aopc_comprehensiveness"] for name, figures in block["methods"].items()
        },
        "attention_share_of_ig": block.get("attention_share_of_ig"),
        "uniform_difference": uniform.get("difference"),
    }


def refresh_faithfulness(
    name: str, *, shelf: Path | None = None, results: Path | None = Path("docs/results/shipped.json")
) -> dict[str, Any]:
    """Measure the shipped classifier ``name``'s block and write it into its cards (weights untouched) and, with
    ``results``, into that ``shipped.json`` (the uniform gap read from ``faithfulness.json`` beside it).

    Raises:
        ValueError: ``name`` is not shipped, or is not a classifier.
    """
    from attnkit.checkpointing import read_config, read_metadata
    from scripts.model_cards import render_model_card

    try:
        folder = find_shipped(name, shelf)
    except LookupError as error:
        raise ValueError(f"{name!r}: {error}") from None
    card = json.loads((folder / CARD_FILE).read_text(encoding="utf-8"))
    if card.get("kind") != "classifier":
        raise ValueError(f"{name!r} is a {card.get('kind')} model: only classifiers carry faithfulness figures")
    gaps = results.parent / "faithfulness.json" if results is not None else None
    card["faithfulness"] = measure_faithfulness(folder, name=name, data=card["data"], results=gaps)
    (folder / CARD_FILE).write_text(json.dumps(card, indent=2) + "\n")
    metadata = read_metadata(folder)
    (folder / MODEL_CARD_FILE).write_text(render_model_card(card, config=read_config(folder), metadata=metadata))
    if results is not None and results.is_file():
        table = json.loads(results.read_text())
        if name in table:
            table[name]["faithfulness"] = published_faithfulness(card["faithfulness"])
            results.write_text(json.dumps(table, indent=2) + "\n")
    return card
