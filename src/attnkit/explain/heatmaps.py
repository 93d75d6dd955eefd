"""PNG pictures of attention: alignment heatmaps, layer × head grids, and attention laid over an image.

Shape glossary:
    L  layers   H  heads   Tq  query (target) positions   Tk  key (source) positions
    h, w  attention grid   Hi, Wi  image pixels   C  image channels (1 or 3)

Every function returns the PNG as ``bytes`` and also writes it (atomically) to ``path`` when one is given.
matplotlib is used through its object API (no pyplot, no change to the caller's backend), and figures are saved
without ``bbox_inches="tight"``, so a PNG is exactly ``round(figsize × dpi)`` pixels. Colours are the house map
(:mod:`attnkit.explain.colours`) unless ``cmap`` names another, scaled from 0 to the largest weight. ``name`` is
the figure's name inside a :func:`attnkit.explain.figures.save_figures` block.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from attnkit.explain import colours, figures
from attnkit.explain._files import write_atomic
from attnkit.explain._ticks import LINE_HEIGHT, cut, plain, set_token_ticks, visible
from attnkit.explain._weights import WeightsLike, as_weights
from attnkit.explain.fonts import drawing_fonts, with_fallback_fonts

__all__ = [
    "alignment_figure",
    "alignment_heatmap",
    "layer_head_figure",
    "layer_head_grid",
    "overlay_attention",
    "upsample_attention",
]

PathLike = str | os.PathLike[str]
CELL_INCHES = 0.32
"""Room for one token along an alignment heatmap's axes (until the figure reaches ``MAX_INCHES``)."""
MAX_INCHES = 14.0
"""An alignment heatmap's largest side by default; longer token lists are labelled every n-th token."""
MAX_LABEL_CHARS = 24
"""Longer token labels are cut to this many characters (ending in "…") on the axes."""
GRID_LABEL_CHARS = 10
"""The same for the small cells of a layer × head grid."""


@with_fallback_fonts
def alignment_figure(
    weights: WeightsLike,
    source_tokens: Sequence[str],
    target_tokens: Sequence[str],
    *,
    title: str | None = None,
    figsize: tuple[float, float] | None = None,
    dpi: int = 100,
    cmap: str | None = None,
    xlabel: str = "source",
    ylabel: str = "target",
    colorbar_label: str = "attention weight",
):
    """The matplotlib ``Figure`` of :func:`alignment_heatmap` (same arguments), not yet drawn."""
    matrix = as_weights(weights, name="weights", ndim=2)  # [Tq, Tk]
    _check_labels(matrix.shape, target_tokens, source_tokens)
    if figsize is None:
        figsize = (
            min(MAX_INCHES, max(3.5, CELL_INCHES * len(source_tokens) + 2.2 + 0.07 * _longest(target_tokens))),
            min(MAX_INCHES, max(2.5, CELL_INCHES * len(target_tokens) + 1.6 + 0.07 * _longest(source_tokens))),
        )
    figure = _figure(figsize, dpi)
    axes = figure.add_subplot()
    image = axes.imshow(matrix.numpy(), cmap=_cmap(cmap), vmin=0.0, vmax=_top(matrix), aspect="auto")
    width = figsize[0] - 1.6 - 0.07 * _longest(target_tokens)  # inches left for the matrix
    height = figsize[1] - 1.0 - 0.07 * _longest(source_tokens) - (0.3 if title else 0.0)
    set_token_ticks(axes, "x", source_tokens, fontsize=8, length_points=72 * width, limit=MAX_LABEL_CHARS)
    set_token_ticks(axes, "y", target_tokens, fontsize=8, length_points=72 * height, limit=MAX_LABEL_CHARS)
    axes.set_xlabel(plain(xlabel))
    axes.set_ylabel(plain(ylabel))
    if title:
        axes.set_title(plain(title))
    colorbar = figure.colorbar(image, ax=axes, fraction=0.05, pad=0.02)
    colorbar.set_label(plain(colorbar_label), fontsize=8)
    colorbar.ax.tick_params(labelsize=7)
    return figure


def alignment_heatmap(
    weights: WeightsLike,
    source_tokens: Sequence[str],
    target_tokens: Sequence[str],
    *,
    path: PathLike | None = None,
    title: str | None = None,
    figsize: tuple[float, float] | None = None,
    dpi: int = 100,
    cmap: str | None = None,
    xlabel: str = "source",
    ylabel: str = "target",
    colorbar_label: str = "attention weight",
    name: str = "alignment",
) -> bytes:
    """The PNG of a seq2seq alignment matrix: source tokens along x, target tokens down y (Bahdanau et al. Fig. 3).

    ``weights`` is ``[Tq, Tk]`` (target × source; an ``AttentionOutput`` or a leading batch of one is accepted).
    By default ``figsize`` grows with the tokens (0.32 inch a token, at most 14 inches); token labels follow
    :mod:`attnkit.explain._ticks`.
    """
    figure = alignment_figure(
        weights,
        source_tokens,
        target_tokens,
        title=title,
        figsize=figsize,
        dpi=dpi,
        cmap=cmap,
        xlabel=xlabel,
        ylabel=ylabel,
        colorbar_label=colorbar_label,
    )
    return _save(figure, path, dpi, name)


