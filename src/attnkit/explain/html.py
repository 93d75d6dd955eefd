"""Self-contained HTML reports: shaded tokens, prediction headers, and the page that holds the sections.

A report is one file with inline CSS and images inlined as ``data:image/png;base64`` URIs: no script, no CDN, no
request of any kind, so it opens offline. A Content-Security-Policy meta tag forbids scripts and remote loads as
a second line of defence; the first is that **every piece of input text is HTML-escaped** (tokens, labels,
titles), so a ``<script>`` in a review is shown as text.

How weight maps to shading (what tests and readers can rely on):
    A "row" is the set of weights one distribution produced: the words of one sentence, the sentences of one
    document, or the tokens of one pooling head. Within a row,

        intensity = weight / max(weights in the row)            (0 for every element when the max is 0)
        background-color = colours.css_rgb(intensity)           (the house colour map, as in every heatmap)
        color = colours.text_colour(intensity)                  (black or white, whichever reads better)

    Every shaded element carries ``data-weight`` (the given weight, 6 significant digits) and
    ``data-intensity``; tokens have class ``attn-token``, sentences ``attn-sentence``. A token made only of
    whitespace is shown with visible glyphs (``␣`` for a space). Every shaded section carries a colour scale
    (class ``attn-scale``) and a caption (class ``attn-caption``) saying what its shading means.
"""

from __future__ import annotations

import base64
import html
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from attnkit.explain import colours
from attnkit.explain._files import write_atomic
from attnkit.explain._ticks import visible
from attnkit.explain._weights import WeightsLike, as_weights

__all__ = [
    "UNKNOWN_NOTE",
    "ReportPath",
    "Section",
    "caption_html",
    "colour_scale_html",
    "png_data_uri",
    "prediction_html",
    "render_report",
    "row_intensities",
    "shaded_span",
    "write_report",
]


@dataclass(frozen=True)
class Section:
    """One part of a report: a plain-text ``title`` (escaped when rendered) and a trusted HTML ``body`` built by
    ``attnkit.explain`` (which escapes its inputs); never put unescaped user text in ``body``."""

    title: str
    body: str


def escape(text: object) -> str:
    """HTML-escape any value's ``str`` for use in text or a quoted attribute (``<``, ``>``, ``&``, quotes)."""
    return html.escape(str(text), quote=True)


def row_intensities(weights: torch.Tensor) -> torch.Tensor:
    """``[T]`` non-negative weights -> ``[T]`` intensities ``weight / max weight`` (all 0 when the max is 0)."""
    top = weights.max() if weights.numel() else torch.tensor(0.0)
    if top <= 0:
        return torch.zeros_like(weights)
    return weights / top


def shaded_span(
    text: str, weight: float, intensity: float, *, css_class: str = "attn-token", extra_attributes: str = ""
) -> str:
    """One shaded element: escaped ``text`` on the house colour of ``intensity``, in black or white text.

    ``text`` made only of whitespace is shown with visible glyphs (a space as ``␣``). ``extra_attributes``
    must be trusted markup (e.g. ``data-head="2"``).
    """
    shown = visible(text) if not str(text).strip() else str(text)
    attributes = (
        f'class="{css_class}" data-weight="{float(weight):.6g}" data-intensity="{float(intensity):.6g}" '
        f'title="weight {float(weight):.4f}" '
        f'style="background-color: {colours.css_rgb(intensity)}; color: {colours.text_colour(intensity)}"'
    )
    if extra_attributes:
        attributes += " " + extra_attributes
    return f"<span {attributes}>{escape(shown)}</span>"


