"""Pooling baselines, attention pooling by hand, and position modules."""

import math

import pytest
import torch

from attnkit import (
    AttentionPooling,
    LearnedPositions,
    MaxPooling,
    MeanPooling,
    Sinusoidal2DPositions,
    SinusoidalPositions,
    masks,
)


def test_mean_pooling_ignores_padding_and_handles_empty_rows():
    x = torch.tensor([[[1.0], [3.0], [100.0]], [[5.0], [7.0], [9.0]]])
    mask = masks.lengths_to_mask(torch.tensor([2, 0]), 3)
    out = MeanPooling()(x, mask)
    torch.testing.assert_close(out.context, torch.tensor([[2.0], [0.0]]))
    torch.testing.assert_close(out.weights, torch.tensor([[[0.5, 0.5, 0.0]], [[0.0, 0.0, 0.0]]]))


def test_max_pooling_never_picks_padding_and_reports_saliency():
    x = torch.tensor([[[1.0, 9.0], [3.0, -1.0], [100.0, 100.0]], [[5.0, 7.0], [7.0, 1.0], [9.0, 9.0]]])
    x.requires_grad_()
    mask = masks.lengths_to_mask(torch.tensor([2, 0]), 3)
    out = MaxPooling()(x, mask)
    torch.testing.assert_close(out.context, torch.tensor([[3.0, 9.0], [0.0, 0.0]]))
    torch.testing.assert_close(out.weights, torch.tensor([[[0.5, 0.5, 0.0]], [[0.0, 0.0, 0.0]]]))
    out.context.sum().backward()
    assert torch.isfinite(x.grad).all() and (x.grad[1] == 0).all() and (x.grad[0, 2] == 0).all()


def test_attention_pooling_by_hand():
    pool = AttentionPooling(2, hidden=2)
    with torch.no_grad():
        pool.key_proj.weight.copy_(torch.eye(2) * 100)  # tanh saturates: keys become sign(x)
        pool.key_proj.bias.zero_()
        pool.queries.copy_(torch.tensor([[1.0, 0.0]]))
    x = torch.tensor([[[1.0, 0.0], [-1.0, 0.0], [5.0, 5.0]]])
    out = pool(x, torch.tensor([[True, True, False]]))
    e = math.e
    torch.testing.assert_close(out.weights, torch.tensor([[[e / (e + 1 / e), (1 / e) / (e + 1 / e), 0.0]]]))
    torch.testing.assert_close(out.context, out.weights[:, 0] @ x[0])


def test_attention_pooling_of_an_empty_sequence_is_zero_without_nan():
    pool = AttentionPooling(4, heads=2)
    x = torch.randn(2, 3, 4, requires_grad=True)
    out = pool(x, masks.lengths_to_mask(torch.tensor([3, 0]), 3))
    assert out.context.shape == (2, 8)
    assert (out.context[1] == 0).all() and (out.weights[1] == 0).all()
    out.context.sum().backward()
    assert torch.isfinite(x.grad).all() and (x.grad[1] == 0).all()


def test_positions_make_attention_pooling_order_aware():
    torch.manual_seed(0)
    x = torch.randn(1, 5, 8)
    reversed_x = x.flip(1)
    plain = AttentionPooling(8)
    torch.testing.assert_close(plain(x).context, plain(reversed_x).context)  # order-blind
    ordered = AttentionPooling(8, positions=SinusoidalPositions(8))
    assert not torch.allclose(ordered(x).context, ordered(reversed_x).context)


def test_sinusoidal_positions_follow_the_formula_and_offset():
    pos = SinusoidalPositions(4)
    out = pos(torch.zeros(1, 3, 4), offset=2)
    t = 3.0  # rows are positions 2, 3, 4: the second row is position 3
    expected = torch.tensor([math.sin(t), math.cos(t), math.sin(t / 100), math.cos(t / 100)])
    torch.testing.assert_close(out[0, 1], expected)


def test_learned_positions_raise_beyond_capacity():
    pos = LearnedPositions(4, 2)
    assert pos(torch.zeros(1, 4, 2)).shape == (1, 4, 2)
    with pytest.raises(ValueError, match="holds 4 positions"):
        pos(torch.zeros(1, 3, 2), offset=2)


def test_2d_positions_encode_rows_and_columns_separately():
    pos = Sinusoidal2DPositions(8)
    table = pos.table(3, 4)
    assert table.shape == (3, 4, 8)
    torch.testing.assert_close(table[1, 0, :4], table[1, 3, :4])  # same row, same row-half
    torch.testing.assert_close(table[0, 2, 4:], table[2, 2, 4:])  # same column, same column-half
    assert not torch.allclose(table[0, 0], table[1, 1])


@pytest.mark.parametrize("make", [lambda: AttentionPooling(4, heads=2), MeanPooling, MaxPooling])
def test_every_pooling_takes_key_mask_as_the_rest_of_attnkit_and_mask_still_works(make):
    torch.manual_seed(0)
    pooling = make()
    x = torch.randn(2, 5, 4)
    key_mask = torch.arange(5)[None] < torch.tensor([[5], [2]])
    by_key_mask = pooling(x, key_mask=key_mask)
    for old in (pooling(x, key_mask), pooling(x, mask=key_mask)):
        torch.testing.assert_close(old.context, by_key_mask.context)
        torch.testing.assert_close(old.weights, by_key_mask.weights)
    assert (by_key_mask.weights[1, :, 2:] == 0).all()
    with pytest.raises(ValueError, match="not both"):
        pooling(x, mask=key_mask, key_mask=key_mask)
