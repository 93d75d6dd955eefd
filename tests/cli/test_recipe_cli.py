"""The faithful-attention options through the command line (issue #38): `train classify` stores them in the
checkpoint, `--init-from` and `--resume` keep them, `explain` states them, `--help` describes them, and a run
started before they existed still resumes and loads as it was trained."""

from __future__ import annotations

import html
import json
import re
import shutil

import pytest

from _cli_helpers import write_reviews
from attnkit.cli import main
from attnkit.tasks.classify.config import RECIPE_BEFORE_OPTIONS

TINY = ["--model", "pooled", "--encoder", "bigru", "--embed-dim", "8", "--hidden", "4", "--vocab-size", "100",
        "--epochs", "1", "--batch-size", "8", "--no-progress"]  # fmt: skip
RECIPE = ["--attention-distribution", "sparsemax", "--task-scaling", "lin", "--encoder-diversity", "0.1",
          "--attention-values", "embeddings", "--value-layer", "6"]  # fmt: skip


def config_of(run) -> dict:
    return json.loads((run / "best" / "config.json").read_text())


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("recipe")
    data = write_reviews(root / "train.csv")
    assert main(["train", "classify", "--data", str(data), *TINY, *RECIPE, "--out", str(root / "run")]) == 0
    return root, data


def test_the_options_are_stored_in_the_checkpoint(trained):
    root, _ = trained
    config = config_of(root / "run")
    assert (config["attention_distribution"], config["task_scaling"], config["encoder_diversity"]) == (
        "sparsemax",
        "lin",
        0.1,
    )
    assert config["attention_values"] == "embeddings" and config["value_layer"] == 6
    assert json.loads((root / "run" / "last" / "config.json").read_text())["task_scaling"] == "lin"


def test_explain_states_the_recipe(trained, capsys):
    root, _ = trained
    out = root / "report.html"
    assert main(["explain", "--checkpoint", str(root / "run"), "--text", "great coffee", "--out", str(out)]) == 0
    page = out.read_text()
    assert "attention distribution: sparsemax" in page and "task scaling (TaSc): lin" in page
    assert "λ = 0.1" in page and "attention averages: the words&#x27; own embeddings" in page
    assert "each through a per-word layer of 6 units" in page
    recipe = json.loads(html.unescape(re.search(r'data-recipe="([^"]*)"', page).group(1)))
    assert recipe["attention_distribution"] == "sparsemax" and recipe["encoder_diversity"] == 0.1


def test_init_from_keeps_the_options(trained, tmp_path):
    root, data = trained
    run = tmp_path / "warm"
    argv = ["train", "classify", "--data", str(data), "--init-from", str(root / "run"), "--epochs", "1",
            "--batch-size", "8", "--no-progress", "--out", str(run)]  # fmt: skip
    assert main(argv) == 0
    assert {k: config_of(run)[k] for k in RECIPE_BEFORE_OPTIONS} == {
        k: config_of(root / "run")[k] for k in RECIPE_BEFORE_OPTIONS
    }


def test_resume_keeps_the_options_and_refuses_others(trained, tmp_path, capsys):
    root, data = trained
    run = tmp_path / "run"
    shutil.copytree(root / "run", run)
    base = ["train", "classify", "--data", str(data), *TINY, "--out", str(run), "--resume"]
    assert main([*base, *RECIPE[:2], "--task-scaling", "feat", *RECIPE[4:]]) == 2
    assert "task_scaling: lin then, feat now" in capsys.readouterr().err
    assert main([*base[:-1], "--epochs", "2", *RECIPE, "--resume"]) == 0
    assert config_of(run)["task_scaling"] == "lin" and config_of(run)["attention_distribution"] == "sparsemax"


def test_a_run_from_before_the_options_resumes_and_loads_as_trained(tmp_path, capsys):
    from attnkit.tasks.classify.inference import load_classifier

    data = write_reviews(tmp_path / "train.csv")
    run = tmp_path / "old"
    states = ["--attention-values", "states"]  # how every run was trained before the faithful recipe's default
    assert main(["train", "classify", "--data", str(data), *TINY, *states, "--out", str(run)]) == 0
    for path in [run / "best" / "config.json", run / "last" / "config.json", run / "attnkit_run.json"]:
        values = json.loads(path.read_text())
        holder = values.get("settings", values)
        for key in RECIPE_BEFORE_OPTIONS:
            holder.pop(key)
        path.write_text(json.dumps(values))
    before = load_classifier(run / "last").predict(["great coffee"])[0].probabilities
    resume = ["train", "classify", "--data", str(data), *TINY[:-5], "--epochs", "2", "--batch-size", "8",
              "--no-progress", "--out", str(run), "--resume"]  # fmt: skip
    # its command as it was typed then now means the faithful recipe: refused, naming the difference
    assert main(resume) != 0
    assert "attention_values: states then, embeddings now" in capsys.readouterr().err
    assert main([*resume, *states]) == 0
    last = json.loads((run / "last" / "config.json").read_text())
    assert not set(RECIPE_BEFORE_OPTIONS) & set(last)  # written as it started
    classifier = load_classifier(run / "last")
    assert classifier.config.task_scaling == "none" and classifier.config.attention_distribution == "softmax"
    assert classifier.config.attention_values == "states" and classifier.config.value_layer == 0
    assert classifier.predict(["great coffee"])[0].probabilities != before  # trained one more epoch


def test_the_defaults_are_the_faithful_recipe_where_the_model_attends(tmp_path):
    """Without --attention-values / --value-layer: the words' own values through a per-word layer, wherever the
    model pools by attention; mean pooling keeps the states (there is no attention to explain)."""
    from attnkit.tasks.classify.recipe import FAITHFUL_VALUE_LAYER

    data = write_reviews(tmp_path / "train.csv")
    han = ["--model", "han", "--embed-dim", "8", "--hidden", "4", "--vocab-size", "100", *TINY[-5:]]
    runs = {"pooled": TINY, "han": han, "mean": [*TINY, "--pooling", "mean"]}
    for name, options in runs.items():
        assert main(["train", "classify", "--data", str(data), *options, "--out", str(tmp_path / name)]) == 0
    assert (config_of(tmp_path / "pooled")["attention_values"], config_of(tmp_path / "pooled")["value_layer"]) == (
        "embeddings",
        FAITHFUL_VALUE_LAYER,
    )
    assert (config_of(tmp_path / "han")["attention_values"], config_of(tmp_path / "han")["value_layer"]) == (
        "embeddings",
        FAITHFUL_VALUE_LAYER,
    )
    assert (config_of(tmp_path / "mean")["attention_values"], config_of(tmp_path / "mean")["value_layer"]) == (
        "states",
        0,
    )


def test_help_describes_the_options(capsys):
    with pytest.raises(SystemExit):
        main(["train", "classify", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for fragment in ("--attention-distribution {softmax,sparsemax,entmax15}", "--task-scaling {none,lin,feat,conv}",
                     "--encoder-diversity LAMBDA", "TaSc", "conicity", "faithful attention"):  # fmt: skip
        assert fragment in text
