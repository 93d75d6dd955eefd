"""``attnkit explain`` on seq2seq checkpoints: an RNN gives its alignment, a Transformer every layer and head."""

import random

import pytest
import torch

from attnkit.cli import main

TINY = ["--dropout", "0", "--batch-size", "16", "--epochs", "1", "--threads", "1", "--no-progress"]


@pytest.fixture(autouse=True)
def restore_threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    root = tmp_path_factory.mktemp("explain_seq2seq")
    rng = random.Random(0)
    words = sorted({"".join(rng.choice("abcdef") for _ in range(rng.randint(3, 5))) for _ in range(200)})
    (root / "train.tsv").write_text("".join(f"{w}\t{w.upper()}\n" for w in words), encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("model", "expected_images"),
    [
        (["--model", "rnn", "--attention", "bahdanau", "--embed-dim", "16", "--hidden", "16"], 2),
        (
            ["--model", "transformer", "--dim", "16", "--heads", "2", "--encoder-layers", "1", "--decoder-layers", "1"],
            5,
        ),
    ],
)
def test_explain_writes_the_alignment_of_each_translation(pairs, model, expected_images, capsys):
    out = pairs / model[1]
    args = ["train", "seq2seq", "--data", str(pairs / "train.tsv"), *model, *TINY, "--out", str(out)]
    assert main(args) == 0
    report = pairs / f"{model[1]}.html"
    text = "<script>window.__pwned=1</script>"
    assert main(["explain", "--checkpoint", str(out), "--text", "abc", "--text", text, "--out", str(report)]) == 0
    html = report.read_text()
    assert html.count("<img") >= expected_images  # one alignment per text (+ grids and rollout for the Transformer)
    assert "&lt;script&gt;" in html and "<script>" not in html
    assert "http://" not in html and "https://" not in html
