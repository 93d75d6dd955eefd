"""Attention rollout: hand-computed values, row sums, identity, padding."""

import pytest
import torch

from attnkit import Attention, DotScore, Softmax
from attnkit.explain.rollout import attention_rollout


def test_two_layers_by_hand():
    # Layer 1: two heads that average to 0.5 everywhere: Â1 = rownorm(0.5 + I) = [[.75, .25], [.25, .75]].
    layer1 = torch.tensor([[[[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]]])  # [1, 2, 2, 2]
    # Layer 2, one head: Â2 = rownorm(A2 + I) = [[1, 0], [.25, .75]].
    layer2 = torch.tensor([[[[1.0, 0.0], [0.5, 0.5]]]])  # [1, 1, 2, 2]
    # R = Â2 @ Â1 = [[.75, .25], [.25·.75 + .75·.25, .25·.25 + .75·.75]] = [[.75, .25], [.375, .625]].
    expected = torch.tensor([[[0.75, 0.25], [0.375, 0.625]]])
    torch.testing.assert_close(attention_rollout([layer1, layer2]), expected)


def test_layer_order_matters():
    layer1 = torch.tensor([[[[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]]])
    layer2 = torch.tensor([[[[1.0, 0.0], [0.5, 0.5]]]])
    # Â1 @ Â2 = [[.75·1 + .25·.25, .25·.75], [.25 + .75·.25, .75·.75]]
    expected = torch.tensor([[[0.8125, 0.1875], [0.4375, 0.5625]]])
    torch.testing.assert_close(attention_rollout([layer2, layer1]), expected)


def test_rows_sum_to_one():
    torch.manual_seed(0)
    layers = [torch.softmax(torch.randn(3, 4, 6, 6), dim=-1) for _ in range(3)]
    rollout = attention_rollout(layers)
    assert rollout.shape == (3, 6, 6)
    assert (rollout >= 0).all()
    torch.testing.assert_close(rollout.sum(dim=-1), torch.ones(3, 6))


def test_identity_weights_give_identity():
    eye = torch.eye(5).expand(2, 3, 5, 5)  # [B, H, T, T]
    torch.testing.assert_close(attention_rollout([eye, eye, eye]), torch.eye(5).expand(2, 5, 5))


def test_single_head_three_dimensional_layers_are_accepted():
    torch.manual_seed(1)
    layer = torch.softmax(torch.randn(2, 4, 4), dim=-1)  # [B, T, T]
    torch.testing.assert_close(attention_rollout([layer]), attention_rollout([layer[:, None]]))


def test_padding_gets_zero_and_changes_nothing():
    torch.manual_seed(2)
    lengths = torch.tensor([3, 5])
    key_mask = torch.arange(5)[None, :] < lengths[:, None]  # [B, T]
    scores = [torch.randn(2, 2, 5, 5) for _ in range(2)]
    masked = [torch.softmax(s.masked_fill(~key_mask[:, None, None, :], float("-inf")), dim=-1) for s in scores]
    rollout = attention_rollout(masked, key_mask=key_mask)

    short = attention_rollout([torch.softmax(s[:1, :, :3, :3], dim=-1) for s in scores])
    torch.testing.assert_close(rollout[0, :3, :3], short[0])
    assert (rollout[0, 3:, :] == 0).all() and (rollout[0, :, 3:] == 0).all()
    torch.testing.assert_close(rollout[0, :3].sum(-1), torch.ones(3))
    torch.testing.assert_close(rollout[1].sum(-1), torch.ones(5))


def test_float64_is_kept():
    layer = torch.softmax(torch.randn(1, 1, 3, 3, dtype=torch.float64), dim=-1)
    assert attention_rollout([layer]).dtype == torch.float64
    assert attention_rollout([layer.float()]).dtype == torch.float32


@pytest.mark.parametrize(
    ("layers", "key_mask", "message"),
    [
        ([], None, "layer_weights"),
        ([torch.rand(1, 2, 3, 4)], None, r"layer_weights\[0\]"),
        ([torch.rand(1, 2, 3, 3), torch.rand(1, 2, 4, 4)], None, r"layer_weights\[1\]"),
        ([torch.rand(1, 2, 3, 3)], torch.ones(1, 3), "key_mask"),
        ([torch.rand(1, 2, 3, 3)], torch.ones(1, 4, dtype=torch.bool), "key_mask"),
    ],
)
def test_bad_inputs_raise_naming_the_argument(layers, key_mask, message):
    with pytest.raises(ValueError, match=message):
        attention_rollout(layers, key_mask=key_mask)


def test_an_integer_mask_is_refused_as_everywhere_else_in_attnkit():
    layers = [torch.softmax(torch.randn(1, 2, 3, 3), dim=-1)]
    with pytest.raises(ValueError, match=r"key_mask must be a torch.BoolTensor.*bool\(\)"):
        attention_rollout(layers, key_mask=torch.ones(1, 3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"key_mask must be a torch\.BoolTensor"):
        Attention(DotScore(), Softmax())(
            torch.randn(1, 2, 4), torch.randn(1, 3, 4), key_mask=torch.ones(1, 3, dtype=torch.long)
        )
