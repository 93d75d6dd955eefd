"""The comprehensiveness / sufficiency curves of a report's faithfulness panel as inline SVG (layer 5).

Written by hand rather than drawn with matplotlib because a report draws one chart per document: matplotlib took
~1.5 s of CPU per chart (its layout engine and PNG encoding), which made ``explain --faithfulness`` on 50 reviews
spend most of its time on pictures; these few polylines cost well under a millisecond, stay sharp at any zoom and
keep the page self-contained. ``--save-figures`` still gets matplotlib's PNG/SVG (:func:`panel.curves_figure`).

Each chart: x is the erased share k % on a log scale (1, 5, 10, 20, 50), y the drop in p(label); one polyline per
method (``data-method`` names it), random dashed grey, a line at 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from attnkit.explain.faithfulness.erasure import PERCENTS
from attnkit.explain.faithfulness.methods import is_floor
from attnkit.explain.faithfulness.results import DocumentFaithfulness
from attnkit.explain.html import escape

__all__ = ["COLOURS", "curves_svg", "polyline_points"]

WIDTH, HEIGHT = 340, 190
LEFT, RIGHT, TOP, BOTTOM = 46, 10, 22, 34  # margins around the plotting area
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
TITLES = (("comprehensiveness", "higher: faithful"), ("sufficiency", "lower: faithful"))


def polyline_points(values: Sequence[float], low: float, high: float) -> list[tuple[float, float]]:
    """Pixel ``(x, y)`` of ``values`` (one per :data:`PERCENTS`) inside a chart whose y axis runs ``low..high``:
    x log-spaced from the left margin to the right one, y from the bottom margin (``low``) to the top (``high``)."""
    first, last = math.log10(PERCENTS[0]), math.log10(PERCENTS[-1])
    width, height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    span = (high - low) or 1.0
    return [
        (LEFT + width * (math.log10(p) - first) / (last - first), TOP + height * (high - value) / span)
        for p, value in zip(PERCENTS, values, strict=True)
    ]


def _chart(curves: Mapping[str, list[float]], title: str, note: str) -> str:
    values = [v for series in curves.values() for v in series]
    low, high = min(0.0, *values), max(0.0, *values)
    if high - low < 1e-9:
        high = low + 0.1
    margin = 0.05 * (high - low)
    low, high = low - margin, high + margin
    parts = [
        f'<svg class="attn-curves" data-curve="{escape(title)}" xmlns="http://www.w3.org/2000/svg" '
        f'width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(title)} against the erased share of tokens">',
        f'<text x="{WIDTH / 2:.1f}" y="14" text-anchor="middle" font-size="11">{escape(title)} ({escape(note)})</text>',
    ]
    zero = polyline_points([0.0] * len(PERCENTS), low, high)
    parts.append(_line(zero, 'stroke="#bbb" stroke-width="0.8"'))
    for (x, _), percent in zip(zero, PERCENTS, strict=True):
        parts.append(
            f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 14}" text-anchor="middle" font-size="9">{percent}%</text>'
        )
    parts.append(
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.1f}" y="{HEIGHT - 4}" text-anchor="middle" font-size="9">'
        "top k % of tokens</text>"
    )
    for value, y in ((high, TOP), (low, HEIGHT - BOTTOM)):
        parts.append(f'<text x="{LEFT - 4}" y="{y + 3}" text-anchor="end" font-size="9">{value:.2f}</text>')
    for index, (name, series) in enumerate(curves.items()):
        style = (
            'stroke="#666" stroke-dasharray="4 3"'
            if is_floor(name)
            else f'stroke="{COLOURS[index % len(COLOURS)]}" stroke-width="1.6"'
        )
        parts.append(_line(polyline_points(series, low, high), style, method=name))
    parts.append("</svg>")
    return "".join(parts)


def _line(points: list[tuple[float, float]], style: str, *, method: str | None = None) -> str:
    named = f' data-method="{escape(method)}"' if method is not None else ""
    coordinates = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    return (
        f'<polyline{named} fill="none" {style} points="{coordinates}"><title>{escape(method or "0")}</title></polyline>'
    )


def curves_svg(result: DocumentFaithfulness) -> str:
    """Two inline SVG charts — comprehensiveness and sufficiency against k % — and a legend, for one document."""
    charts = []
    for field, note in TITLES:
        curves = {
            name: [getattr(found, field)[str(p)] for p in PERCENTS] for name, found in result.methods.items()
        }  # method -> [K]
        charts.append(_chart(curves, field, note))
    legend = " ".join(
        f'<span class="attn-legend" data-method="{escape(name)}" style="color:'
        f'{"#666" if is_floor(name) else COLOURS[index % len(COLOURS)]}">'
        f"{'- -' if name == 'random' else '—'} {escape(name.replace('_', ' '))}</span>"
        for index, name in enumerate(result.methods)
    )
    return (
        f'<figure class="attn-figure attn-faithfulness-curves">{"".join(charts)}'
        f"<figcaption>drop in p({escape(result.label)}) · {legend}</figcaption></figure>"
    )
