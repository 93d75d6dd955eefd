"""One test per shipped model: its published test figure (``docs/results/shipped.json``, the card's) re-computed
from the shipped weights by the card's own ``attnkit evaluate ... --json`` command, to the digits printed."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import torch

from attnkit.cli import main
from attnkit.pretrained import read_card, shipped_names

PUBLISHED = Path(__file__).resolve().parents[2] / "docs" / "results" / "shipped.json"


@pytest.mark.parametrize("name", shipped_names())
def test_the_shipped_model_reproduces_its_published_figure(name, capsys):
    card = read_card(name)
    published = json.loads(PUBLISHED.read_text())[name]
    command = shlex.split(card["evaluate"])
    assert command[:3] == ["attnkit", "evaluate", "--checkpoint"] and command[3] == name
    threads = torch.get_num_threads()
    try:  # as the figure was measured: one thread, the CPU
        assert main([*command[1:], "--threads", "1", "--device", "cpu", "--no-progress"]) == 0
    finally:
        torch.set_num_threads(threads)
    measured = json.loads(capsys.readouterr().out.strip().splitlines()[-1])[card["metric"]]
    assert f"{measured:.2f}" == f"{published['value']:.2f}" == f"{card['value']:.2f}"
