"""The faithfulness panel of a report's document (layer 5): one plain sentence, the tokens shaded by attention
(and rollout, where an encoder mixes them), integrated gradients and leave-one-out side by side in the one colour
map, the comprehensiveness / sufficiency curves of each method against random (inline SVG; ``--save-figures`` also
keeps matplotlib's ``NN-faithfulness-curves``), and a small table of the metrics.

The curves' SVG is written by hand, not drawn with matplotlib, because a report draws one chart per document and
matplotlib is far slower; ``--save-figures`` still gets matplotlib's (:func:`curves_figure`). Each chart: x is the
erased share k % on a log scale, y the drop in p(label); one polyline per method (``data-method``), random dashed.

Shape glossary:
    T  tokens   K  erasure sizes
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence

import torch

from attnkit.explain import figures
from attnkit.explain.faithfulness.erasure import PERCENTS
from attnkit.explain.faithfulness.methods import METHODS, STEPS_CAP, TOLERANCE, is_floor
from attnkit.explain.faithfulness.results import DocumentFaithfulness, erasure_sentence
from attnkit.explain.html import caption_html, colour_scale_html, escape, shaded_tokens

__all__ = [
    "CAPTION",
    "COLOURS",
    "SHADED_METHODS",
    "curves_figure",
    "curves_svg",
    "faithfulness_panel",
    "polyline_points",
]

SHADED_METHODS = tuple(name for name, method in METHODS.items() if method.shaded)
CAPTION = (
    "Does the attention explain this prediction? Each row shades the tokens by one method, relative to that "
    "row's largest score (scores against the prediction are left white). The curves erase each method's top k % "
    "of the tokens (comprehensiveness: how much p(label) drops; higher is more faithful) or keep only them "
    "(sufficiency: how much it drops; lower is better). A method is only as good as its distance from random."
)
ROLLOUT_NOTE = (
    "The pooling weighs states the Transformer encoder has already mixed; rollout and flow follow the mixing "
    "down to the input tokens."
)


def faithfulness_panel(result: DocumentFaithfulness) -> str:
    """The panel's HTML for one document (trusted markup; every token and label is escaped)."""
    sentence = erasure_sentence(result)
    rows = []
    for method in SHADED_METHODS:
        if method not in result.methods:
            continue
        scores = torch.tensor(result.methods[method].scores, dtype=torch.float64).clamp_min(0.0)  # [T]
        rows.append(
            f'<div class="attn-row" data-method="{escape(method)}"><span class="attn-head">'
            f"{escape(method.replace('_', ' '))}</span>{shaded_tokens(result.tokens, scores)}</div>"
        )
    parts = [f'<div class="attn-faithfulness"><h3>Faithfulness (erase = {escape(result.erase)})</h3>']
    if sentence:
        parts.append(f'<p class="attn-faithfulness-sentence">{escape(sentence[0].upper() + sentence[1:])}.</p>')
    parts.append(caption_html(CAPTION))
    if "rollout" in result.methods:
        parts.append(caption_html(ROLLOUT_NOTE))
    parts.append(colour_scale_html("0", "the row's largest score"))
    parts.append('<div class="attn-rows">' + "\n".join(rows) + "</div>")
    if result.methods:
        parts.append(curves_svg(result))
        if figures.active():  # --save-figures keeps matplotlib's PNG/SVG; the page itself needs none
            curves_figure(result)
        else:
            figures.add_figure("faithfulness-curves", None)  # records the name for the save_figures warning
        parts.append(_metrics_table(result))
    parts.append("</div>")
    return "\n".join(parts)


def curves_figure(result: DocumentFaithfulness, *, dpi: int = 100) -> bytes:
    """PNG bytes of two panels — comprehensiveness and sufficiency against k % — one line per method, random
    dashed; the figure is also handed to an open ``save_figures`` block."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.5, 2.8), dpi=dpi, layout="constrained")
    axes = figure.subplots(1, 2, sharex=True)
    for name, found in result.methods.items():
        style = {"linestyle": "--", "color": "0.4"} if is_floor(name) else {"marker": "o", "markersize": 3}
        label = name.replace("_", " ")
        axes[0].plot(PERCENTS, [found.comprehensiveness[str(p)] for p in PERCENTS], label=label, **style)
        axes[1].plot(PERCENTS, [found.sufficiency[str(p)] for p in PERCENTS], label=label, **style)
    for ax, title in zip(axes, ("comprehensiveness (higher: faithful)", "sufficiency (lower: faithful)"), strict=True):
        ax.set_xscale("log")
        ax.set_xticks(PERCENTS, [f"{p}%" for p in PERCENTS])
        ax.set_xlabel("top k % of tokens")
        ax.set_title(title, fontsize=9)
        ax.axhline(0.0, color="0.8", linewidth=0.8)
    axes[0].set_ylabel(f"drop in p({result.label})")
    axes[1].legend(fontsize=7, loc="best")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    figures.add_figure("faithfulness-curves", figure)
    return buffer.getvalue()


def _metrics_table(result: DocumentFaithfulness) -> str:
    head = (
        "<tr><th>method</th><th>AOPC comprehensiveness</th><th>AOPC sufficiency</th><th>flip fraction</th>"
        "<th>support (tokens scored)</th></tr>"
    )
    rows = "".join(
        f'<tr data-method="{escape(name)}"><td>{escape(name.replace("_", " "))}</td>'
        f"<td>{found.aopc_comprehensiveness:.3f}</td><td>{found.aopc_sufficiency:.3f}</td>"
        f"<td>{found.flip_fraction:.2f}</td><td>{'–' if found.support is None else found.support}</td></tr>"
        for name, found in result.methods.items()
    )
    table = f'<table class="attn-faithfulness-table">{head}{rows}</table>'
    integrated = result.methods.get("integrated_gradients")
    if integrated is None or integrated.convergence_delta is None:
        return table
    steps = "" if integrated.steps is None else f" after {integrated.steps} steps"
    note = (
        f"Completeness delta of integrated gradients: {integrated.convergence_delta:.1e}{steps} "
        f"(|sum of its scores − (p({result.label}) at the input − at the zero embedding)|; the steps double until "
        f"it is within {TOLERANCE:.0%} of that change, up to {STEPS_CAP})."
    )
    if integrated.converged is False:
        note += " It did not get there: read integrated gradients' figures here with care."
    return table + "\n" + f'<p class="attn-faithfulness-delta">{escape(note)}</p>'


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
