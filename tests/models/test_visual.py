"""VisualAttentionClassifier: shapes, weights that sum to 1 over the grid, maps that keep the grid's layout, and
2-D positions that make the pooling order-aware."""

import pytest
import torch

from attnkit.models.visual import ConvBackbone, VisualAttentionClassifier, visual_attention_classifier
from attnkit.pooling import AttentionPooling
from attnkit.positions import Sinusoidal2DPositions


@pytest.mark.parametrize(("heads", "downsample", "grid"), [(1, (), (8, 8)), (3, (1,), (4, 4)), (2, (0, 1), (2, 2))])
def test_shapes_of_logits_weights_and_maps(heads, downsample, grid):
    torch.manual_seed(0)
    model = visual_attention_classifier(10, channels=(8, 16), downsample=downsample, heads=heads).eval()
    out = model(torch.rand(5, 1, 8, 8))
    cells = grid[0] * grid[1]
    assert out.logits.shape == (5, 10)
    assert out.pooling.weights.shape == (5, heads, cells)
    assert out.pooling.context.shape == (5, 16 * heads if heads > 1 else 16)
    assert out.grid_size == grid and model.heads == heads
    assert out.attention_maps().shape == (5, heads, *grid)


def test_weights_are_a_distribution_over_the_grid():
    torch.manual_seed(0)
    model = visual_attention_classifier(4, in_channels=3, channels=(8, 16), heads=4).eval()
    maps = model(torch.randn(6, 3, 7, 9)).attention_maps()  # any image size
    assert maps.shape == (6, 4, 7, 9)
    assert (maps >= 0).all()
    torch.testing.assert_close(maps.sum(dim=(-2, -1)), torch.ones(6, 4))


def test_maps_keep_the_grid_layout():
    """Without positions, a pooling that scores feature 0 attends to the one cell where feature 0 is large."""
    model = VisualAttentionClassifier(ConvBackbone(1, [4]), 3, pooling=AttentionPooling(4, hidden=4)).eval()
    with torch.no_grad():
        model.pooling.key_proj.weight.copy_(torch.eye(4))
        model.pooling.key_proj.bias.zero_()
        model.pooling.queries.copy_(torch.tensor([[20.0, 0.0, 0.0, 0.0]]))
    grid = torch.zeros(2, 5, 6, 4)
    grid[0, 2, 5, 0] = 3.0
    grid[1, 4, 0, 0] = 3.0
    maps = model.attend(grid).attention_maps()  # [2, 1, 5, 6]
    assert maps[0, 0, 2, 5] > 0.9 and maps[1, 0, 4, 0] > 0.9
    flat = maps.flatten(2).argmax(-1).squeeze(1)
    assert flat.tolist() == [2 * 6 + 5, 4 * 6 + 0]


def test_without_positions_the_pooling_ignores_where_a_cell_is():
    torch.manual_seed(0)
    model = VisualAttentionClassifier(ConvBackbone(1, [8]), 5).eval()
    grid = torch.randn(3, 4, 4, 8)
    permutation = torch.randperm(16)
    shuffled = grid.flatten(1, 2)[:, permutation].reshape(3, 4, 4, 8)
    plain, moved = model.attend(grid), model.attend(shuffled)
    torch.testing.assert_close(moved.logits, plain.logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(moved.pooling.weights, plain.pooling.weights[..., permutation])


def test_2d_positions_make_the_pooling_order_aware():
    torch.manual_seed(0)
    model = VisualAttentionClassifier(ConvBackbone(1, [8]), 5, positions=Sinusoidal2DPositions(8)).eval()
    grid = torch.randn(3, 4, 4, 8)
    shuffled = grid.flatten(1, 2)[:, torch.randperm(16)].reshape(3, 4, 4, 8)
    assert not torch.allclose(model.attend(shuffled).logits, model.attend(grid).logits, atol=1e-3)
    # the same feature in every cell: blind pooling is uniform, position-aware pooling is not
    same = torch.randn(8).expand(1, 4, 4, 8)
    aware = model.attend(same).pooling.weights
    blind = VisualAttentionClassifier(ConvBackbone(1, [8]), 5).eval().attend(same).pooling.weights
    torch.testing.assert_close(blind, torch.full((1, 1, 16), 1 / 16))
    assert aware.std() > 1e-3


def test_an_image_alone_equals_the_image_in_a_batch_and_every_parameter_learns():
    torch.manual_seed(0)
    model = visual_attention_classifier(10, channels=(8, 16), heads=2)
    images = torch.rand(4, 1, 8, 8)
    model.eval()
    batched = model(images)
    alone = model(images[2:3])
    torch.testing.assert_close(alone.logits[0], batched.logits[2], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(alone.pooling.weights[0], batched.pooling.weights[2], atol=1e-6, rtol=1e-5)
    model.train()
    torch.nn.functional.cross_entropy(model(images).logits, torch.tensor([0, 1, 2, 3])).backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


def test_clear_errors():
    model = visual_attention_classifier(10, channels=(8,))
    with pytest.raises(ValueError, match=r"\[B, 1, H, W\]"):
        model(torch.rand(2, 3, 8, 8))
    with pytest.raises(ValueError, match="positions must be one of"):
        visual_attention_classifier(10, positions="learned")
    with pytest.raises(ValueError, match="divisible by 4"):
        visual_attention_classifier(10, channels=(6,))
    with pytest.raises(ValueError, match="downsample"):
        visual_attention_classifier(10, channels=(8,), downsample=(1,))
    with pytest.raises(ValueError, match="output_dim"):
        VisualAttentionClassifier(torch.nn.Identity(), 3)
