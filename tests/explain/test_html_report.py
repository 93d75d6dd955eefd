"""HTML reports: escaping, self-containedness, weights and intensities written as documented."""

import base64
import os
import re
from html.parser import HTMLParser

import pytest
import torch

from attnkit.explain.colours import colour_of
from attnkit.explain.html import Section, render_report, write_report
from attnkit.explain.sections import (
    alignment_section,
    han_section,
    pooling_section,
    transformer_section,
    visual_section,
)
from attnkit.outputs import AttentionOutput

EVIL = "<script>window.__pwned = 1</script>"
EVIL_ATTRIBUTE = '" onmouseover="alert(1)'


class Elements(HTMLParser):
    """Collects every start tag (name, attributes) and the text of shaded spans."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.shaded: list[dict[str, str]] = []
        self._open: dict[str, str] | None = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        attributes = {name: value or "" for name, value in attrs}
        self.tags.append((tag, attributes))
        classes = attributes.get("class", "").split()
        if "attn-token" in classes or "attn-sentence" in classes:
            self._open = {**attributes, "text": ""}
            self.shaded.append(self._open)

    def handle_data(self, data):
        if self._open is not None:
            self._open["text"] += data

    def handle_endtag(self, tag):
        if tag == "span":
            self._open = None

    def of_class(self, css_class: str) -> list[dict[str, str]]:
        return [element for element in self.shaded if css_class in element["class"].split()]


def background(element: dict[str, str]) -> tuple[tuple[int, int, int], str]:
    """(background RGB, text colour) of a shaded element."""
    match = re.fullmatch(r"background-color: rgb\((\d+), (\d+), (\d+)\); color: (#[0-9a-f]{6})", element["style"])
    assert match, element["style"]
    red, green, blue, text = match.groups()
    return (int(red), int(green), int(blue)), text


def assert_row(elements: list[dict[str, str]], weights: list[float]) -> None:
    """data-weight is the weight; intensity = weight / row max; background = the house colour of the intensity,
    and the text is black on light shades, white on dark ones."""
    assert len(elements) == len(weights)
    top = max(weights)
    for element, weight in zip(elements, weights, strict=True):
        intensity = weight / top if top > 0 else 0.0
        assert float(element["data-weight"]) == pytest.approx(weight, rel=1e-5, abs=1e-9)
        assert float(element["data-intensity"]) == pytest.approx(intensity, rel=1e-5, abs=1e-9)
        colour, text = background(element)
        assert colour == colour_of(intensity)
        assert text == better_text_colour(colour)


def better_text_colour(rgb: tuple[int, int, int]) -> str:
    """Black or white, whichever has the higher WCAG 2 contrast ratio on ``rgb``."""
    linear = [c / 255 / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return "#000000" if (luminance + 0.05) / 0.05 >= 1.05 / (luminance + 0.05) else "#ffffff"


SENTENCES = [["Great", "coffee", EVIL, "beans"], ["Would", "buy", "again"]]
WORD_WEIGHTS = [[0.1, 0.6, 0.05, 0.25], [0.2, 0.5, 0.3]]
SENTENCE_WEIGHTS = [0.75, 0.25]


def han(word_shading: str = "sentence") -> Section:
    return han_section(
        SENTENCES,
        [torch.tensor(row) for row in WORD_WEIGHTS],
        torch.tensor(SENTENCE_WEIGHTS),
        label_names=["negative", f"positive {EVIL}"],
        probabilities=torch.tensor([0.2, 0.8]),
        true_label=EVIL_ATTRIBUTE,
        word_shading=word_shading,
    )


def test_han_words_are_shaded_by_word_times_sentence_weight_across_the_document_by_default():
    elements = Elements(render_report([han("document")], title="t"))
    tokens = elements.of_class("attn-token")
    products = [w * s for row, s in zip(WORD_WEIGHTS, SENTENCE_WEIGHTS, strict=True) for w in row]
    top = max(products)  # 0.6 * 0.75: "coffee"
    for element, weight, product in zip(tokens, [w for row in WORD_WEIGHTS for w in row], products, strict=True):
        assert float(element["data-weight"]) == pytest.approx(weight)
        assert float(element["data-intensity"]) == pytest.approx(product / top, rel=1e-5)
        assert background(element)[0] == colour_of(product / top)
    # "buy", the top word of the 0.25-weight sentence, is no longer as dark as "coffee"
    assert float(tokens[5]["data-intensity"]) == pytest.approx(0.5 * 0.25 / (0.6 * 0.75), rel=1e-5)
    assert "attn-caption" in han("document").body and "times its sentence" in han("document").body
    no_caption = han_section(SENTENCES, [torch.tensor(r) for r in WORD_WEIGHTS], torch.tensor(SENTENCE_WEIGHTS),
                             label_names=["a", "b"], probabilities=[0.5, 0.5], caption=False)  # fmt: skip
    assert "attn-caption" not in no_caption.body and "attn-scale" not in no_caption.body
    with pytest.raises(ValueError, match="word_shading"):
        han("paragraph")


def test_han_words_and_sentences_follow_the_documented_mapping():
    elements = Elements(render_report([han()], title="t"))
    tokens = elements.of_class("attn-token")
    assert [t["text"] for t in tokens] == [word for sentence in SENTENCES for word in sentence]
    assert_row(tokens[:4], WORD_WEIGHTS[0])
    assert_row(tokens[4:], WORD_WEIGHTS[1])
    assert_row(elements.of_class("attn-sentence"), SENTENCE_WEIGHTS)
    # "coffee" and "buy" are the most attended words of their sentences: the darkest shade, in white text.
    assert background(tokens[1]) == background(tokens[5]) == (colour_of(1.0), "#ffffff")
    assert background(tokens[2])[0] != background(tokens[1])[0]


def test_han_accepts_padded_tensors_and_rejects_weighted_padding():
    padded_words = torch.tensor([[0.1, 0.6, 0.05, 0.25], [0.2, 0.5, 0.3, 0.0], [0.0, 0.0, 0.0, 0.0]])
    section = han_section(
        SENTENCES,
        padded_words[None],  # a batch of one
        torch.tensor([0.75, 0.25, 0.0]),
        label_names=["a", "b"],
        probabilities=[0.5, 0.5],
        word_shading="sentence",
    )
    tokens = Elements(section.body).of_class("attn-token")
    assert_row(tokens[4:], WORD_WEIGHTS[1])
    with pytest.raises(ValueError, match=r"word_weights\[1\]"):
        han_section(
            SENTENCES,
            [torch.tensor(WORD_WEIGHTS[0]), torch.tensor([0.2, 0.5, 0.2, 0.1])],
            torch.tensor(SENTENCE_WEIGHTS),
            label_names=["a", "b"],
            probabilities=[0.5, 0.5],
        )
    with pytest.raises(ValueError, match="sentence_weights"):
        han_section(SENTENCES, WORD_WEIGHTS, [0.5], label_names=["a", "b"], probabilities=[0.5, 0.5])


def test_han_prediction_is_the_most_probable_class():
    elements = Elements(render_report([han()], title="t"))
    probabilities = [a for tag, a in elements.tags if "attn-prob" in a.get("class", "").split()]
    assert [a["data-label"] for a in probabilities] == [f"positive {EVIL}", "negative"]
    assert [float(a["data-probability"]) for a in probabilities] == pytest.approx([0.8, 0.2])
    with pytest.raises(ValueError, match="probabilities"):
        han_section(SENTENCES, WORD_WEIGHTS, SENTENCE_WEIGHTS, label_names=["a"], probabilities=[0.2, 0.8])


def test_empty_document_is_said_so():
    section = han_section([], torch.zeros(0, 0), torch.zeros(0), label_names=["a", "b"], probabilities=[0.5, 0.5])
    assert "(empty document)" in section.body
    assert Elements(section.body).of_class("attn-token") == []


def test_pooling_rows_one_per_head():
    tokens = ["a", "tasty", EVIL, "snack"]
    weights = torch.tensor([[0.1, 0.2, 0.3, 0.4, 0.0], [0.7, 0.1, 0.1, 0.1, 0.0]])  # [H, T'] with padding
    wrapped = AttentionOutput(torch.zeros(1, 16), weights[None])  # [B=1, H, T']
    elements = Elements(pooling_section(tokens, wrapped).body)
    heads = [a["data-head"] for tag, a in elements.tags if "attn-row" in a.get("class", "").split()]
    assert heads == ["1", "2"]
    shaded = elements.of_class("attn-token")
    assert [t["text"] for t in shaded] == tokens * 2
    assert_row(shaded[:4], weights[0, :4].tolist())
    assert_row(shaded[4:], weights[1, :4].tolist())

    single = Elements(pooling_section(["x", "y"], [0.0, 0.0]).body).of_class("attn-token")
    assert_row(single, [0.0, 0.0])  # a zero row is drawn unshaded, not divided by zero
    assert background(single[0]) == ((255, 255, 255), "#000000")


def test_every_piece_of_input_text_is_escaped():
    sections = [
        han(),
        pooling_section([EVIL, EVIL_ATTRIBUTE], [[0.5, 0.5]], label_names=[EVIL], probabilities=[1.0]),
        alignment_section(torch.rand(2, 2), [EVIL, "b"], ["x", EVIL_ATTRIBUTE], title=EVIL),
        Section(EVIL, ""),
    ]
    page = render_report(sections, title=f"title {EVIL}")
    assert "<script" not in page.lower()
    assert 'onmouseover="' not in page
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in page
    assert "&quot; onmouseover=&quot;alert(1)" in page
    elements = Elements(page)
    assert not [tag for tag, _ in elements.tags if tag == "script"]
    assert EVIL in [t["text"] for t in elements.of_class("attn-token")]


def test_report_is_self_contained():
    torch.manual_seed(0)
    tokens = ["the", "cat", "sat"]
    sections = [
        han(),
        pooling_section(tokens, torch.softmax(torch.randn(2, 3), -1)),
        alignment_section(torch.softmax(torch.randn(2, 3), -1), tokens, ["le", "chat"]),
        transformer_section(
            tokens,
            ["le", "chat"],
            encoder_layers=[torch.softmax(torch.randn(2, 3, 3), -1) for _ in range(2)],
            decoder_layers=[torch.softmax(torch.randn(2, 2, 2), -1) for _ in range(2)],
            cross_layers=[torch.softmax(torch.randn(2, 2, 3), -1) for _ in range(2)],
        ),
        visual_section(torch.rand(8, 8), torch.rand(2, 4, 4), label_names=["0", "1"], probabilities=[0.3, 0.7]),
    ]
    page = render_report(sections, title="report")
    assert not re.search(r"https?://", page), "no remote URL of any kind"
    assert not re.search(r"<(script|link|iframe|object|embed)\b", page, flags=re.IGNORECASE)
    assert not re.search(r"url\(", page), "no CSS fetches"
    elements = Elements(page)
    sources = [a["src"] for tag, a in elements.tags if "src" in a]
    assert len(sources) == len(re.findall(r"\ssrc=", page))
    # transformer: encoder grid, rollout, decoder grid, cross grid; visual: image + 2 heads; alignment: 1
    assert len(sources) == 8
    for source in sources:
        prefix = "data:image/png;base64,"
        assert source.startswith(prefix)
        assert base64.b64decode(source[len(prefix) :]).startswith(b"\x89PNG\r\n\x1a\n")
    assert '<meta charset="utf-8">' in page
    assert "default-src 'none'" in page


def test_write_report_is_atomic_and_returns_the_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "out" / "report.html"
    target.parent.mkdir()
    target.write_text("old")
    path = write_report("out/report.html", [han()], title="Fine food")
    assert path == target and path.is_absolute()
    assert path.read_text(encoding="utf-8") == render_report([han()], title="Fine food")
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.html"]  # no temporary left behind


def test_write_report_leaves_the_old_file_when_writing_fails(tmp_path, monkeypatch):
    target = tmp_path / "report.html"
    target.write_text("old")

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        write_report(target, [han()], title="t")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_transformer_section_needs_something_to_draw():
    with pytest.raises(ValueError, match="at least one"):
        transformer_section(["a"])
    with pytest.raises(ValueError, match="target_tokens"):
        transformer_section(["a"], cross_layers=[torch.ones(1, 1, 1)])
