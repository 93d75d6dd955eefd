"""Saved figures draw Chinese and Japanese with the Noto CJK fonts when installed, and missing glyphs give one
warning, not one per character (issue #26)."""

import warnings

import numpy as np
import pytest
import torch

from attnkit.explain import fonts
from attnkit.explain.heatmaps import alignment_figure, alignment_heatmap

CJK_INSTALLED = "Noto Sans CJK JP" in fonts.font_families()


def _ink(png: bytes) -> float:
    from io import BytesIO

    from matplotlib.image import imread

    return float((imread(BytesIO(png))[..., :3] < 0.5).mean())


@pytest.mark.skipif(not CJK_INSTALLED, reason="no Noto CJK font installed (scripts/install-extras.sh installs it)")
def test_cjk_labels_are_drawn_without_any_warning():
    weights = torch.softmax(torch.randn(2, 3, generator=torch.Generator().manual_seed(0)), -1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        png = alignment_heatmap(weights, ["我", "爱", "你"], ["I", "you"])
    assert png.startswith(b"\x89PNG")
    figure = alignment_figure(weights, ["我", "爱", "你"], ["I", "you"])
    families = figure.axes[0].get_xticklabels()[0].get_fontfamily()
    assert families[0] == "DejaVu Sans" and "Noto Sans CJK JP" in families


def test_missing_glyphs_become_one_warning(monkeypatch):
    monkeypatch.setattr(fonts, "font_families", lambda: ("DejaVu Sans",))  # as on a machine without Noto
    weights = torch.full((1, 4), 0.25)
    with pytest.warns(UserWarning) as seen:
        alignment_heatmap(weights, ["北", "京", "天", "安"], ["x"])
    messages = [str(w.message) for w in seen]
    assert not any("missing from font" in m for m in messages), messages  # no flood of matplotlib's own
    summary = [m for m in messages if "have no glyph" in m]
    assert len(summary) == 1 and "4 character(s)" in summary[0] and "北 京 天 安" in summary[0]
    assert np.isfinite(_ink(alignment_heatmap(weights, ["a", "b", "c", "d"], ["x"])))
