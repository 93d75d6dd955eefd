"""``attnkit explain --save-figures DIR``: every figure of the report as a PNG + SVG pair, named by section and
figure, through the real command line on tiny trained checkpoints; a DIR that is a file is one clear error."""

import base64
import io
import random
import re
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest
import torch
from PIL import Image

from attnkit.cli import main
from attnkit.explain import figures
from attnkit.explain.heatmaps import alignment_heatmap
from attnkit.explain.sections import alignment_section, pooling_section

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def restore_threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """Tiny runs: a two-head pooled classifier, a one-layer Transformer seq2seq, a two-head vision model."""
    root = tmp_path_factory.mktemp("save-figures")
    rows = [("great tea and lovely smell", "pos"), ("awful tea and stale smell", "neg")] * 8
    (root / "train.csv").write_text("text,label\n" + "".join(f'"{t}",{y}\n' for t, y in rows), encoding="utf-8")
    rng = random.Random(0)
    words = sorted({"".join(rng.choice("abcdef ") for _ in range(rng.randint(3, 6))).strip() for _ in range(150)})
    (root / "pairs.tsv").write_text("".join(f"{w}\t{w.upper()}\n" for w in words if w), encoding="utf-8")
    runs = {"classifier": root / "classifier", "transformer": root / "transformer", "vision": root / "vision"}
    commands = {
        "classifier": ["train", "classify", "--data", str(root / "train.csv"), "--model", "pooled", "--encoder",
                       "none", "--pooling", "multihead", "--heads", "2", "--embed-dim", "8", "--epochs", "2"],
        "transformer": ["train", "seq2seq", "--data", str(root / "pairs.tsv"), "--model", "transformer", "--dim", "16",
                        "--heads", "2", "--encoder-layers", "1", "--decoder-layers", "1", "--dropout", "0",
                        "--batch-size", "16", "--epochs", "1", "--threads", "1"],
        "vision": ["train", "vision", "--data", "digits", "--limit", "200", "--epochs", "1", "--channels", "8",
                   "--heads", "2"],
    }  # fmt: skip
    for name, command in commands.items():
        assert main([*command, "--out", str(runs[name]), "--no-progress"]) == 0
    return runs


def inline_images(page: str) -> list[np.ndarray]:
    sources = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    return [np.asarray(Image.open(io.BytesIO(base64.b64decode(s))).convert("RGB")) for s in sources]


def assert_pairs(directory) -> list[str]:
    """Every file is half of a valid PNG + SVG pair named NN-name; returns the stems, sorted."""
    names = sorted(path.name for path in directory.iterdir())
    stems = sorted({name.rsplit(".", 1)[0] for name in names})
    assert names == sorted([f"{stem}.png" for stem in stems] + [f"{stem}.svg" for stem in stems])
    for stem in stems:
        assert re.fullmatch(r"\d\d-[a-z0-9-]+", stem), stem
        assert (directory / f"{stem}.png").read_bytes().startswith(PNG_SIGNATURE)
        root = ElementTree.parse(directory / f"{stem}.svg").getroot()
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
    return stems


@pytest.mark.parametrize(
    ("kind", "inputs", "expected"),
    [
        # one alignment per text, then its grids: encoder, rollout, decoder-over-source
        (
            "transformer",
            ["--text", "abc", "--text", "fed"],
            ["01-alignment", "02-cross-attention", "02-encoder-rollout", "02-encoder-self-attention",
             "03-alignment", "04-cross-attention", "04-encoder-rollout", "04-encoder-self-attention"],
        ),
        # the image, then one overlay per head
        ("vision", ["--index", "0"], ["01-head-1", "01-head-2", "01-image"]),
        # shaded text has no inline image: its paper figure is drawn for the folder only
        ("classifier", ["--text", "great tea", "--text", "stale smell"], ["01-tokens", "02-tokens"]),
    ],
)  # fmt: skip
def test_every_figure_of_the_report_is_written_as_png_and_svg(checkpoints, kind, inputs, expected, tmp_path, capsys):
    out, folder = tmp_path / "report.html", tmp_path / "figures" / "new"
    args = ["explain", "--checkpoint", str(checkpoints[kind]), *inputs, "--out", str(out)]
    assert main([*args, "--save-figures", str(folder)]) == 0
    assert f"{len(expected)} figure(s) written to {folder}" in capsys.readouterr().out
    assert assert_pairs(folder) == expected
    page = out.read_text(encoding="utf-8")
    assert "<script" not in page
    shown = inline_images(page)  # the page stays self-contained: its images are inline
    assert len(shown) == (0 if kind == "classifier" else len(expected))
    for stem in expected:
        png = np.asarray(Image.open(folder / f"{stem}.png").convert("RGB"))
        if kind == "vision":  # pixel images are saved pixel for pixel
            assert any(png.shape == image.shape and (png == image).all() for image in shown), stem
        elif kind == "transformer":  # heatmaps at twice the page's 100 dpi
            assert any(png.shape[:2] == (2 * i.shape[0], 2 * i.shape[1]) for i in shown), stem
    # the same report without the option: identical page, nothing else written
    again = tmp_path / "plain.html"
    assert main([*args[:-1], str(again)]) == 0
    assert again.read_text(encoding="utf-8") == page
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figures", "plain.html", "report.html"]


def test_a_folder_that_is_a_file_is_one_clear_error(checkpoints, tmp_path, capsys):
    taken = tmp_path / "figures.png"
    taken.write_bytes(b"not a folder")
    out = tmp_path / "report.html"
    for folder in (taken, taken / "inside"):
        args = ["explain", "--checkpoint", str(checkpoints["transformer"]), "--text", "abc", "--out", str(out)]
        assert main([*args, "--save-figures", str(folder)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("attnkit: error: ") and "\n" not in err and str(taken) in err
        assert not out.exists()  # refused before anything was loaded or written
    assert taken.read_bytes() == b"not a folder"
    with pytest.raises(ValueError, match="is an existing file"), figures.save_figures(taken):
        pass


def test_nothing_is_written_when_the_report_fails(tmp_path):
    folder = tmp_path / "figures"
    with pytest.raises(RuntimeError, match="boom"), figures.save_figures(folder):
        alignment_section(torch.rand(2, 2), ["a", "b"], ["x", "y"])
        raise RuntimeError("boom")
    assert not folder.exists()


def test_sections_number_the_files_and_repeated_names_stay_apart(tmp_path):
    with figures.save_figures(tmp_path) as sink:
        pooling_section(["a", "b"], [0.4, 0.6])  # section 1: its paper figure
        alignment_section(torch.rand(2, 2), ["a", "b"], ["x", "y"])  # section 2
        alignment_heatmap(torch.rand(2, 2), ["a", "b"], ["x", "y"])  # drawn again inside section 2
    assert list(sink.files) == [
        "01-tokens.png", "01-tokens.svg", "02-alignment.png", "02-alignment.svg",
        "02-alignment-2.png", "02-alignment-2.svg",
    ]  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(sink.files)
    assert not figures.active()  # the sink is closed with the block
    alignment_section(torch.rand(2, 2), ["a", "b"], ["x", "y"])  # no sink: nothing kept, nothing written
    assert len(list(tmp_path.iterdir())) == 6
