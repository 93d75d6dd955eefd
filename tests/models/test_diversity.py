"""Diversity LSTM's conicity penalty: equal to a hand computation, blind to padding, equal to its readable reference
in values and gradients, and defined (zero, no NaN) where a sequence has too few tokens to measure."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnkit.models.diversity import EncodedStates, conicity, conicity_reference, diversity_penalty


def test_conicity_by_hand():
    # two orthogonal states: their mean (.5, .5) is at 45 degrees from each -> cos = 1/sqrt(2) for both
    states = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [7.0, -3.0]]])  # the third is padding
    mask = torch.tensor([[True, True, False]])
    assert conicity(states, mask).item() == pytest.approx(1 / math.sqrt(2))
    # three states: (1, 0), (1, 0), (-1, 0): mean (1/3, 0); |cos| is 1 for each -> 1 (absolute value, as the authors)
    states = torch.tensor([[[1.0, 0.0], [2.0, 0.0], [-1.0, 0.0]]])
    assert conicity(states, torch.ones(1, 3, dtype=torch.bool)).item() == pytest.approx(1.0)


def test_padding_never_counts():
    torch.manual_seed(0)
    real = torch.randn(1, 4, 6)
    mask = torch.tensor([[True] * 4 + [False] * 3])
    garbage = torch.cat([real, 100 * torch.randn(1, 3, 6)], dim=1)
    zeros = torch.cat([real, torch.zeros(1, 3, 6)], dim=1)
    alone = conicity(real, torch.ones(1, 4, dtype=torch.bool))
    torch.testing.assert_close(conicity(garbage, mask), alone)
    torch.testing.assert_close(conicity(zeros, mask), alone)


@settings(max_examples=10, deadline=None)
@given(lengths=st.lists(st.integers(0, 6), min_size=1, max_size=4), seed=st.integers(0, 2**16))
def test_the_batched_conicity_equals_the_reference_in_values_and_gradients(lengths, seed):
    torch.manual_seed(seed)
    states = torch.randn(len(lengths), max(max(lengths), 1), 5, dtype=torch.float64, requires_grad=True)
    mask = torch.arange(states.shape[1])[None] < torch.tensor(lengths)[:, None]
    weights = torch.randn(len(lengths), dtype=torch.float64)
    fast, slow = conicity(states, mask), conicity_reference(states, mask)
    torch.testing.assert_close(fast, slow)
    (fast_grad,) = torch.autograd.grad((fast * weights).sum(), states)
    (slow_grad,) = torch.autograd.grad((slow * weights).sum(), states)
    torch.testing.assert_close(fast_grad, slow_grad)
    assert (fast_grad[~mask] == 0).all()


def test_sequences_too_short_to_measure_are_left_out_without_nan():
    states = torch.randn(3, 4, 2, requires_grad=True)
    mask = torch.tensor([[False] * 4, [True, False, False, False], [True, True, True, False]])
    values = conicity(states, mask)
    assert values[:2].tolist() == [0.0, 0.0] and 0 < values[2] <= 1
    penalty = diversity_penalty([EncodedStates(states, mask)])
    torch.testing.assert_close(penalty, values[2])  # the mean over the one sequence that counts
    penalty.backward()
    assert torch.isfinite(states.grad).all() and (states.grad[:2] == 0).all()
    nothing = diversity_penalty([EncodedStates(states, torch.zeros(3, 4, dtype=torch.bool))])
    assert nothing.item() == 0.0 and diversity_penalty([]).item() == 0.0


def test_the_penalty_averages_the_levels_that_have_sequences():
    torch.manual_seed(0)
    words, sentences = torch.randn(5, 3, 4), torch.randn(2, 4, 4)
    word_mask = torch.ones(5, 3, dtype=torch.bool)
    sentence_mask = torch.tensor([[True, True, False, False], [True, False, False, False]])
    penalty = diversity_penalty([EncodedStates(words, word_mask), EncodedStates(sentences, sentence_mask)])
    expected = (conicity(words, word_mask).mean() + conicity(sentences, sentence_mask)[0]) / 2
    torch.testing.assert_close(penalty, expected)


@settings(max_examples=10, deadline=None)
@given(lengths=st.lists(st.integers(1, 6), min_size=1, max_size=4), extra=st.integers(0, 3), seed=st.integers(0, 2**16))
def test_a_sequences_conicity_ignores_padding_and_companions(lengths, extra, seed):
    torch.manual_seed(seed)
    sequences = [torch.randn(n, 3) for n in lengths]
    states = 50 * torch.randn(len(lengths), max(lengths) + extra, 3)  # garbage in the padding
    mask = torch.arange(states.shape[1])[None] < torch.tensor(lengths)[:, None]
    for i, sequence in enumerate(sequences):
        states[i, : len(sequence)] = sequence
    batched = conicity(states, mask)
    for i, sequence in enumerate(sequences):
        alone = conicity(sequence[None], torch.ones(1, len(sequence), dtype=torch.bool))
        torch.testing.assert_close(batched[i], alone[0])
