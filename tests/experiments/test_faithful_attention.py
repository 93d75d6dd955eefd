"""The faithful-attention experiment's grid and choice (issue #38): every recipe is a valid training command, the
choice reads validation figures only and follows its documented rule, the combination takes one recipe per
family, and the section renders from recorded JSON."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnkit.cli import build_parser, main
from attnkit.experiments.faithful_attention import RECIPES, ROWS, choose, render_faithful_attention
from attnkit.experiments.faithful_attention.recipes import Recipe, combine
from attnkit.experiments.faithful_attention.run import _combination, explanation, train_argv


def commands() -> list[list[str]]:
    return [
        train_argv(row, recipe, 0, Path("out"))
        for row in ROWS.values()
        for recipe in RECIPES.values()
        if row.applies(recipe)
    ]


@pytest.mark.parametrize("argv", commands(), ids=lambda argv: " ".join(argv[3:5]))
def test_every_recipe_of_every_row_is_a_valid_training_command(argv):
    args = build_parser().parse_args(argv)
    assert args.resume and args.seed == 0


def test_a_recipe_s_option_takes_the_place_of_today_s_and_every_option_is_given_once():
    for row in ROWS.values():
        for recipe in (r for r in RECIPES.values() if row.applies(r)):
            options = [word for word in row.argv(recipe) if word.startswith("--")]
            assert len(options) == len(set(options)), (row.data, recipe.name)
    r8 = ROWS[("r8", "pooled_bigru")]
    args = build_parser().parse_args(train_argv(r8, RECIPES["embedding-values"], 0, Path("o")))
    assert (args.attention_values, args.value_layer) == ("embeddings", 0)
    args = build_parser().parse_args(train_argv(r8, RECIPES["today"], 0, Path("o")))
    assert args.attention_values == "states"  # today's recipe, not train classify's newer default


def test_the_default_recipe_is_what_train_classify_gives_where_the_model_attends():
    from attnkit.experiments.faithful_attention.recipes import DEFAULT_RECIPE
    from attnkit.tasks.classify.recipe import apply_recipe_defaults

    for row in ROWS.values():
        recipe = RECIPES[DEFAULT_RECIPE]
        given = build_parser().parse_args(train_argv(row, recipe, 0, Path("o")))
        words = train_argv(row, recipe, 0, Path("o"))
        at = words.index("--attention-values")
        default = build_parser().parse_args(words[:at] + words[at + 4 :])  # without --attention-values, --value-layer
        apply_recipe_defaults(default)
        assert (default.attention_values, default.value_layer) == (given.attention_values, given.value_layer)


def test_attend_all_removes_content_only_where_today_has_it():
    han, bigru = ROWS[("fine-foods", "han")], ROWS[("r8", "pooled_bigru")]
    recipe = RECIPES["attend-all"]
    assert han.applies(recipe) and not bigru.applies(recipe)
    options = han.argv(recipe)
    assert "--attend" not in options and "content" not in options and len(options) == len(han.today) - 2


def test_a_longer_recipe_multiplies_today_s_epochs_and_a_combination_keeps_it():
    han = ROWS[("fine-foods", "han")]
    parsed, today = build_parser().parse_args(train_argv(han, RECIPES["embedding-values-2x"], 0, Path("o"))), han.today
    assert parsed.epochs == 2 * int(today[today.index("--epochs") + 1]) and parsed.attention_values == "embeddings"
    both = combine([RECIPES["sparsemax"], RECIPES["embedding-values-2x"]])
    assert both.epochs_times == 2 and han.argv(both).count("--epochs") == 1


def test_a_recipe_for_some_models_applies_to_them_only_and_a_combination_keeps_the_limit():
    han, bigru = ROWS[("fine-foods", "han")], ROWS[("r8", "pooled_bigru")]
    recipe = RECIPES["embedding-values-2x-bigrams"]
    assert han.applies(recipe) and not bigru.applies(recipe)
    parsed = build_parser().parse_args(train_argv(han, recipe, 0, Path("o")))
    assert parsed.bigram_buckets > 0 and parsed.attention_values == "embeddings"
    both = combine([RECIPES["sparsemax"], recipe])
    assert both.models == ("han",) and han.applies(both) and not bigru.applies(both)
    assert combine([RECIPES["sparsemax"], RECIPES["diversity"]]).models == ()


def probe(accuracy: float, attention: float, ig: float = 0.4, flips: tuple[float, float] = (0.2, 0.2)) -> dict:
    means = {
        "attention": {"aopc_comprehensiveness": attention, "flip_fraction": flips[0]},
        "integrated_gradients": {"aopc_comprehensiveness": ig, "flip_fraction": flips[1]},
        "random": {"aopc_comprehensiveness": 0.02, "flip_fraction": 0.8},
    }
    return {"valid_accuracy": accuracy, "means": means, "share_of_ig": attention / ig, "minutes": 1.0, "documents": 40}


def test_the_choice_prefers_faithful_and_accurate_then_the_most_accurate():
    probes = {
        "today": probe(80.0, 0.2),
        "sparsemax": probe(80.5, 0.38),  # faithful (0.95x), accurate
        "tasc-lin": probe(81.0, 0.37),  # faithful (0.925x), more accurate: chosen
        "tasc-feat": probe(78.0, 0.40),  # faithful, but 2 points less accurate than today
        "entmax15": probe(82.0, 0.38, flips=(0.40, 0.2)),  # flips too late to count as faithful
    }
    assert choose(probes)[0] == "tasc-lin"


def test_with_no_faithful_recipe_the_largest_share_among_accurate_ones_is_chosen():
    probes = {"today": probe(80.0, 0.2), "sparsemax": probe(79.5, 0.3), "tasc-lin": probe(75.0, 0.35)}
    name, reason = choose(probes)
    assert name == "sparsemax" and "no recipe faithful" in reason


def test_a_model_is_judged_by_its_own_attention_explanation_where_it_has_one():
    """An --attention-values embeddings model explains by attention x each word's part (its flips count too)."""
    values = probe(79.5, 0.15)
    values["means"]["attention_contribution"] = {"aopc_comprehensiveness": 0.42, "flip_fraction": 0.22}
    values["contribution_share_of_ig"] = 0.42 / 0.4
    probes = {"today": probe(80.0, 0.2), "embedding-values": values, "sparsemax": probe(80.0, 0.3)}
    assert explanation(values) == ("attention_contribution", 0.42 / 0.4)
    assert explanation(probes["today"]) == ("attention", 0.5)
    name, reason = choose(probes)
    assert name == "embedding-values" and "faithful on validation" in reason
    values["means"]["attention_contribution"]["flip_fraction"] = 0.3  # flips later than IG + 0.05: not faithful
    assert choose(probes) == ("embedding-values", choose(probes)[1]) and "no recipe faithful" in choose(probes)[1]


