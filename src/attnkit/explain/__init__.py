"""Pictures and reports of what a model attended to (layer 5). matplotlib is imported lazily.

- :mod:`attnkit.explain.sections`: one report section per model kind (HAN, pooled classifier, seq2seq alignment,
  Transformer layers/heads + rollout, visual attention over an image).
- :mod:`attnkit.explain.html`: the page (``write_report``), shading rules, escaping.
- :mod:`attnkit.explain.heatmaps`: PNG heatmaps and image overlays; :mod:`attnkit.explain.textfigure`: shaded text
  as a figure, for papers.
- :mod:`attnkit.explain.colours`: the one colour map of every picture and of the HTML shading.
- :mod:`attnkit.explain.captions`: what each kind of section shows, in words.
- :mod:`attnkit.explain.figures`: ``save_figures(DIR)``, keeping every figure drawn as PNG + SVG files.
- :mod:`attnkit.explain.rollout`: attention rollout.
- :mod:`attnkit.explain.faithfulness`: does the attention explain the prediction? Erasure metrics, gradient and
  leave-one-out attributions, attention flow, the permutation and uniform-attention baselines.

The names below are re-exported lazily: ``import attnkit.explain`` loads nothing until one is used.
"""

from __future__ import annotations

from attnkit.explain._lazy import lazy_exports

_EXPORTS = {
    "Section": "html",
    "render_report": "html",
    "write_report": "html",
    "han_section": "sections",
    "pooling_section": "sections",
    "alignment_section": "sections",
    "transformer_section": "sections",
    "visual_section": "sections",
    "alignment_figure": "heatmaps",
    "alignment_heatmap": "heatmaps",
    "layer_head_figure": "heatmaps",
    "layer_head_grid": "heatmaps",
    "shaded_text_figure": "textfigure",
    "save_figures": "figures",
    "overlay_attention": "heatmaps",
    "upsample_attention": "heatmaps",
    "attention_rollout": "rollout",
    "attention_flow": "faithfulness.methods",
    "faithfulness_of": "faithfulness.evaluate",
    "faithfulness_panel": "faithfulness.panel",
    "permutation_test": "faithfulness.baselines",
    "uniform_accuracy_difference": "faithfulness.baselines",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