def shaded_tokens(
    tokens: Sequence[str],
    weights: torch.Tensor,
    intensities: torch.Tensor | None = None,
    unknown: Sequence[bool] | None = None,
) -> str:
    """Space-separated ``attn-token`` spans for one row: ``tokens`` ``[T]`` and their weights ``[T]``, shaded by
    ``intensities [T]`` in [0, 1] (default: each weight against the row's largest). A token flagged in
    ``unknown [T]`` (read by the model as ``[UNK]``) also gets class ``attn-unk`` (a dotted underline) and says so
    in its tooltip."""
    intensities = row_intensities(weights) if intensities is None else intensities
    unknown = [False] * len(tokens) if unknown is None else list(unknown)
    return " ".join(
        shaded_span(token, weight, intensity, css_class="attn-token attn-unk", extra_attributes=_UNK_ATTRIBUTES)
        if is_unknown
        else shaded_span(token, weight, intensity)
        for token, weight, intensity, is_unknown in zip(
            tokens, weights.tolist(), intensities.tolist(), unknown, strict=True
        )
    )


UNKNOWN_NOTE = "A dotted underline marks a word the model does not know: it read it as [UNK]."
_UNK_ATTRIBUTES = 'data-unknown="true" aria-description="unknown to the model ([UNK])"'


def colour_scale_html(low: str, high: str) -> str:
    """The legend of a shaded section: the house colour map as a bar, ``low`` under its white end and ``high``
    under its dark end (both escaped), e.g. ``"0"`` and ``"the sentence's largest word weight"``."""
    return (
        '<div class="attn-scale" aria-label="colour scale">'
        f'<span class="attn-scale-end">{escape(low)}</span>'
        f'<span class="attn-scale-bar" style="background: {colours.css_gradient()}"></span>'
        f'<span class="attn-scale-end">{escape(high)}</span></div>'
    )


def caption_html(text: str) -> str:
    """A section's caption (escaped): what its pictures or its shading show for this kind of model."""
    return f'<p class="attn-caption">{escape(text)}</p>'


def png_data_uri(png: bytes) -> str:
    """``data:image/png;base64,...`` for PNG bytes, to inline an image in the page."""
    if not png.startswith(b"\x89PNG\r\n\x1a\n"):
        raise ValueError("png: the bytes are not a PNG image")
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def image_html(png: bytes, *, alt: str, caption: str | None = None) -> str:
    """An inlined PNG in a ``<figure>``, with escaped ``alt`` text and optional caption."""
    figure = f'<figure class="attn-figure"><img src="{png_data_uri(png)}" alt="{escape(alt)}">'
    if caption:
        figure += f"<figcaption>{escape(caption)}</figcaption>"
    return figure + "</figure>"


def prediction_html(label_names: Sequence[str], probabilities: WeightsLike, *, true_label: str | None = None) -> str:
    """The prediction (the most probable class) and a bar per class, most probable first: ``C`` names, ``[C]``
    probabilities (a leading batch of one is accepted), and an optional gold label shown beside the prediction."""
    probs = as_weights(probabilities, name="probabilities", ndim=1)  # [C]
    if len(label_names) != probs.shape[0]:
        raise ValueError(
            f"probabilities: {probs.shape[0]} value(s) for {len(label_names)} label name(s) in label_names"
        )
    if probs.shape[0] == 0:
        raise ValueError("probabilities: need at least one class")
    order = torch.argsort(probs, descending=True, stable=True).tolist()
    best = order[0]
    gold = "" if true_label is None else f' <span class="attn-gold">(true label: {escape(true_label)})</span>'
    bars = "".join(
        f'<div class="attn-prob" data-label="{escape(label_names[i])}" data-probability="{probs[i].item():.6g}">'
        f'<span class="attn-prob-name" title="{escape(label_names[i])}">{escape(label_names[i])}</span>'
        f'<span class="attn-prob-bar"><span style="width: {100 * min(probs[i].item(), 1.0):.1f}%"></span></span>'
        f'<span class="attn-prob-value">{probs[i].item():.3f}</span></div>'
        for i in order
    )
    return (
        f'<div class="attn-prediction"><p>Prediction: <strong class="attn-predicted">'
        f"{escape(label_names[best])}</strong> ({probs[best].item():.3f}){gold}</p>{bars}</div>"
    )


def render_report(sections: Sequence[Section], *, title: str) -> str:
    """The whole page: escaped ``title``, a note on the colour map, then each section (with its own caption)."""
    body = "\n".join(
        f'<section class="attn-section"><h2>{escape(section.title)}</h2>\n{section.body}\n</section>'
        for section in sections
    )
    return _PAGE.format(title=escape(title), css=_CSS, body=body)


