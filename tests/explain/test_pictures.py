"""Pictures that read well: one perceptual colour map for heatmaps and HTML shading, a colour scale in every
shaded section, token labels on Transformer grids, upright characters, visible spaces, captions per model kind."""

import io
import re
from html.parser import HTMLParser

import numpy as np
import pytest
import torch
from PIL import Image

from attnkit.explain import captions
from attnkit.explain.colours import colour_of, colour_table, css_gradient, lightness
from attnkit.explain.heatmaps import alignment_figure, layer_head_figure, overlay_attention
from attnkit.explain.html import render_report
from attnkit.explain.sections import (
    alignment_section,
    han_section,
    pooling_section,
    transformer_section,
    visual_section,
)


class Shaded(HTMLParser):
    """Shaded spans (text, style), colour scales (style of the bar) and captions of a page."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.spans: list[dict[str, str]] = []
        self.bars: list[str] = []
        self.captions: list[str] = []
        self._open: dict[str, str] | None = None
        self._caption = False
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        attributes = {name: value or "" for name, value in attrs}
        classes = attributes.get("class", "").split()
        if "attn-token" in classes or "attn-sentence" in classes:
            self._open = {**attributes, "text": ""}
            self.spans.append(self._open)
        if "attn-scale-bar" in classes:
            self.bars.append(attributes["style"])
        if "attn-caption" in classes:
            self._caption = True
            self.captions.append("")

    def handle_data(self, data):
        if self._open is not None:
            self._open["text"] += data
        if self._caption:
            self.captions[-1] += data

    def handle_endtag(self, tag):
        if tag == "span":
            self._open = None
        if tag == "p":
            self._caption = False


def span_colour(span: dict[str, str]) -> tuple[int, int, int]:
    match = re.search(r"background-color: rgb\((\d+), (\d+), (\d+)\)", span["style"])
    assert match, span["style"]
    return tuple(int(c) for c in match.groups())


def drawn(figure) -> np.ndarray:
    """Draw a Figure with Agg: ``[height, width, 3]`` uint8, the same pixels ``savefig`` writes at its dpi."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3]


def cell_pixel(figure, pixels: np.ndarray, axes, column: int, row: int) -> np.ndarray:
    x, y = axes.transData.transform((column, row))  # display coordinates: pixels from the bottom left
    return pixels[pixels.shape[0] - round(y), round(x)]


# ---- one perceptual colour map ------------------------------------------------------------------------------


def test_colour_map_is_white_to_dark_with_linear_lightness():
    table = colour_table()
    assert table.shape == (256, 3) and (table >= 0).all() and (table <= 1).all()
    assert colour_of(0.0) == (255, 255, 255)  # no attention leaves text and cells unshaded
    lstar = lightness(table)
    expected = np.linspace(100.0, 20.0, 256)
    assert np.abs(lstar - expected).max() < 0.5  # perceptually even steps, so it also prints in grey
    assert (np.diff(lstar) < 0).all()
    assert lightness(np.array(colour_of(1.0)) / 255) == pytest.approx(20.0, abs=0.5)


def test_a_weight_has_the_same_colour_in_a_heatmap_and_behind_a_word():
    weights = torch.tensor([[0.9, 0.3], [0.6, 0.1]])  # shades 1, 1/3, 2/3, 1/9 of the largest weight
    figure = alignment_figure(weights, ["a", "b"], ["x", "y"], figsize=(4, 3), dpi=100)
    pixels = drawn(figure)
    axes = figure.axes[0]
    # The same relative weights in the HTML page: a pooling row whose largest weight is 0.9.
    page = render_report([pooling_section(["p", "q", "r", "s"], [0.9, 0.3, 0.6, 0.1])], title="t")
    spans = Shaded(page).spans
    for (row, column), span in zip([(0, 0), (0, 1), (1, 0), (1, 1)], spans, strict=True):
        heatmap = cell_pixel(figure, pixels, axes, column, row)
        html = span_colour(span)
        assert tuple(heatmap) == html, (row, column, heatmap, html)
    assert span_colour(spans[0]) == colour_of(1.0)
    assert span_colour(spans[1]) == colour_of(1 / 3) != colour_of(2 / 3) == span_colour(spans[2])


