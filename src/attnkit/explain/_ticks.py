"""Token labels on the axes of a heatmap: whitespace made visible, characters upright, long lists thinned.

Rules (what tests and readers can rely on):
    - Whitespace is drawn as a visible glyph: space ``␣``, tab ``⇥``, newline ``↵``, no-break space ``⍽``; other
      unprintable characters as ``\\uXXXX``; the empty token as ``∅``. ``$`` is escaped so text is never mathtext.
    - Labels longer than the limit are cut and end in ``…``.
    - Row labels (y axis) are horizontal. Column labels (x axis) are horizontal when every shown label fits the
      space between two ticks; otherwise labels of two or more characters turn 90° and single characters stay
      upright.
    - When the axis is too short for every label at the font size, every n-th token is labelled (n as small as
      fits), starting with the first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["plain", "set_token_ticks", "visible"]

_VISIBLE = {" ": "␣", "\t": "⇥", "\n": "↵", "\u00a0": "⍽"}
CHARACTER_WIDTH = 0.62
"""Width of an average character in DejaVu Sans, in units of the font size."""
LINE_HEIGHT = 1.25
"""Room one label needs across its baseline, in units of the font size."""


def visible(token: object) -> str:
    """``token`` with whitespace and unprintable characters replaced by visible glyphs (see the module rules)."""
    text = str(token)
    if text == "":
        return "∅"
    return "".join(_VISIBLE.get(char, char if char.isprintable() else f"\\u{ord(char):04x}") for char in text)


def plain(text: object) -> str:
    """Text drawn as written: ``$`` escaped so matplotlib never reads "$5 or $10" as mathtext."""
    return str(text).replace("$", r"\$")


def cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the last one ``…`` when something was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def set_token_ticks(
    axes, axis: str, tokens: Sequence[object], *, fontsize: float, length_points: float, limit: int
) -> None:
    """Label ``axes``' ``axis`` (``"x"`` or ``"y"``) with ``tokens``, one tick per cell, following the module rules.

    ``length_points`` is the axis' length on the page in points (1/72 inch), which decides thinning and rotation;
    labels are cut to ``limit`` characters.
    """
    if axis not in ("x", "y"):
        raise ValueError(f"axis: expected 'x' or 'y', got {axis!r}")
    texts = [cut(visible(token), limit) for token in tokens]
    count = len(texts)
    if count == 0:
        (axes.set_xticks if axis == "x" else axes.set_yticks)([])
        return
    across = LINE_HEIGHT * fontsize  # a label's extent across its baseline
    step = max(1, math.ceil(count * across / max(length_points, 1.0)))
    positions = list(range(0, count, step))
    shown = [texts[i] for i in positions]
    if axis == "y":
        axes.set_yticks(positions, [plain(text) for text in shown], fontsize=fontsize)
        return
    spacing = length_points * step / count
    widest = max(len(text) for text in shown) * CHARACTER_WIDTH * fontsize
    upright = widest <= 0.9 * spacing  # else turned: then each needs `across`, which a single character fits
    axes.set_xticks(positions, [plain(text) for text in shown], fontsize=fontsize)
    for label, text in zip(axes.get_xticklabels(), shown, strict=True):
        label.set_rotation(0 if upright or len(text) <= 1 else 90)
