"""The faithfulness panel of a report's document (layer 5): one plain sentence, the tokens shaded by attention
(and rollout, where an encoder mixes them), integrated gradients and leave-one-out side by side in the one colour
map, the comprehensiveness / sufficiency curves of each method against random (inline SVG; ``--save-figures`` also
keeps matplotlib's ``NN-faithfulness-curves``), and a small table of the metrics.

Shape glossary:
    T  tokens   K  erasure sizes
"""

from __future__ import annotations

import io

import torch

from attnkit.explain import figures
from attnkit.explain.faithfulness.curves_svg import curves_svg
from attnkit.explain.faithfulness.erasure import PERCENTS
from attnkit.explain.faithfulness.methods import METHODS, is_floor
from attnkit.explain.faithfulness.results import DocumentFaithfulness
from attnkit.explain.faithfulness.table import erasure_sentence
from attnkit.explain.html import caption_html, colour_scale_html, escape, shaded_tokens

__all__ = ["CAPTION", "SHADED_METHODS", "curves_figure", "faithfulness_panel"]

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
    head = "<tr><th>method</th><th>AOPC comprehensiveness</th><th>AOPC sufficiency</th><th>flip fraction</th></tr>"
    rows = "".join(
        f'<tr data-method="{escape(name)}"><td>{escape(name.replace("_", " "))}</td>'
        f"<td>{found.aopc_comprehensiveness:.3f}</td><td>{found.aopc_sufficiency:.3f}</td>"
        f"<td>{found.flip_fraction:.2f}</td></tr>"
        for name, found in result.methods.items()
    )
    table = f'<table class="attn-faithfulness-table">{head}{rows}</table>'
    integrated = result.methods.get("integrated_gradients")
    if integrated is None or integrated.convergence_delta is None:
        return table
    note = (
        f"Completeness delta of integrated gradients: {integrated.convergence_delta:.1e} "
        f"(|sum of its scores − (p({result.label}) at the input − at the zero embedding)|; more --steps make it "
        "smaller)."
    )
    return table + "\n" + f'<p class="attn-faithfulness-delta">{escape(note)}</p>'
