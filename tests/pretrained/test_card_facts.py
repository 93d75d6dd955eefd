"""What a model card says about its data is what the data holds (#37): the counts a card's data note gives are
the built-in data set's, and ``attnkit models`` prints figures rounded as every attnkit rate is (2 decimals)."""

from __future__ import annotations

import json
import re

import pytest

import attnkit.pretrained as pretrained
from attnkit.cli import main
from attnkit.data.classification import data_set_names, is_available, load_data_set
from attnkit.pretrained import CARD_FILE, CARD_KEYS, shipped_cards

COUNT = re.compile(r"([\d,]+) (training|test) (?:reviews|documents|texts|articles)")
CLASSIFIER_CARDS = [card for card in shipped_cards() if card["data"] in data_set_names()]


@pytest.mark.parametrize("card", CLASSIFIER_CARDS, ids=[card["name"] for card in CLASSIFIER_CARDS])
def test_the_counts_a_card_states_are_the_data_sets(card):
    if not is_available(card["data"]):
        pytest.skip(f"{card['data']} is not installed")
    data = load_data_set(card["data"])
    sizes = {"training": len(data.train_texts), "test": len(data.test_texts)}
    stated = COUNT.findall(card["data_note"])
    assert {split for _, split in stated} == {"training", "test"}, card["data_note"]  # a classifier card says both
    for number, split in stated:
        assert int(number.replace(",", "")) == sizes[split], f"{card['name']}: {number} {split} in {card['data_note']}"
    model_card = (pretrained.SHELF / card["name"] / "MODEL_CARD.md").read_text()
    assert card["data_note"] in model_card  # the Markdown card says the same


def test_attnkit_models_rounds_each_figure_to_two_decimals(tmp_path, monkeypatch, capsys):
    from torch import nn

    from attnkit.checkpointing import save_checkpoint

    save_checkpoint(tmp_path / "g2p", nn.Linear(2, 1), model_config={"kind": "seq2seq"})
    card = {key: "" for key in CARD_KEYS} | {"name": "g2p", "kind": "seq2seq", "data": "cmudict", "metric": "wer"}
    card |= {"value": 26.0333333}
    card |= {"size_bytes": 2**20, "training_minutes": 3.25, "command": "attnkit train seq2seq"}
    (tmp_path / "g2p" / CARD_FILE).write_text(json.dumps(card))
    monkeypatch.setattr(pretrained, "SHELF", tmp_path)
    assert main(["models"]) == 0
    row = capsys.readouterr().out.splitlines()[1]
    assert "wer 26.03 " in row and "26.033" not in row