def test_overlays_and_colour_bars_use_the_same_map():
    heat = np.asarray(
        Image.open(io.BytesIO(overlay_attention(np.zeros((4, 4)), torch.tensor([[1.0, 0.0], [0.0, 0.0]]), alpha=1.0)))
    )
    assert tuple(heat[0, 0, :3]) == colour_of(1.0)  # full attention: the map's darkest colour
    figure = alignment_figure(torch.rand(3, 3), list("abc"), list("xyz"))
    assert figure.axes[0].images[0].colorbar.cmap.name == "attnkit-blue"
    grid = layer_head_figure(torch.rand(2, 2, 3, 3), list("abc"), list("abc"))
    assert {axes.images[0].get_cmap().name for axes in grid.axes if axes.images} == {"attnkit-blue"}


# ---- a colour scale in every shaded section --------------------------------------------------------------------


def all_sections():
    torch.manual_seed(0)
    return {
        "han": han_section(
            [["good", "tea"], ["bad", "cup"]],
            [torch.tensor([0.7, 0.3]), torch.tensor([0.4, 0.6])],
            torch.tensor([0.8, 0.2]),
            label_names=["neg", "pos"],
            probabilities=[0.3, 0.7],
        ),
        "pooling": pooling_section(["good", "tea"], [[0.7, 0.3], [0.5, 0.5]]),
        "alignment": alignment_section(torch.softmax(torch.randn(2, 3), -1), ["a", " ", "b"], ["A", "B"]),
        "transformer": transformer_section(
            ["a", " ", "b"],
            ["A", "B"],
            encoder_layers=[torch.softmax(torch.randn(2, 3, 3), -1)],
            decoder_layers=[torch.softmax(torch.randn(2, 2, 2), -1)],
            cross_layers=[torch.softmax(torch.randn(2, 2, 3), -1)],
        ),
        "visual": visual_section(torch.rand(6, 6), torch.rand(2, 3, 3)),
    }


@pytest.mark.parametrize("kind", ["han", "pooling", "visual"])
def test_html_shaded_sections_carry_a_colour_scale_of_the_same_map(kind):
    bars = Shaded(all_sections()[kind].body).bars
    assert len(bars) == 1
    assert css_gradient() in bars[0]
    assert bars[0].index("rgb(255, 255, 255) 0%") < bars[0].index("rgb({}, {}, {}) 100%".format(*colour_of(1.0)))


def test_every_heatmap_has_a_labelled_colour_bar():
    alignment = alignment_figure(torch.rand(2, 3), list("abc"), list("xy"))
    bar = alignment.axes[0].images[0].colorbar
    assert bar is not None and bar.ax.get_ylabel() == "attention weight"
    grid = layer_head_figure(torch.rand(2, 3, 4, 4), list("abcd"), list("abcd"))
    images = [axes.images[0] for axes in grid.axes if axes.images]
    assert len(images) == 6
    assert sum(image.colorbar is not None for image in images) == 1  # one shared bar for all cells
    assert next(image.colorbar for image in images if image.colorbar).ax.get_ylabel() == "attention weight"


# ---- token labels, upright characters, visible spaces ---------------------------------------------------------


def tick_texts(labels) -> list[str]:
    return [label.get_text() for label in labels]


def test_transformer_grids_carry_token_labels_even_for_long_inputs():
    tokens = ["the", " ", "cat", "sat"]
    figure = layer_head_figure(torch.rand(2, 3, 4, 4), tokens, tokens)
    cells = [axes for axes in figure.axes if axes.images]  # [L·H], row-major
    assert tick_texts(cells[0].get_yticklabels()) == ["the", "␣", "cat", "sat"]  # left column: query tokens
    assert tick_texts(cells[3].get_xticklabels()) == ["the", "␣", "cat", "sat"]  # bottom row: key tokens
    assert tick_texts(cells[4].get_yticklabels()) == []  # inner cells share the edges' labels

    long = [f"w{i}" for i in range(40)]
    figure = layer_head_figure(torch.rand(1, 2, 40, 40), long, long)
    cells = [axes for axes in figure.axes if axes.images]
    rows = tick_texts(cells[0].get_yticklabels())
    assert rows[0] == "w0" and 5 <= len(rows) < 40  # thinned to every n-th token, not dropped
    step = int(rows[1][1:])
    assert rows == [f"w{i}" for i in range(0, 40, step)]
    assert len(tick_texts(cells[0].get_xticklabels())) == len(rows)


