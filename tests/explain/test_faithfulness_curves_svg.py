"""The panel's curves as inline SVG: points where a hand computation puts them, one polyline per method, random
dashed, names escaped, and no matplotlib figure drawn unless ``--save-figures`` asks for one."""

from __future__ import annotations

import math
import re

import pytest

from attnkit.explain import figures
from attnkit.explain.faithfulness import panel as svg
from attnkit.explain.faithfulness.erasure import PERCENTS
from attnkit.explain.faithfulness.panel import faithfulness_panel
from attnkit.explain.faithfulness.results import DocumentFaithfulness, MethodResult


def _method(comprehensiveness: list[float], sufficiency: list[float]) -> MethodResult:
    return MethodResult(
        scores=[0.5, 0.5],
        comprehensiveness={str(p): v for p, v in zip(PERCENTS, comprehensiveness, strict=True)},
        sufficiency={str(p): v for p, v in zip(PERCENTS, sufficiency, strict=True)},
        aopc_comprehensiveness=0.2,
        aopc_sufficiency=0.1,
        flip_fraction=0.5,
        erased_probability=[],
        kept_probability=[],
        counts=[],
        top_probability={1: 0.6, 2: 0.3},
    )


def _result() -> DocumentFaithfulness:
    return DocumentFaithfulness(
        text="great <b>coffee</b>",
        label="<pos>",
        probability=0.9,
        tokens=["great", "<b>coffee</b>"],
        erase="delete",
        methods={
            "attention": _method([0.1, 0.2, 0.3, 0.4, 0.5], [0.5, 0.4, 0.3, 0.2, 0.1]),
            "random": _method([0.0] * 5, [0.6] * 5),
        },
        kendall_tau={},
        top_k_overlap={},
    )


def test_points_are_log_spaced_in_x_and_linear_in_y_by_hand():
    points = svg.polyline_points([0.0, 0.25, 0.5, 0.75, 1.0], low=0.0, high=1.0)
    width, height = svg.WIDTH - svg.LEFT - svg.RIGHT, svg.HEIGHT - svg.TOP - svg.BOTTOM
    assert points[0] == pytest.approx((svg.LEFT, svg.TOP + height))  # 1 % at the left, the low end at the bottom
    assert points[-1] == pytest.approx((svg.LEFT + width, svg.TOP))  # 50 % at the right, the high end at the top
    assert points[2][0] == pytest.approx(svg.LEFT + width * math.log10(10) / math.log10(50))  # 10 %: log1(0)..log 50
    assert points[2][1] == pytest.approx(svg.TOP + height / 2)


def test_one_polyline_per_method_and_chart_random_dashed_names_escaped():
    html = svg.curves_svg(_result())
    assert html.count("<svg") == 2 and html.count("</svg>") == 2
    for chart in re.findall(r"<svg.*?</svg>", html):
        assert chart.count('<polyline data-method="attention"') == 1
        assert re.search(r'<polyline data-method="random"[^>]*stroke-dasharray', chart)
    assert "<pos>" not in html and "&lt;pos&gt;" in html


def test_the_panel_draws_no_matplotlib_figure_without_save_figures(tmp_path, monkeypatch):
    drawn = []
    monkeypatch.setattr("attnkit.explain.faithfulness.panel.curves_figure", lambda result: drawn.append(result))
    page = faithfulness_panel(_result())
    assert 'class="attn-curves"' in page and "<img" not in page and drawn == []
    with figures.save_figures(tmp_path / "figures"):
        faithfulness_panel(_result())
    assert len(drawn) == 1