def test_the_combination_takes_the_best_gaining_recipe_of_each_family():
    row = ROWS[("fine-foods", "han")]
    probes = {
        "today": probe(80.0, 0.2),
        "sparsemax": probe(80.0, 0.30),
        "entmax15": probe(80.0, 0.25),
        "tasc-lin": probe(80.0, 0.32),
        "tasc-feat": probe(75.0, 0.39),  # gains but costs accuracy: not taken
        "diversity": probe(80.0, 0.1),  # loses share: not taken
    }
    combined = _combination(row, probes)
    assert combined.name == "sparsemax + tasc-lin"
    assert combined.options == ("--attention-distribution", "sparsemax", "--task-scaling", "lin")
    assert _combination(row, {"today": probe(80.0, 0.2), "sparsemax": probe(80.0, 0.3)}) is None
    with pytest.raises(ValueError, match="one recipe per family"):
        combine([RECIPES["sparsemax"], RECIPES["entmax15"]])
    assert combine([RECIPES["attend-all"], Recipe("x", ("--task-scaling", "lin"), "scaling")]).remove == (
        "--attend",
        "content",
    )


def test_the_section_renders_probes_choice_and_confirmation():
    summary = {
        "methods": {
            name: {
                figure: {"mean": 0.1, "low": 0.05, "high": 0.15, "n": 40}
                for figure in ("aopc_comprehensiveness", "aopc_sufficiency", "flip_fraction", "tau_leave_one_out")
            }
            for name in ("attention", "integrated_gradients", "random")
        }
    }
    confirmed = {
        "test_accuracy_mean": 81.0,
        "test_accuracy_std": 0.3,
        "uniform": {"difference": {"mean": 1.0, "low": 0.2, "high": 1.8, "n": 1000}},
        "summary": summary,
        "command": "attnkit train classify --data fine-foods",
    }
    table = {
        "fine-foods": {
            "han": {
                "label": "HAN",
                "probe": {"today": probe(80.0, 0.2), "tasc-lin": probe(81.0, 0.37)},
                "chosen": "tasc-lin",
                "reason": "faithful",
                "confirm": {"today": confirmed, "tasc-lin": confirmed},
                "baseline": 80.9,
            }
        }
    }
    text = render_faithful_attention(table)
    assert (
        "### fine-foods: HAN" in text and "| tasc-lin **(chosen)** | 81.00 |" in text and f"{0.37 / 0.4:.2f}×" in text
    )
    assert "TF-IDF + LR: 80.90" in text and "1.00 [0.20, 1.80]" in text
    assert "Not run yet" in render_faithful_attention(None)
    del table["fine-foods"]["han"]["chosen"], table["fine-foods"]["han"]["confirm"]  # probes still under way
    assert "Not chosen yet" in render_faithful_attention(table)


