"""One test per shipped classifier: the faithfulness figures its card records (attention against integrated
gradients and a random floor, :mod:`attnkit.experiments.faithfulness.card`) re-computed from the shipped weights
with the card's own settings, on one CPU thread; a card without figures (seq2seq, vision) is skipped.

Tolerances. Another CPU's float32 kernels round differently; a figure moves only where that reorders a near tie
in a ranking, changes an integrated-gradients step doubling (its completeness check) or an erasure's decision.
Measured on the three shipped classifiers' samples: 1 against 2 threads, and the weights cast to float64, change no
recorded figure at the cards' 4 decimals; every weight multiplied by (1 + 1e-3 x Gaussian noise), three draws,
a perturbation far beyond kernel rounding, moved an AOPC mean by at most 0.0004, a flip fraction by 0.0014 and
attention's share of IG's by 0.0011. The tolerances below are over ten times that, yet one real change shows: an
AOPC mean is over 16 documents, so a document whose comprehensiveness moved by 0.32 fails 0.02; a flip fraction or
a share that moved by a twentieth fails 0.05."""

from __future__ import annotations

import pytest
import torch

from attnkit.data.classification import load_data_set
from attnkit.experiments.faithfulness.card import CARD_FIGURES, card_figures
from attnkit.pretrained import read_card, shipped_names
from attnkit.tasks.classify.inference import load_classifier

AOPC_TOLERANCE = 0.02  # absolute, on a mean AOPC comprehensiveness (see the module docstring)
FLIP_TOLERANCE = 0.05  # absolute, on a mean flip fraction
SHARE_TOLERANCE = 0.05  # absolute, on attention's share of integrated gradients' comprehensiveness
TOLERANCES = {"aopc_comprehensiveness": AOPC_TOLERANCE, "flip_fraction": FLIP_TOLERANCE}


def test_every_shipped_classifier_records_its_faithfulness_figures():
    cards = [read_card(name) for name in shipped_names()]
    assert [card["name"] for card in cards if card["kind"] == "classifier" and "faithfulness" not in card] == []
    assert [card["name"] for card in cards if card["kind"] != "classifier" and "faithfulness" in card] == []


@pytest.mark.parametrize("name", shipped_names())
def test_the_shipped_classifier_reproduces_its_faithfulness_figures(name):
    card = read_card(name)
    block = card.get("faithfulness")
    if block is None:
        pytest.skip(f"{name}: a {card['kind']} card records no faithfulness figures")
    dataset = load_data_set(card["data"])
    threads = torch.get_num_threads()
    try:  # as the figures were measured: one thread, the CPU
        torch.set_num_threads(1)
        classifier = load_classifier(name, device="cpu")
        found = card_figures(
            classifier,
            dataset.test_texts,
            dataset.test_labels,
            block["documents"],
            seed=block["seed"],
            steps=block["integrated_gradients_steps"],
        )
    finally:
        torch.set_num_threads(threads)
    assert block["erase"] == "delete" and found["documents_measured"] == block["documents_measured"]
    assert sorted(found["methods"]) == sorted(block["methods"])
    for method, figures in block["methods"].items():
        for figure in CARD_FIGURES:
            assert found["methods"][method][figure] == pytest.approx(figures[figure], abs=TOLERANCES[figure]), (
                method,
                figure,
            )
    for key in ("attention_share_of_ig", "contribution_share_of_ig"):
        assert (key in found) == (key in block)
        if key in block:
            assert found[key] == pytest.approx(block[key], abs=SHARE_TOLERANCE)


def test_a_card_without_figures_is_skipped_cleanly():
    seq2seq = next(name for name in shipped_names() if read_card(name)["kind"] == "seq2seq")
    with pytest.raises(pytest.skip.Exception, match=f"{seq2seq}: a seq2seq card records no faithfulness figures"):
        test_the_shipped_classifier_reproduces_its_faithfulness_figures(seq2seq)
