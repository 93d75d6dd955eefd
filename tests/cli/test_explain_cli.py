"""``attnkit explain`` on a tiny trained classifier and a tiny vision model: the report is written, self-contained,
escaped, and shows the weights the model itself returns; wrong inputs and unsupported kinds are one clear line."""

import base64
import json
import re
from html.parser import HTMLParser

import pytest
import torch

from attnkit.checkpointing import save_checkpoint
from attnkit.cli import main

POSITIVE = ["great taste and lovely smell", "really great coffee , will buy again", "lovely tea , great price"]
NEGATIVE = ["awful taste and stale smell", "really awful coffee , never again", "stale tea , awful price"]
EVIL = "<script>window.__pwned = 1</script>"


class Page(HTMLParser):
    """Start tags with their attributes and the text inside each."""

    def __init__(self, page: str):
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.open: list[dict[str, str]] = []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        element = {key: value or "" for key, value in attrs} | {"tag": tag, "text": ""}
        self.tags.append((tag, element))
        if tag not in ("img", "meta", "br"):
            self.open.append(element)

    def handle_data(self, data):
        if self.open:
            self.open[-1]["text"] += data

    def handle_endtag(self, tag):
        if self.open and self.open[-1]["tag"] == tag:
            self.open.pop()

    def of_class(self, css_class: str) -> list[dict[str, str]]:
        return [e for _, e in self.tags if css_class in e.get("class", "").split()]

    def images(self) -> list[bytes]:
        return [base64.b64decode(e["src"].split(",", 1)[1]) for tag, e in self.tags if tag == "img"]


def assert_self_contained(page: str) -> None:
    assert "<script" not in page.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), "a remote resource"
    assert "Content-Security-Policy" in page


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    """A tiny pooled classifier with two attention heads, trained on a separable CSV."""
    root = tmp_path_factory.mktemp("explain-classifier")
    rows = [(t, "pos") for t in POSITIVE] * 6 + [(t, "neg") for t in NEGATIVE] * 6
    train = root / "train.csv"
    train.write_text("text,label\n" + "".join(f'"{t}",{label}\n' for t, label in rows), encoding="utf-8")
    out = root / "run"
    status = main(
        [
            "train", "classify", "--data", str(train), "--model", "pooled", "--encoder", "none", "--pooling",
            "multihead", "--heads", "2", "--embed-dim", "16", "--epochs", "12", "--lr", "0.05", "--batch-size", "4",
            "--patience", "12", "--vocab-size", "100", "--out", str(out), "--no-progress",
        ]
    )  # fmt: skip
    assert status == 0
    return out


@pytest.fixture(scope="module")
def vision(tmp_path_factory):
    """A tiny two-head vision model: one epoch on 300 digits."""
    out = tmp_path_factory.mktemp("explain-vision") / "run"
    status = main(
        [
            "train", "vision", "--data", "digits", "--limit", "300", "--epochs", "1", "--channels", "8,16",
            "--heads", "2", "--out", str(out), "--no-progress",
        ]
    )  # fmt: skip
    assert status == 0
    return out


def test_classifier_report_shades_each_token_by_the_models_own_weights(classifier, tmp_path, capsys):
    texts = ["great coffee and lovely tea", f"awful {EVIL} stale"]
    out = tmp_path / "report.html"
    args = ["explain", "--checkpoint", str(classifier / "best"), "--text", texts[0], "--text", texts[1]]
    assert main([*args, "--out", str(out)]) == 0
    assert str(out) in capsys.readouterr().out
    assert (
        main(["predict", "--checkpoint", str(classifier / "best"), "--text", texts[0], "--text", texts[1], "--json"])
        == 0
    )
    predictions = [json.loads(line) for line in capsys.readouterr().out.splitlines()]

    page = out.read_text(encoding="utf-8")
    assert_self_contained(page)
    tokens = Page(page).of_class("attn-token")
    assert {"<", "script", ">"} <= {t["text"] for t in tokens}  # the review's script is shown as text
    expected = [
        (token, weight)
        for prediction in predictions
        for head in prediction["token_weights"]
        for token, weight in zip(prediction["tokens"], head, strict=True)
    ]
    assert [t["text"] for t in tokens] == [token for token, _ in expected]
    assert [float(t["data-weight"]) for t in tokens] == pytest.approx([w for _, w in expected], rel=1e-4, abs=1e-6)
    assert max(float(t["data-intensity"]) for t in tokens) == 1.0
    predicted = [e["text"] for e in Page(page).of_class("attn-predicted")]
    assert predicted == [p["label"] for p in predictions] and predicted[0] == "pos"