@with_fallback_fonts
def layer_head_figure(
    layers: Sequence[WeightsLike] | torch.Tensor,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    *,
    title: str | None = None,
    cell_inches: float | None = None,
    dpi: int = 100,
    cmap: str | None = None,
    xlabel: str = "key token",
    ylabel: str = "query token",
):
    """The matplotlib ``Figure`` of :func:`layer_head_grid` (same arguments), not yet drawn."""
    if isinstance(layers, torch.Tensor) and layers.dim() == 4:
        layers = list(layers)
    stack = [as_weights(layer, name=f"layers[{index}]", ndim=3) for index, layer in enumerate(layers)]
    if not stack:
        raise ValueError("layers: need at least one layer")
    for index, layer in enumerate(stack):
        if layer.shape != stack[0].shape:
            raise ValueError(f"layers[{index}]: shape {tuple(layer.shape)} differs from {tuple(stack[0].shape)}")
    weights = torch.stack(stack)  # [L, H, Tq, Tk]
    num_layers, num_heads = weights.shape[:2]
    _check_labels(weights.shape[-2:], query_tokens, key_tokens)
    if cell_inches is None:  # big enough to label every token at 7 points, between 1.7 and 4 inches a cell
        needed = max(len(query_tokens), len(key_tokens)) * LINE_HEIGHT * 7 * 1.02 / (72 * 0.75)
        cell_inches = min(max(1.7, math.ceil(needed * 10) / 10), 4.0)  # tenths: a whole pixel count at any dpi
    figsize = (num_heads * cell_inches + 1.2, num_layers * cell_inches + 0.8)  # labels are small: no extra room
    figure = _figure(figsize, dpi)
    grid = figure.subplots(num_layers, num_heads, squeeze=False)
    top = _top(weights)
    cell_points = 72 * 0.75 * cell_inches  # a cell's side once titles and labels have taken their share
    image = None
    for layer in range(num_layers):
        for head in range(num_heads):
            axes = grid[layer][head]
            image = axes.imshow(weights[layer, head].numpy(), cmap=_cmap(cmap), vmin=0.0, vmax=top, aspect="auto")
            axes.set_title(f"layer {layer + 1} · head {head + 1}", fontsize=7)
            axes.set_xticks([])
            axes.set_yticks([])
            if head == 0:
                set_token_ticks(axes, "y", query_tokens, fontsize=7, length_points=cell_points, limit=GRID_LABEL_CHARS)
            if layer == num_layers - 1:
                set_token_ticks(axes, "x", key_tokens, fontsize=7, length_points=cell_points, limit=GRID_LABEL_CHARS)
    if title:
        figure.suptitle(plain(title), fontsize=10)
    figure.supxlabel(plain(xlabel), fontsize=8)
    figure.supylabel(plain(ylabel), fontsize=8)
    colorbar = figure.colorbar(image, ax=grid, fraction=0.03, pad=0.02)
    colorbar.set_label("attention weight", fontsize=8)
    colorbar.ax.tick_params(labelsize=7)
    return figure


def layer_head_grid(
    layers: Sequence[WeightsLike] | torch.Tensor,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    *,
    path: PathLike | None = None,
    title: str | None = None,
    cell_inches: float | None = None,
    dpi: int = 100,
    cmap: str | None = None,
    xlabel: str = "key token",
    ylabel: str = "query token",
    name: str = "layers-and-heads",
) -> bytes:
    """The PNG of every layer and head of a Transformer attention: one row per layer, one column per head.

    ``layers`` is one ``[H, Tq, Tk]`` tensor per layer (first layer first) or one ``[L, H, Tq, Tk]`` tensor. The
    figure is ``(H·cell + 1.2) × (L·cell + 0.8)`` inches; by default a cell grows so every token is labelled
    (1.7 to 4 inches; past ~25 tokens every n-th). All cells share one colour scale.
    """
    figure = layer_head_figure(
        layers,
        query_tokens,
        key_tokens,
        title=title,
        cell_inches=cell_inches,
        dpi=dpi,
        cmap=cmap,
        xlabel=xlabel,
        ylabel=ylabel,
    )
    return _save(figure, path, dpi, name)


def upsample_attention(attention: WeightsLike, size: tuple[int, int]) -> torch.Tensor:
    """Resize an attention grid ``[h, w]`` to ``size = (Hi, Wi)`` bilinearly (``align_corners=False``): ``[Hi, Wi]``
    float64. A constant grid stays constant; values stay within the grid's range."""
    grid = as_weights(attention, name="attention", ndim=2)  # [h, w]
    return F.interpolate(grid[None, None], size=tuple(size), mode="bilinear", align_corners=False)[0, 0]