class ReportPath(type(Path())):  # type: ignore[misc]  # the concrete Path class (PosixPath / WindowsPath)
    """The path of a written report, which a notebook (Jupyter, VS Code) shows inline: ``_repr_html_`` embeds the
    page in a sandboxed ``<iframe srcdoc>`` (its styles and content-security policy stay its own)."""

    def _repr_html_(self) -> str:
        page = self.read_text(encoding="utf-8")
        return (
            f'<iframe title="{html.escape(self.name)}" sandbox srcdoc="{html.escape(page, quote=True)}" '
            'style="width: 100%; height: 40rem; border: 1px solid #ddd"></iframe>'
        )


def write_report(path: str | os.PathLike[str], sections: Sequence[Section], *, title: str) -> ReportPath:
    """Render the page and write it to ``path`` atomically (UTF-8). Returns the absolute path written, as a
    :class:`ReportPath` (a ``Path`` that a notebook shows as the page itself)."""
    return ReportPath(write_atomic(path, render_report(sections, title=title).encode("utf-8")))


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="attnkit">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
<header><h1>{title}</h1>
<p class="attn-legend">One colour scale throughout: white where a model gave no attention, dark blue where it
gave the most. Each section says what it compares; hover a shaded word to read its weight.</p></header>
<main>
{body}
</main>
</body>
</html>
"""

_CSS = """
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1b1b;
       background: #ffffff; margin: 0 auto; max-width: 64rem; padding: 1.5rem; }
h1 { font-size: 1.5rem; margin: 0 0 .25rem; }
h2 { font-size: 1.15rem; margin: 0 0 .75rem; border-bottom: 1px solid #ddd; padding-bottom: .25rem; }
h3 { font-size: 1rem; margin: 1rem 0 .5rem; }
.attn-legend { color: #555; font-size: .85rem; margin: 0 0 1rem; }
.attn-section { margin: 0 0 2rem; }
.attn-prediction { margin: 0 0 1rem; }
.attn-prediction p { margin: 0 0 .4rem; }
.attn-gold { color: #555; }
.attn-prob { display: flex; align-items: center; gap: .5rem; font-size: .85rem; }
.attn-prob-name { width: 10rem; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.attn-prob-bar { width: 12rem; height: .6rem; background: #eee; border-radius: 3px; overflow: hidden; }
.attn-prob-bar span { display: block; height: 100%; background: #555; }
.attn-prob-value { font-variant-numeric: tabular-nums; }
.attn-document { line-height: 2; }
.attn-sentence-row { display: flex; align-items: baseline; gap: .6rem; margin: .15rem 0; }
.attn-sentence { flex: none; width: 3.2rem; text-align: right; font-size: .75rem; border-radius: 3px;
                 padding: 0 .3rem; font-variant-numeric: tabular-nums; }
.attn-words { flex: 1; }
.attn-row { line-height: 2; margin: .2rem 0; }
.attn-head { font-size: .75rem; color: #555; margin-right: .5rem; }
.attn-token { border-radius: 3px; padding: .1rem .15rem; }
.attn-caption { color: #444; font-size: .85rem; margin: .25rem 0 .5rem; max-width: 48rem; }
.attn-scale { display: flex; align-items: center; gap: .4rem; font-size: .75rem; color: #555; margin: .25rem 0 .75rem; }
.attn-scale-bar { display: inline-block; width: 10rem; height: .7rem; border: 1px solid #bbb; border-radius: 2px; }
.attn-figures { display: flex; flex-wrap: wrap; gap: 1rem; align-items: flex-start; }
.attn-figure { margin: 0; width: fit-content; }
.attn-figure img { max-width: 100%; height: auto; }
.attn-figure figcaption { font-size: .8rem; color: #555; text-align: center; }
.attn-empty { color: #777; font-style: italic; }
.attn-unk { text-decoration: underline dotted; text-underline-offset: .2em; }
"""