def test_single_characters_stay_upright_and_words_turn_only_when_needed():
    characters = list("attention is all")
    figure = alignment_figure(torch.rand(3, len(characters)), characters, list("xyz"))
    labels = figure.axes[0].get_xticklabels()
    assert tick_texts(labels) == [c if c != " " else "␣" for c in characters]
    assert {label.get_rotation() for label in labels} == {0.0}

    words = ["the", "unbelievably", ",", "cat"]
    figure = alignment_figure(torch.rand(2, 4), words, ["le", "chat"])
    rotation = {label.get_text(): label.get_rotation() for label in figure.axes[0].get_xticklabels()}
    assert rotation == {"the": 90.0, "unbelievably": 90.0, ",": 0.0, "cat": 90.0}
    assert {label.get_rotation() for label in figure.axes[0].get_yticklabels()} == {0.0}

    grid = layer_head_figure(torch.rand(1, 1, 5, 5), list("ab cd"), list("ab cd"))
    assert {label.get_rotation() for label in grid.axes[0].get_xticklabels()} == {0.0}


def test_whitespace_is_made_visible_on_axes_and_in_the_page():
    tokens = [" ", "\t", "\n", "", "a b", "$5"]
    figure = alignment_figure(torch.rand(1, 6), tokens, ["x"])
    assert tick_texts(figure.axes[0].get_xticklabels()) == ["␣", "⇥", "↵", "∅", "a␣b", r"\$5"]
    page = render_report([pooling_section(["a", " ", "b"], [0.2, 0.5, 0.3])], title="t")
    assert [span["text"] for span in Shaded(page).spans] == ["a", "␣", "b"]


def test_long_axes_are_thinned_so_labels_do_not_overlap():
    tokens = [f"t{i}" for i in range(300)]
    figure = alignment_figure(torch.rand(300, 300), tokens, tokens)
    pixels_per_label = []
    for labels, size in ((figure.axes[0].get_yticklabels(), figure.get_size_inches()[1]),):
        shown = tick_texts(labels)
        assert shown[0] == "t0" and len(shown) < 300
        pixels_per_label.append(size * 72 / len(shown))
    assert min(pixels_per_label) >= 8 * 1.2  # at least a line of 8-point text per label


# ---- captions that fit the model kind -------------------------------------------------------------------------


def test_each_section_explains_its_own_kind_of_shading():
    sections = all_sections()
    expected = {
        "han": [captions.HAN],
        "pooling": [captions.POOLING],
        "alignment": [captions.ALIGNMENT],
        "transformer": [
            captions.TRANSFORMER_GRID,
            captions.ENCODER_GRID,
            captions.ROLLOUT,
            captions.DECODER_GRID,
            captions.CROSS_GRID,
        ],
        "visual": [captions.VISUAL],
    }
    for kind, section in sections.items():
        assert Shaded(section.body).captions == expected[kind], kind
    custom = alignment_section(torch.rand(1, 1), ["a"], ["b"], caption=captions.TRANSFORMER_ALIGNMENT)
    assert Shaded(custom.body).captions == [captions.TRANSFORMER_ALIGNMENT]


@pytest.mark.parametrize("kinds", [["alignment", "transformer"], ["visual"]])
def test_seq2seq_and_vision_pages_never_speak_of_sentences_and_words(kinds):
    sections = all_sections()
    page = render_report([sections[kind] for kind in kinds], title="t")
    body = page[page.index("<body>") :]  # what a reader sees: not the stylesheet's class names
    text = re.sub(r"<[^>]+>", " ", body).lower()
    assert "sentence" not in text and "words" not in text and "hierarchical" not in text
    han_page = render_report([sections["han"]], title="t")
    assert "Hierarchical attention" in han_page
