"""PNG heatmaps and overlays: files written, exact pixel sizes, real content, lazy matplotlib."""

import io
import subprocess
import sys

import numpy as np
import pytest
import torch
from PIL import Image

from attnkit.explain.heatmaps import alignment_heatmap, layer_head_grid, overlay_attention, upsample_attention
from attnkit.outputs import AttentionOutput

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def pixels(png: bytes) -> np.ndarray:
    """``[height, width, 3]`` uint8."""
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def assert_not_constant(png: bytes) -> None:
    image = pixels(png)
    assert image.std() > 5
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 10


def test_alignment_heatmap_writes_png_of_the_requested_size(tmp_path):
    weights = torch.softmax(torch.randn(4, 6, generator=torch.Generator().manual_seed(0)), dim=-1)
    path = tmp_path / "plots" / "alignment.png"
    png = alignment_heatmap(weights, list("abcdef"), ["w", "x", "y", "$5 or $10"], path=path, figsize=(4, 3), dpi=50)
    assert png.startswith(PNG_SIGNATURE)
    assert path.read_bytes() == png
    assert Image.open(path).size == (200, 150)  # (width, height) = figsize × dpi
    assert_not_constant(png)


def test_alignment_heatmap_accepts_attention_output_with_batch_of_one():
    weights = torch.softmax(torch.randn(1, 3, 2), dim=-1)
    png = alignment_heatmap(AttentionOutput(torch.zeros(1, 3, 8), weights), ["a", "b"], ["x", "y", "z"])
    assert png.startswith(PNG_SIGNATURE)


def test_alignment_heatmap_checks_labels_and_values():
    with pytest.raises(ValueError, match="tokens"):
        alignment_heatmap(torch.rand(3, 2), ["a", "b", "c"], ["x", "y", "z"])
    with pytest.raises(ValueError, match="non-negative"):
        alignment_heatmap(-torch.rand(2, 2), ["a", "b"], ["x", "y"])
    with pytest.raises(ValueError, match="finite"):
        alignment_heatmap(torch.tensor([[float("nan"), 1.0]]), ["a", "b"], ["x"])


def test_layer_head_grid_size_follows_layers_and_heads(tmp_path):
    layers = torch.softmax(torch.randn(3, 2, 5, 5), dim=-1)  # [L, H, T, T]
    tokens = list("abcde")
    png = layer_head_grid(layers, tokens, tokens, path=tmp_path / "grid.png", cell_inches=1.5, dpi=40)
    width, height = Image.open(tmp_path / "grid.png").size
    assert (width, height) == (round((2 * 1.5 + 1.2) * 40), round((3 * 1.5 + 0.8) * 40))
    assert_not_constant(png)
    as_list = layer_head_grid(list(layers), tokens, tokens, cell_inches=1.5, dpi=40)
    np.testing.assert_array_equal(pixels(as_list), pixels(png))


def test_layer_head_grid_rejects_mismatched_layers():
    with pytest.raises(ValueError, match=r"layers\[1\]"):
        layer_head_grid([torch.rand(2, 3, 3), torch.rand(1, 3, 3)], list("abc"), list("abc"))


def test_upsample_attention_is_bilinear():
    grid = torch.tensor([[0.0, 1.0], [2.0, 3.0]])
    up = upsample_attention(grid, (4, 4))
    assert up.shape == (4, 4)
    # align_corners=False: output pixel 1 samples source x = (1 + 0.5) / 2 - 0.5 = 0.25.
    assert up[0, 0].item() == pytest.approx(0.0)
    assert up[0, 1].item() == pytest.approx(0.25)
    assert up[1, 0].item() == pytest.approx(0.5)
    assert up[3, 3].item() == pytest.approx(3.0)
    torch.testing.assert_close(upsample_attention(torch.full((3, 3), 0.2), (7, 5)), torch.full((7, 5), 0.2).double())


def test_overlay_has_image_size_times_scale(tmp_path):
    image = torch.rand(6, 9)
    png = overlay_attention(image, torch.rand(3, 3), path=tmp_path / "overlay.png", scale=10)
    assert Image.open(tmp_path / "overlay.png").size == (90, 60)  # (width, height)
    assert_not_constant(png)
    assert pixels(overlay_attention(torch.rand(8, 8), torch.rand(2, 2))).shape == (256, 256, 3)


def test_overlay_blends_image_and_attention():
    image = np.zeros((4, 4), dtype=np.uint8)
    image[:, 2:] = 255  # left half black, right half white
    plain = pixels(overlay_attention(image, torch.zeros(2, 2), alpha=0.0, scale=2))
    np.testing.assert_array_equal(plain[:, :4], 0)
    np.testing.assert_array_equal(plain[:, 4:], 255)

    attention = torch.tensor([[1.0, 0.0], [0.0, 0.0]])  # attends to the top-left corner
    heat = pixels(overlay_attention(np.zeros((8, 8)), attention, alpha=1.0, scale=1, cmap="gray"))
    assert heat[0, 0].tolist() == [255, 255, 255]  # cmap(1.0) where attention is highest
    assert heat[7, 7].tolist() == [0, 0, 0]
    assert heat[0, 0, 0] > heat[3, 3, 0] > heat[7, 7, 0]  # bilinear fall-off


def test_overlay_accepts_channel_first_and_last():
    rgb, attention = torch.rand(3, 5, 5), torch.rand(2, 2)
    first = pixels(overlay_attention(rgb, attention, scale=2))
    last = pixels(overlay_attention(rgb.permute(1, 2, 0).numpy(), attention, scale=2))
    assert first.shape == (10, 10, 3)
    np.testing.assert_array_equal(first, last)
    with pytest.raises(ValueError, match="image"):
        overlay_attention(torch.rand(2, 5, 5), torch.rand(2, 2))
    with pytest.raises(ValueError, match="alpha"):
        overlay_attention(torch.rand(5, 5), torch.rand(2, 2), alpha=1.5)


def test_matplotlib_is_imported_lazily():
    code = (
        "import sys, attnkit.explain.heatmaps, attnkit.explain.sections, attnkit.explain.html, attnkit.explain.colours,"
        "attnkit.explain.figures, attnkit.explain.textfigure, attnkit.explain.captions;"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported at module level'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