def test_classifier_texts_from_a_file_and_a_run_directory(classifier, tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("lovely smell\n\nstale price\n", encoding="utf-8")
    out = tmp_path / "from-file.html"
    assert main(["explain", "--checkpoint", str(classifier), "--file", str(texts), "--out", str(out)]) == 0
    page = Page(out.read_text())
    assert len(page.of_class("attn-prediction")) == 2  # one per text; the blank line is skipped
    assert len(page.of_class("attn-section")) == 3 and len(page.of_class("attn-recipe")) == 1  # + how it was trained


def test_vision_report_lays_each_heads_map_over_the_test_image(vision, tmp_path):
    from attnkit.explain.heatmaps import overlay_attention
    from attnkit.tasks.vision.data import load_test_images
    from attnkit.tasks.vision.inference import load_vision, predict_images

    out = tmp_path / "digits.html"
    assert (
        main(["explain", "--checkpoint", str(vision / "best"), "--index", "3", "--index", "10", "--out", str(out)]) == 0
    )
    page = out.read_text(encoding="utf-8")
    assert_self_contained(page)
    elements = Page(page)
    assert len(elements.of_class("attn-section")) == 2
    assert "digits test image 3" in page and "digits test image 10" in page

    loaded = load_vision(vision / "best")
    model, config = loaded.model, loaded.config
    images, gold = load_test_images(config, [3, 10])
    predictions = predict_images(model, images, config.label_names)
    pngs = elements.images()
    assert len(pngs) == 2 * (1 + 2)  # per image: the image itself, then one overlay per head
    for number, prediction in enumerate(predictions):
        assert pngs[3 * number] == overlay_attention(prediction.image, torch.zeros(1, 1), alpha=0.0)
        for head in range(2):
            assert pngs[3 * number + 1 + head] == overlay_attention(prediction.image, prediction.attention[head])
        assert f"(true label: {gold[number]})" in page
    assert [e["text"] for e in elements.of_class("attn-predicted")] == [p.label for p in predictions]


def test_vision_report_from_an_image_file(vision, tmp_path):
    import numpy as np

    from attnkit.data.images import load_data_set

    np.save(tmp_path / "two.npy", load_data_set("digits").test_images[:2, 0].numpy())
    out = tmp_path / "file.html"
    assert main(["explain", "--checkpoint", str(vision), "--file", str(tmp_path / "two.npy"), "--out", str(out)]) == 0
    page = out.read_text()
    assert len(Page(page).images()) == 6 and "two.npy, image 2" in page and "true label" not in page


@pytest.mark.parametrize(
    ("which", "extra", "message"),
    [
        ("classifier", ["--index", "0"], "--index: an option of the vision task, not of classify checkpoints"),
        ("vision", ["--text", "hello"], "--text is for text classifiers"),
        ("vision", [], "explains test images (--index N"),
        ("vision", ["--index", "359"], "index 359 is out of range: the digits test split has 359 images"),
    ],
)
def test_wrong_inputs_are_one_clear_line(which, extra, message, classifier, vision, tmp_path, capsys):
    checkpoint = {"classifier": classifier, "vision": vision}[which] / "best"
    out = tmp_path / "never.html"
    assert main(["explain", "--checkpoint", str(checkpoint), *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnkit: error: ") and message in err and "\n" not in err
    assert not out.exists()


def test_unsupported_kinds_and_non_checkpoints_are_refused(tmp_path, capsys):
    other = save_checkpoint(tmp_path / "speech", torch.nn.Linear(2, 2), model_config={"kind": "speech"})
    assert main(["explain", "--checkpoint", str(other), "--text", "hi", "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "kind 'speech'" in err and "supported kinds: classifier, vision, seq2seq" in err
    (tmp_path / "model.pt").write_bytes(b"pickle")
    assert main(["explain", "--checkpoint", str(tmp_path / "model.pt"), "--text", "hi", "--out", "x.html"]) == 2
    assert "refusing to load a .pt file" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["explain"], ["train", "vision"]])
def test_help_has_examples(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--help"])
    assert exit_info.value.code == 0
    assert "examples:" in capsys.readouterr().out
