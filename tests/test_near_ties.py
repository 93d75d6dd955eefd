"""The helpers that compare decodings from different kernels (``tests/_near_ties.py``) accept a parting only at a
near tie of the reference, and refuse one anywhere else (#37: tests that hold on any machine)."""

import pytest
import torch

import _near_ties
from _near_ties import assert_equal_but_near_ties, assert_same_greedy_up_to_near_ties, first_differences
from attnkit.decoding import greedy
from attnkit.models.transformer.seq2seq import build_transformer_seq2seq


def test_first_differences_and_the_item_allowance():
    assert first_differences([[1, 2, 3], [4, 5], [6]], [[1, 2, 3], [4, 6], [6, 7]]) == {1: 1, 2: 1}
    assert assert_equal_but_near_ties(["a", "b", "c"], ["a", "x", "c"], allowed=1, what="t") == [1]
    with pytest.raises(AssertionError, match="2 of 3 differ"):
        assert_equal_but_near_ties(["a", "b", "c"], ["x", "y", "c"], allowed=1, what="t")


def test_a_greedy_parting_passes_only_where_the_reference_was_at_a_near_tie(monkeypatch):
    torch.manual_seed(0)
    model = build_transformer_seq2seq(11, 11, dim=16, heads=2, encoder_layers=1, decoder_layers=1).eval()
    ids, mask = torch.randint(4, 11, (2, 5)), torch.ones(2, 5, dtype=torch.bool)
    theirs = greedy(model, ids, mask, max_len=6, eos_id=-1).best  # [2, 6]
    ours = theirs.clone()
    ours[1, 3:] = (theirs[1, 3:] + 1) % 11  # row 1 parts at step 3
    assert_same_greedy_up_to_near_ties(model, ids, mask, theirs, theirs.clone())
    monkeypatch.setattr(_near_ties, "TIE", 0.0)  # no step is a near tie: the parting is a fault
    with pytest.raises(AssertionError, match="row 1 parts at step 3"):
        assert_same_greedy_up_to_near_ties(model, ids, mask, ours, theirs)
    monkeypatch.setattr(_near_ties, "TIE", float("inf"))  # every step is: the parting is allowed
    assert_same_greedy_up_to_near_ties(model, ids, mask, ours, theirs)