def test_unknown_recipes_and_rows_are_one_error_line(tmp_path, capsys):
    (tmp_path / "docs").mkdir()
    runs, docs = str(tmp_path / "runs"), str(tmp_path / "docs")
    argv = ["experiment", "faithful-attention", "--runs", runs, "--docs", docs]
    assert main([*argv, "--recipes", "nonsense"]) == 2
    assert "unknown recipe(s) nonsense" in capsys.readouterr().err
    assert main([*argv, "--data", "r8", "--only", "han"]) == 2
    assert "no row for --data r8" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_a_recorded_combination_is_named_back_into_its_recipe():
    from attnkit.experiments.faithful_attention.run import recipe_named

    combined = recipe_named("sparsemax + tasc-lin")
    assert combined.options == ("--attention-distribution", "sparsemax", "--task-scaling", "lin")
    assert recipe_named("today") is RECIPES["today"]
    with pytest.raises(ValueError, match="unknown recipe"):
        recipe_named("sparsemax + nonsense")


def test_two_processes_probing_one_row_keep_each_others_probes(tmp_path):
    from attnkit.experiments.faithful_attention.run import _save

    path, row = tmp_path / "faithful_attention.json", ROWS[("fine-foods", "han")]
    _save(path, row, {"probe": {"today": probe(80.0, 0.2)}})
    entry = _save(path, row, {"probe": {"sparsemax": probe(80.0, 0.3)}})
    assert sorted(entry["probe"]) == ["sparsemax", "today"]


def test_a_recipe_confirmed_before_another_was_chosen_keeps_its_test_figures(tmp_path):
    from attnkit.experiments.faithful_attention.run import _save

    path, row = tmp_path / "faithful_attention.json", ROWS[("fine-foods", "han")]
    _save(path, row, {"probe": {"today": {"valid_accuracy": 80.0}}, "confirm": {"embedding-values": {"mean": 79.4}}})
    entry = _save(path, row, {"confirm": {"today": {"mean": 80.7}, "embedding-values-2x": {"mean": 80.1}}})
    assert list(entry["confirm"]) == ["embedding-values", "today", "embedding-values-2x"]
    assert entry["probe"] == {"today": {"valid_accuracy": 80.0}}
