"""The shaded-text figure that ``--save-figures`` writes keeps every label inside the picture and apart from the
others (#37: the colour bar's caption, as long as the HAN scale's, was centred on the bar's end: it covered the 0
tick and ran off the figure)."""

import pytest
import torch

from attnkit.explain import captions
from attnkit.explain.textfigure import shaded_text_figure


def _text_boxes(figure):
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    texts = [t for t in figure.findobj(lambda a: hasattr(a, "get_text")) if a_visible(t)]
    return {t.get_text(): t.get_window_extent(renderer) for t in texts}


def a_visible(artist):
    return artist.get_visible() and bool(artist.get_text().strip())


@pytest.mark.parametrize("scale", [captions.HAN_SCALE, captions.HAN_SENTENCE_SCALE, captions.POOLING_SCALE])
def test_the_colour_bar_caption_fits_the_figure_and_leaves_the_ticks_free(scale):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    rows = [["Great", "tea", "."], ["Stale", "bread"]]
    weights = [torch.tensor([0.5, 0.3, 0.2]), torch.tensor([0.9, 0.1])]
    figure = shaded_text_figure(rows, weights, markers=torch.tensor([0.7, 0.3]), title="doc 1", scale_label=scale)
    FigureCanvasAgg(figure)
    boxes = _text_boxes(figure)
    whole = figure.bbox
    for text, box in boxes.items():
        assert whole.x0 - 0.5 <= box.x0 and box.x1 <= whole.x1 + 0.5, (text, box, whole)
        assert whole.y0 - 0.5 <= box.y0 and box.y1 <= whole.y1 + 0.5, (text, box, whole)
    caption = next(box for text, box in boxes.items() if scale in text)
    for tick in ("0", "1"):
        assert not caption.overlaps(boxes[tick]), tick
