"""The cheap-mask dropout (``attnkit.functional.dropout``, ``attnkit.models.dropout.Dropout``).

What must hold: with a given mask it computes exactly ``x · mask / (1 - p)`` and its gradient; its fresh masks keep
each element with probability ``1 - p`` in every one of the four 16-bit lanes of a draw (a biased lane — e.g. the
sign bit of a non-negative int64 — would show here), independently of position; it is repeatable under a seed;
eval mode and ``p = 0`` return the input; ``p = 1`` returns zeros; bad ``p`` is refused.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnkit.functional.dropout import dropout, keep_mask, keep_mask_reference, quantized_probability
from attnkit.models.dropout import Dropout


def _binomial_bound(n: int, p: float, sigmas: float = 6.0) -> float:
    return sigmas * math.sqrt(p * (1 - p) / n)


@given(
    shape=st.lists(st.integers(1, 7), min_size=1, max_size=3),
    p=st.floats(0.01, 0.99),
    seed=st.integers(0, 2**31 - 1),
)
@settings(max_examples=40, deadline=None)
def test_with_a_given_mask_values_and_gradients_equal_the_reference(shape, p, seed):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, dtype=torch.float64, generator=generator, requires_grad=True)
    mask = torch.rand(shape, generator=generator) >= 0.5
    q = quantized_probability(p)

    out = dropout(x, p, mask=mask)
    reference = torch.where(mask, x / (1 - q), torch.zeros_like(x))
    torch.testing.assert_close(out, reference, rtol=1e-12, atol=0)

    upstream = torch.randn(shape, dtype=torch.float64, generator=generator)
    (grad,) = torch.autograd.grad(out, x, upstream)
    torch.testing.assert_close(grad, upstream * mask / (1 - q), rtol=1e-12, atol=0)


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5, 0.9])
def test_fresh_masks_keep_each_lane_at_the_right_rate(p):
    torch.manual_seed(0)
    n = 400_000
    kept = keep_mask((n,), p).float()
    expected = 1 - quantized_probability(p)
    lanes = kept.view(-1, 4).mean(dim=0)  # each of the four 16-bit lanes of an int64 draw
    bound = _binomial_bound(n // 4, expected)
    assert torch.all((lanes - expected).abs() < bound), (lanes, expected)
    # ... and the same rate as the readable reference's one-float-per-element masks
    reference = keep_mask_reference((n,), p).float().mean()
    assert abs(float(kept.mean()) - float(reference)) < 2 * _binomial_bound(n, expected)


def test_neighbouring_elements_are_independent():
    torch.manual_seed(1)
    kept = keep_mask((200_000,), 0.5).float()
    both = (kept[:-1] * kept[1:]).mean()  # P(kept_i and kept_i+1) = 0.25 when independent
    assert abs(float(both) - 0.25) < _binomial_bound(200_000, 0.25)


def test_odd_sizes_and_shapes_are_covered():
    torch.manual_seed(2)
    mask = keep_mask((3, 5, 7), 0.2)  # 105 elements: not a multiple of four lanes
    assert mask.shape == (3, 5, 7) and mask.dtype == torch.bool


def test_a_seed_repeats_the_mask_and_training_output():
    x = torch.randn(64, 33)
    torch.manual_seed(7)
    first = dropout(x, 0.1)
    torch.manual_seed(7)
    second = dropout(x, 0.1)
    assert torch.equal(first, second)
    assert not torch.equal(first, dropout(x, 0.1))


def test_survivors_are_scaled_and_the_mean_is_kept():
    torch.manual_seed(3)
    x = torch.ones(500_000)
    out = dropout(x, 0.25)
    q = quantized_probability(0.25)
    values = out.unique().tolist()
    assert values[0] == 0.0 and values[1:] == [pytest.approx(1 / (1 - q))]
    assert abs(float(out.mean()) - 1.0) < 6 * math.sqrt(q / (1 - q) / x.numel())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_the_dtype_is_kept(dtype):
    x = torch.randn(8, 16).to(dtype)
    assert dropout(x, 0.1).dtype == dtype


def test_eval_mode_and_p_zero_return_the_input_and_p_one_returns_zeros():
    x = torch.randn(4, 6, requires_grad=True)
    assert dropout(x, 0.5, training=False) is x
    assert dropout(x, 0.0) is x
    out = dropout(x, 1.0)
    assert torch.equal(out, torch.zeros_like(x))
    out.sum().backward()
    assert torch.equal(x.grad, torch.zeros_like(x))


@pytest.mark.parametrize("p", [-0.1, 1.5, float("nan")])
def test_bad_probabilities_are_refused(p):
    with pytest.raises(ValueError, match="dropout probability"):
        dropout(torch.ones(2), p)
    with pytest.raises(ValueError, match="dropout probability"):
        Dropout(p)


def test_the_module_follows_train_and_eval():
    module = Dropout(0.5)
    x = torch.ones(1000)
    torch.manual_seed(4)
    assert (module(x) == 0).any()
    module.eval()
    assert module(x) is x
    assert repr(module) == "Dropout(p=0.5)"


def test_p_is_rounded_to_a_multiple_of_one_65536th():
    assert quantized_probability(0.1) == 6554 / 65536
    assert quantized_probability(0.5) == 0.5
    assert quantized_probability(1.0) == 1.0
