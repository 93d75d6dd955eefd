"""Layer × head grids label every token when they fit at a legible size (issue #26: they labelled every third)."""

import torch

from attnkit.explain.heatmaps import layer_head_figure


def _labels(axes, axis):
    return [label.get_text() for label in (axes.get_yticklabels() if axis == "y" else axes.get_xticklabels())]


def test_every_token_of_a_sentence_is_labelled_on_both_axes():
    tokens = [f"w{i}" for i in range(16)]
    figure = layer_head_figure(torch.rand(2, 2, 16, 16), tokens, tokens)
    cells = [axes for axes in figure.axes if axes.images]
    assert _labels(cells[0], "y") == tokens and _labels(cells[2], "x") == tokens
    assert max(figure.get_size_inches()) < 10  # the cells grew only as much as the labels need


def test_short_inputs_keep_the_small_default_cell_and_long_ones_are_capped():
    small = layer_head_figure(torch.rand(1, 1, 3, 3), list("abc"), list("abc"))
    assert tuple(small.get_size_inches()) == (1.7 + 1.2, 1.7 + 0.8)
    long = [f"t{i}" for i in range(60)]
    capped = layer_head_figure(torch.rand(1, 1, 60, 60), long, long)
    assert tuple(capped.get_size_inches()) == (4.0 + 1.2, 4.0 + 0.8)


def test_saved_document_figures_name_the_input_and_the_predicted_label(tmp_path, monkeypatch):
    from attnkit.explain import figures, sections
    from attnkit.explain.textfigure import shaded_text_figure

    made = []

    def keep(*args, **kwargs):
        figure = shaded_text_figure(*args, **kwargs)
        made.append(figure)
        return figure

    monkeypatch.setattr(sections, "shaded_text_figure", keep)
    with figures.save_figures(tmp_path):
        sections.han_section([["great", "tea"]], [torch.tensor([0.3, 0.7])], torch.tensor([1.0]),
                             label_names=["neg", "pos"], probabilities=[0.1, 0.9], title="Document 1")  # fmt: skip
        sections.pooling_section(["stale", "tea"], torch.tensor([0.8, 0.2]), label_names=["neg", "pos"],
                                 probabilities=[0.7, 0.3], title="Document 2")  # fmt: skip
    texts = [[text.get_text() for text in figure.axes[0].texts] for figure in made]
    assert texts[0][0] == "Document 1: predicted pos (0.90)" and {"great", "tea"} <= set(texts[0])
    assert texts[1][0] == "Document 2: predicted neg (0.70)" and {"stale", "tea"} <= set(texts[1])
