"""Shaded text as a figure, for papers: the words of a HAN document or the tokens of each pooling head, on the
house colour map, with a colour bar. The HTML page shades live text instead; this figure is drawn only when
:func:`attnkit.explain.figures.save_figures` keeps figures.

Shape glossary:
    R  rows (sentences or heads)   T  tokens of a row
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from attnkit.explain import colours
from attnkit.explain._ticks import plain, visible
from attnkit.explain.fonts import with_fallback_fonts
from attnkit.explain.html import row_intensities

__all__ = ["shaded_text_figure"]

MARGIN = 10.0  # points around the text
GAP = 4.0  # points between two tokens
LINE = 1.9  # line height, in font sizes
LABEL_WIDTH = 44.0  # points reserved for a row's label ("head 2", or a sentence weight)


@with_fallback_fonts
def shaded_text_figure(
    rows: Sequence[Sequence[str]],
    weights: Sequence[torch.Tensor],
    *,
    markers: torch.Tensor | None = None,
    intensities: Sequence[torch.Tensor] | None = None,
    title: str | None = None,
    scale_label: str = "the row's largest weight",
    width_inches: float = 7.0,
    fontsize: float = 10.0,
    dpi: int = 100,
):
    """A matplotlib ``Figure`` of ``R`` shaded rows of tokens, each with ``[T]`` weights, wrapped to ``width_inches``.

    ``intensities`` (``R`` tensors ``[T]`` in [0, 1]) override the default shading, each row against its own largest
    weight. ``markers`` (``[R]`` sentence weights) are drawn before each row; without them a row is labelled
    "head r". ``scale_label`` is what the colour bar's dark end (1) stands for.
    """
    if len(rows) != len(weights):
        raise ValueError(f"weights: {len(weights)} row(s) for {len(rows)} row(s) of tokens")
    shades = [row_intensities(row) for row in weights] if intensities is None else list(intensities)
    placed, right, bottom = _layout(rows, shades, markers, title, wrap_points=72 * width_inches, fontsize=fontsize)
    return _draw(placed, right, bottom, scale_label=scale_label, fontsize=fontsize, dpi=dpi)


Placed = tuple[float, float, str, float, bool]  # x, y (points from the top), text, intensity, label?


def _text_width(text: str, size: float) -> float:
    """The width in points of ``text`` set at ``size`` points."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import text_to_path

    return text_to_path.get_text_width_height_descent(text, FontProperties(size=size), ismath=False)[0]


def _layout(
    rows: Sequence[Sequence[str]],
    shades: Sequence[torch.Tensor],
    markers: torch.Tensor | None,
    title: str | None,
    *,
    wrap_points: float,
    fontsize: float,
) -> tuple[list[Placed], float, float]:
    """Where each piece of text goes: the title, each row's label and its tokens wrapped at ``wrap_points``; with
    the rightmost and the lowest point the text reaches."""
    placed: list[Placed] = []
    marker_intensity = row_intensities(markers) if markers is not None else None
    y, right = MARGIN + fontsize, 0.0
    if title:
        placed.append((MARGIN, y, title, 0.0, True))
        right = MARGIN + _text_width(plain(title), 0.8 * fontsize)
        y += LINE * fontsize * 1.15
    for index, tokens in enumerate(rows):  # len(rows) == len(weights), checked by the caller
        if marker_intensity is not None:
            placed.append((MARGIN, y, f"{float(markers[index]):.2f}", float(marker_intensity[index]), False))
        else:
            placed.append((MARGIN, y, f"head {index + 1}", 0.0, True))
        x = MARGIN + LABEL_WIDTH
        for token, intensity in zip(tokens, shades[index].tolist(), strict=True):
            text = visible(token) if not str(token).strip() else str(token)
            width = _text_width(text, fontsize)
            if x + width > wrap_points - MARGIN and x > MARGIN + LABEL_WIDTH:
                x, y = MARGIN + LABEL_WIDTH, y + LINE * fontsize
            placed.append((x, y, text, intensity, False))
            x += width + GAP + 0.4 * fontsize  # the box's padding on both sides
            right = max(right, x)
        y += LINE * fontsize * 1.15
    return placed, right, y


def _draw(placed: list[Placed], right: float, bottom: float, *, scale_label: str, fontsize: float, dpi: int):
    """The ``Figure`` of the placed text, with the colour bar and its caption below it."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure
    from matplotlib.font_manager import FontProperties

    bar_points, bar_width, bar_bottom = 48.0, 150.0, 24.0  # the bar's band, its length, its bottom edge
    caption = f"1 = {scale_label}"  # beside the bar, so a long label neither covers the 0 nor leaves the figure
    caption_font = FontProperties(size=0.75 * fontsize)
    caption_width = _text_width(plain(caption), 0.75 * fontsize)
    caption_x = MARGIN + bar_width + 0.6 * fontsize
    height_points = bottom + bar_points
    width_points = max(right + MARGIN, caption_x + caption_width + MARGIN)
    figure = Figure(figsize=(width_points / 72, height_points / 72), dpi=dpi)
    axes = figure.add_axes((0.0, 0.0, 1.0, 1.0))
    axes.set_xlim(0.0, width_points)
    axes.set_ylim(height_points, 0.0)  # y grows downwards, in points
    axes.set_axis_off()
    for x, y_text, text, intensity, is_label in placed:
        axes.text(x, y_text, plain(text), va="baseline", ha="left", **_style(intensity, is_label, fontsize))
    bar_box = (MARGIN / width_points, bar_bottom / height_points, bar_width / width_points, 9 / height_points)
    colour_bar = figure.colorbar(
        ScalarMappable(norm=Normalize(0.0, 1.0), cmap=colours.matplotlib_colormap()),
        cax=figure.add_axes(bar_box),
        orientation="horizontal",
    )
    colour_bar.set_ticks([0.0, 1.0], labels=["0", "1"], fontsize=0.75 * fontsize)
    middle = (bar_bottom + 4.5) / height_points
    options = {"va": "center", "ha": "left", "color": "#555555", "fontproperties": caption_font}
    figure.text(caption_x / width_points, middle, plain(caption), **options)
    return figure


def _style(intensity: float, is_label: bool, fontsize: float) -> dict:
    """Text options: a grey row label, or a token on its house colour in black or white."""
    if is_label:
        return {"color": "#555555", "fontsize": 0.8 * fontsize}
    box = {"boxstyle": "round,pad=0.2", "edgecolor": "none"}
    box["facecolor"] = colours.colour_table()[colours.colour_index(intensity)]
    return {"color": colours.text_colour(intensity), "fontsize": fontsize, "bbox": box}
