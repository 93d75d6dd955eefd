"""``attnkit experiment faithful-attention`` (issue #38): the recipes probed (:mod:`.recipes`), the two stages and
the choice (:mod:`.run`), and the results section (:mod:`.table`)."""

from attnkit.experiments.faithful_attention.recipes import RECIPES, ROWS, Recipe, Row
from attnkit.experiments.faithful_attention.run import choose, run_faithful_attention
from attnkit.experiments.faithful_attention.table import render_faithful_attention

__all__ = ["RECIPES", "ROWS", "Recipe", "Row", "choose", "render_faithful_attention", "run_faithful_attention"]
