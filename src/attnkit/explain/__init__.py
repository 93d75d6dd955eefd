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
    **dict.fromkeys(["Section", "render_report", "write_report"], "html"),
    **dict.fromkeys(["alignment_section", "han_section", "pooling_section", "transformer_section"], "sections"),
    "visual_section": "sections",
    **dict.fromkeys(["alignment_figure", "alignment_heatmap", "layer_head_figure", "layer_head_grid"], "heatmaps"),
    **dict.fromkeys(["overlay_attention", "upsample_attention"], "heatmaps"),
    "shaded_text_figure": "textfigure",
    "save_figures": "figures",
    "attention_rollout": "rollout",
    "attention_flow": "faithfulness.methods",
    "faithfulness_of": "faithfulness.evaluate",
    "faithfulness_panel": "faithfulness.panel",
    **dict.fromkeys(["permutation_test", "uniform_accuracy_difference"], "faithfulness.baselines"),
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
