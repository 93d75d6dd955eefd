"""One test per shipped model: its published test figure (``docs/results/shipped.json``, the card's) re-computed
from the shipped weights by the card's own ``attnkit evaluate ... --json`` command.

The figure is a percentage of ``count`` test items. Another CPU's float32 kernels (AVX2 against AVX-512, oneDNN
against the reference) round differently, and a near-tie between two labels or two beam hypotheses can then go the
other way: the re-computed figure may differ from the published one by a few items, never by more. The card and the
table must agree to the digits printed."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import torch

from attnkit.cli import main
from attnkit.pretrained import read_card, shipped_names

NEAR_TIES = 3  # test items whose decision may flip on another CPU's kernels
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
    evaluation = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert f"{published['value']:.2f}" == f"{card['value']:.2f}"
    one_item = 100.0 / evaluation["count"]  # percentage points that one test item moves the figure by
    assert abs(evaluation[card["metric"]] - published["value"]) <= NEAR_TIES * one_item + 0.005


# Shipped ensembles: the members, the data, the metric, the beam and the published figure (docs/results.md, G2P)
ENSEMBLES = {("g2p", "g2p-bi2", "g2p-gru"): ("cmudict", "wer", 5, 24.2667)}
G2P_NOTES = Path(__file__).resolve().parents[2] / "docs" / "results" / "g2p_notes.md"


@pytest.mark.parametrize("members", list(ENSEMBLES), ids=" + ".join)
def test_a_shipped_ensemble_reproduces_its_published_figure(members, capsys):
    data, metric, beam, value = ENSEMBLES[members]
    assert f"{value:.2f} WER" in G2P_NOTES.read_text()  # the figure the notes publish
    threads = torch.get_num_threads()
    try:
        argv = ["evaluate", "--checkpoint", *members, "--data", data, "--beam", str(beam), "--json"]
        assert main([*argv, "--threads", "1", "--device", "cpu", "--no-progress"]) == 0
    finally:
        torch.set_num_threads(threads)
    evaluation = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert abs(evaluation[metric] - value) <= NEAR_TIES * 100.0 / evaluation["count"] + 0.005