def overlay_attention(
    image: torch.Tensor | np.ndarray,
    attention: WeightsLike,
    *,
    path: PathLike | None = None,
    scale: int | None = None,
    alpha: float = 0.5,
    cmap: str | None = None,
    name: str = "overlay",
) -> bytes:
    """Lay an attention map ``[h, w]`` over the image it attended to (Xu et al. 2015 style): PNG bytes of exactly
    ``Hi·scale × Wi·scale`` pixels.

    ``image`` is ``[Hi, Wi]``, ``[C, Hi, Wi]`` or ``[Hi, Wi, C]`` with C = 1, 3 or 4 (alpha dropped); uint8 is read
    as 0..255, floats are stretched from their min to their max. The image is enlarged ``scale`` times (by default
    until the longer side is at least 256 pixels), the attention upsampled to it and blended:
    ``pixel = (1 - alpha) · image + alpha · cmap(attention / max attention)``.
    """
    from matplotlib.image import imsave

    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha: expected a value in [0, 1], got {alpha}")
    rgb = _image_rgb(image)  # [Hi, Wi, 3]
    height, width = rgb.shape[:2]
    if scale is None:
        scale = max(1, math.ceil(256 / max(height, width)))
    if scale < 1:
        raise ValueError(f"scale: expected a positive integer, got {scale}")
    rgb = rgb.repeat(scale, axis=0).repeat(scale, axis=1)  # [Hi·s, Wi·s, 3]
    heat = upsample_attention(attention, (height * scale, width * scale))  # [Hi·s, Wi·s]
    heat = (heat / _top(heat)).clamp(0.0, 1.0).numpy()
    colours = _cmap(cmap)(heat)[..., :3]  # [Hi·s, Wi·s, 3]
    blended = np.clip((1.0 - alpha) * rgb + alpha * colours, 0.0, 1.0)
    buffer = io.BytesIO()
    imsave(buffer, blended, format="png")
    figures.add_image(name, blended)
    return _finish(buffer.getvalue(), path)


def _image_rgb(image: torch.Tensor | np.ndarray) -> np.ndarray:
    """Any supported image layout -> ``[Hi, Wi, 3]`` float64 in [0, 1]."""
    array = image.detach().cpu().numpy() if isinstance(image, torch.Tensor) else np.asarray(image)
    is_bytes = array.dtype == np.uint8
    if array.ndim == 3 and array.shape[0] in (1, 3) and array.shape[-1] not in (1, 3, 4):
        array = np.moveaxis(array, 0, -1)  # [C, Hi, Wi] -> [Hi, Wi, C]
    if array.ndim == 3 and array.shape[-1] == 4:
        array = array[..., :3]
    if array.ndim == 3 and array.shape[-1] == 1:
        array = array[..., 0]
    if array.ndim == 2:
        array = np.stack([array] * 3, axis=-1)
    if array.ndim != 3 or array.shape[-1] != 3:
        raise ValueError(f"image: expected [Hi, Wi], [C, Hi, Wi] or [Hi, Wi, C] with C in 1, 3, 4; got {array.shape}")
    array = array.astype(np.float64)
    if not np.isfinite(array).all():
        raise ValueError("image: values must be finite")
    if is_bytes:
        return array / 255.0
    low, high = array.min(), array.max()
    return (array - low) / (high - low) if high > low else np.clip(array, 0.0, 1.0)


def _check_labels(shape: Sequence[int], row_tokens: Sequence[str], column_tokens: Sequence[str]) -> None:
    rows, columns = shape
    if len(row_tokens) != rows or len(column_tokens) != columns:
        raise ValueError(
            f"tokens: weights of shape {tuple(shape)} need {rows} row and {columns} column labels, "
            f"got {len(row_tokens)} and {len(column_tokens)}"
        )


def _longest(tokens: Sequence[str]) -> int:
    return max((len(cut(visible(token), MAX_LABEL_CHARS)) for token in tokens), default=0)


def _cmap(name: str | None):
    """A matplotlib colour map: ``name``, or the house map when ``None``."""
    if name is None:
        return colours.matplotlib_colormap()
    from matplotlib import colormaps

    return colormaps[name]


def _top(weights: torch.Tensor) -> float:
    """The colour scale's upper end: the largest weight, or 1 when all weights are 0."""
    top = float(weights.max()) if weights.numel() else 0.0
    return top if top > 0.0 else 1.0


def _figure(figsize: tuple[float, float], dpi: int):
    from matplotlib.figure import Figure

    return Figure(figsize=figsize, dpi=dpi, layout="constrained")


def _save(figure, path: PathLike | None, dpi: int, name: str) -> bytes:
    buffer = io.BytesIO()
    with drawing_fonts():
        figure.savefig(buffer, format="png", dpi=dpi)
    figures.add_figure(name, figure)  # after: drawing at the sink's dpi must not move what the page shows
    return _finish(buffer.getvalue(), path)


def _finish(png: bytes, path: PathLike | None) -> bytes:
    if path is not None:
        write_atomic(path, png)
    return png
