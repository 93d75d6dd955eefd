"""``attnkit faithfulness`` and ``attnkit explain --faithfulness`` on tiny trained classifiers, through the command
line as a user runs them: the JSON schema, the table, the report's panel and figures, ``attnkit.load(...)
.faithfulness``, and one-line errors with exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attnkit.cli import main

pytest.importorskip("captum", reason="the gradient methods need Captum (pip install 'attnkit[faithfulness]')")

POSITIVE = ["great taste and lovely smell", "really great coffee , will buy again", "lovely tea , great price"]
NEGATIVE = ["awful taste and stale smell", "really awful coffee , never again", "stale tea , awful price"]
SRC = str(Path(__file__).resolve().parents[2] / "src")


def _train(root: Path, *options: str) -> Path:
    rows = [(t, "pos") for t in POSITIVE] * 6 + [(t, "neg") for t in NEGATIVE] * 6
    train = root / "train.csv"
    train.write_text("text,label\n" + "".join(f'"{t}",{label}\n' for t, label in rows), encoding="utf-8")
    out = root / "run"
    argv = ["train", "classify", "--data", str(train), *options, "--embed-dim", "16", "--epochs", "2"]
    argv += ["--lr", "0.05", "--batch-size", "4", "--vocab-size", "100", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    return out


@pytest.fixture(scope="module")
def transformer_run(tmp_path_factory):
    """A pooled classifier over a one-layer Transformer encoder (so rollout and flow apply), attending over its
    states (with the default embedding values it would also have attention_contribution)."""
    root = tmp_path_factory.mktemp("faithfulness-transformer")
    return _train(root, "--model", "pooled", "--encoder", "transformer", "--heads", "2", "--attention-values", "states")


def _attnkit(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-m", "attnkit.cli", *argv], capture_output=True, text=True, env=env, timeout=600
    )


def test_json_has_one_object_per_text_with_every_method(transformer_run):
    done = _attnkit(
        "faithfulness", "--checkpoint", str(transformer_run), "--text", "great coffee , lovely price",
        "--text", "stale tea", "--json", "--steps", "8",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["text"] for line in lines] == ["great coffee , lovely price", "stale tea"]
    first = lines[0]
    assert list(first) == ["text", "label", "probability", "tokens", "methods", "kendall_tau"]
    assert first["tokens"] == ["great", "coffee", ",", "lovely", "price"]
    assert list(first["methods"]) == [
        "attention", "rollout", "flow", "gradient_x_input", "integrated_gradients", "leave_one_out", "random",
    ]  # fmt: skip
    for found in first["methods"].values():
        assert len(found["scores"]) == 5
        assert list(found["comprehensiveness"]) == list(found["sufficiency"]) == ["1", "5", "10", "20", "50"]
        assert 0.0 < found["flip_fraction"] <= 1.0
    assert len(first["kendall_tau"]) == 21  # every pair of the 7 methods
    assert first["label"] in ("pos", "neg") and 0.5 <= first["probability"] <= 1.0


def test_the_table_names_each_method_and_says_what_erasing_does(transformer_run):
    done = _attnkit(
        "faithfulness", "--checkpoint", str(transformer_run), "--text", "awful coffee , stale smell",
        "--methods", "attention,random,leave_one_out", "--erase", "mask",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "erase=mask" in done.stdout
    for method in ("attention", "leave_one_out", "random"):
        assert f"\n{method} " in done.stdout
    assert "integrated_gradients" not in done.stdout
    assert "Erasing the 3 most-attended words" in done.stdout and "3 random words:" in done.stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--methods", "attention,shap"], "unknown method(s) shap"),
        (["--erase", "drop"], "argument --erase: unknown erasure 'drop'"),
        (["--file", "missing.txt"], "missing.txt"),
        (["--text", " "], "--text number 1 is empty"),
    ],
)
def test_user_errors_are_one_line_and_exit_2(transformer_run, argv, message):
    done = _attnkit("faithfulness", "--checkpoint", str(transformer_run), *argv)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("attnkit: error: ")
    assert message in done.stderr


def test_explain_adds_a_faithfulness_panel_and_its_figures(transformer_run, tmp_path):
    out, figures = tmp_path / "report.html", tmp_path / "figures"
    done = _attnkit(
        "explain", "--checkpoint", str(transformer_run), "--text", "great coffee", "--text", "awful tea , stale",
        "--out", str(out), "--faithfulness", "--save-figures", str(figures),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    page = out.read_text(encoding="utf-8")
    assert page.count('class="attn-faithfulness"') == 2
    for method in ("attention", "rollout", "integrated_gradients", "leave_one_out"):
        assert f'data-method="{method}"' in page
    assert "rollout and flow follow the mixing" in page
    assert "most-attended word" in page and "random word" in page
    assert page.count("Completeness delta of integrated gradients: ") == 2  # what the panel's 8 nodes cost
    assert sorted(p.name for p in figures.glob("*faithfulness-curves.png")) == [
        "01-faithfulness-curves.png",
        "02-faithfulness-curves.png",
    ]


def test_explain_takes_the_panels_integrated_gradients_steps():
    from attnkit.cli import build_parser
    from attnkit.explain.faithfulness.methods import PANEL_STEPS, STEPS

    parse = build_parser().parse_args
    explain = ["explain", "--checkpoint", "x", "--text", "t", "--out", "r.html"]
    assert parse([*explain, "--faithfulness"]).steps == PANEL_STEPS == 8
    assert parse([*explain, "--steps", "32"]).steps == 32
    assert parse(["faithfulness", "--checkpoint", "x", "--text", "t"]).steps == STEPS == 32


def test_python_api_and_uniform_attention_training(tmp_path):
    """``attnkit.load(RUN).faithfulness`` on a HAN; a model trained with --uniform-attention weighs words equally."""
    import attnkit

    han = attnkit.load(_train(tmp_path, "--model", "han"), device="cpu")
    results = han.faithfulness(["great coffee . lovely tea", "stale tea"], methods=["attention", "random"])
    assert [r.tokens for r in results] == [["great", "coffee", ".", "lovely", "tea"], ["stale", "tea"]]
    assert set(results[0].details) == {"attention_words", "attention_sentences"}
    assert len(results[0].details["attention_sentences"]) == 2
    uniform_dir = tmp_path / "uniform"
    uniform_dir.mkdir()
    uniform = attnkit.load(_train(uniform_dir, "--model", "pooled", "--encoder", "none", "--uniform-attention"))
    weights = uniform.predict(["great coffee , lovely price"])[0].token_weights[0]
    assert weights == pytest.approx([0.2] * 5)
