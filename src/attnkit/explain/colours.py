"""The one colour map of every attnkit picture: heatmaps, grids, rollout, image overlays and the HTML text shading.

A value ``v`` in [0, 1] (a weight divided by the largest weight it is compared with) is drawn with the colour
``TABLE[min(int(v · 256), 255)]`` (a 256-colour matplotlib ``ListedColormap``'s lookup), so a weight has the same
colour in a PNG heatmap and behind a word of the HTML page (which rounds ``v`` to 6 decimals first).

The map is a blue built in CIELAB: its lightness L* falls **linearly** from 100 (white: no attention) to 20 (dark
blue), so equal steps of weight look like equal steps of shade, the order survives greyscale printing and
colour-vision deficiencies, and zero weight leaves text unshaded. Chroma rises to a vivid middle and hue turns
from 250° to 290° to keep neighbouring values apart; every colour lies inside the sRGB gamut (checked).

Shape glossary:
    N  entries of the table (256)
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = [
    "COLOUR_MAP_NAME",
    "ENTRIES",
    "colour_index",
    "colour_of",
    "colour_table",
    "css_gradient",
    "css_rgb",
    "lightness",
    "matplotlib_colormap",
    "text_colour",
]

COLOUR_MAP_NAME = "attnkit-blue"
ENTRIES = 256
"""Colours in the table; values are quantised to ``1 / ENTRIES`` like matplotlib's colour maps."""
LIGHTNESS_RANGE = (100.0, 20.0)
"""CIELAB L* at value 0 and at value 1; linear in between."""
_CHROMA_PEAK, _CHROMA_END = 24.0, 44.0  # chroma(v) = 44·v + 24·sin(π·v): 0 at white, vivid mid-range
_HUE_RANGE = (250.0, 290.0)  # degrees in CIELAB's a*-b* plane


@functools.cache
def colour_table() -> np.ndarray:
    """The map as ``[N, 3]`` sRGB floats in [0, 1], white first, each an exact 8-bit value ``k / 255`` (so
    matplotlib's byte conversion and the page's ``rgb()`` give the same colour) (read-only)."""
    value = np.linspace(0.0, 1.0, ENTRIES)  # [N]
    start, end = LIGHTNESS_RANGE
    lightness_ = start + (end - start) * value
    chroma = _CHROMA_END * value + _CHROMA_PEAK * np.sin(np.pi * value)
    hue = np.deg2rad(_HUE_RANGE[0] + (_HUE_RANGE[1] - _HUE_RANGE[0]) * value)
    linear = _lab_to_linear_rgb(lightness_, chroma * np.cos(hue), chroma * np.sin(hue))  # [N, 3]
    if linear.min() < -1e-4 or linear.max() > 1 + 1e-4:
        raise RuntimeError("colour map: a colour falls outside the sRGB gamut")
    table = np.round(_encode_srgb(np.clip(linear, 0.0, 1.0)) * 255) / 255  # 8-bit exact: PNG and HTML agree
    table.setflags(write=False)
    return table


def colour_index(value: float) -> int:
    """The table row drawn for ``value`` (clipped to [0, 1]): ``min(int(value · N), N - 1)``, with ``value``
    first rounded to 6 decimals so float32 noise (0.3 / 0.4 = 0.74999999) does not step down a colour."""
    clipped = min(max(round(float(value), 6), 0.0), 1.0)
    return min(int(clipped * ENTRIES), ENTRIES - 1)


def colour_of(value: float) -> tuple[int, int, int]:
    """The 8-bit sRGB colour drawn for ``value`` in [0, 1], e.g. ``(255, 255, 255)`` for 0."""
    return _colour_at(colour_index(value))


@functools.cache
def _colour_at(index: int) -> tuple[int, int, int]:
    """Row ``index`` of the table in 8 bits (cached: a report shades thousands of tokens from 256 rows)."""
    red, green, blue = np.round(colour_table()[index] * 255).astype(int).tolist()
    return red, green, blue


def css_rgb(value: float) -> str:
    """``rgb(R, G, B)`` for ``value``, as written in the HTML page."""
    return "rgb({}, {}, {})".format(*colour_of(value))


def text_colour(value: float) -> str:
    """``#000000`` or ``#ffffff``: whichever contrasts more with :func:`colour_of` ``(value)`` (WCAG ratio)."""
    return _text_colour_at(colour_index(value))


@functools.cache
def _text_colour_at(index: int) -> str:
    luminance = float(_relative_luminance(np.array(_colour_at(index)) / 255.0))
    on_black = (luminance + 0.05) / 0.05
    on_white = 1.05 / (luminance + 0.05)
    return "#000000" if on_black >= on_white else "#ffffff"


def css_gradient(stops: int = 11) -> str:
    """A CSS ``linear-gradient`` (left = 0, right = 1) through ``stops`` evenly spaced colours of the map."""
    if stops < 2:
        raise ValueError(f"stops: need at least 2, got {stops}")
    parts = [f"{css_rgb(i / (stops - 1))} {100 * i / (stops - 1):.0f}%" for i in range(stops)]
    return "linear-gradient(to right, " + ", ".join(parts) + ")"


def matplotlib_colormap():
    """The map as a matplotlib ``ListedColormap`` named ``attnkit-blue`` (imports matplotlib)."""
    return _listed_colormap()


@functools.cache
def _listed_colormap():
    from matplotlib.colors import ListedColormap

    return ListedColormap(colour_table(), name=COLOUR_MAP_NAME)


def lightness(rgb: np.ndarray) -> np.ndarray:
    """CIELAB L* (0..100) of sRGB colours ``[..., 3]`` in [0, 1] (D65 white)."""
    luminance = _relative_luminance(np.asarray(rgb, dtype=np.float64))
    return np.where(luminance > (6 / 29) ** 3, 116 * np.cbrt(luminance) - 16, luminance * (29 / 3) ** 3)


def _relative_luminance(rgb: np.ndarray) -> np.ndarray:
    """Y of sRGB colours ``[..., 3]`` in [0, 1]."""
    return _decode_srgb(rgb) @ np.array([0.2126729, 0.7151522, 0.0721750])


def _decode_srgb(rgb: np.ndarray) -> np.ndarray:
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def _encode_srgb(linear: np.ndarray) -> np.ndarray:
    return np.where(linear <= 0.0031308, 12.92 * linear, 1.055 * linear ** (1 / 2.4) - 0.055)


def _lab_to_linear_rgb(lightness_: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """CIELAB (D65) ``[N]`` × 3 -> linear sRGB ``[N, 3]`` (may fall outside [0, 1] when out of gamut)."""
    fy = (lightness_ + 16) / 116
    f = np.stack([fy + a / 500, fy, fy - b / 200], axis=-1)  # [N, 3]
    xyz = np.where(f > 6 / 29, f**3, 3 * (6 / 29) ** 2 * (f - 4 / 29)) * np.array([0.95047, 1.0, 1.08883])
    to_rgb = np.array(
        [[3.2404542, -1.5371385, -0.4985314], [-0.9692660, 1.8760108, 0.0415560], [0.0556434, -0.2040259, 1.0572252]]
    )
    return xyz @ to_rgb.T  # [N, 3]
