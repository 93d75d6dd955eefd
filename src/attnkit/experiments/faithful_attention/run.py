"""``attnkit experiment faithful-attention``: which training recipe makes a classifier's attention the explanation?

Two stages per row (data set x model, :data:`~attnkit.experiments.faithful_attention.recipes.ROWS`):

1. **probe** (validation only, one seed): each recipe trains with seed 0 on the training split less a 10 %
   validation split; its validation accuracy and, on a seeded sample of validation documents, attention's AOPC
   comprehensiveness and flip fraction beside integrated gradients' and random's. The best combination (one
   recipe per family, each kept when it raised attention's share of IG's comprehensiveness without costing more
   than :data:`ACCURACY_SLACK` points of validation accuracy) is probed too. :func:`choose` then picks the
   recommended recipe from these validation figures alone.
2. **confirm** (test, three seeds): today's recipe and the recommended one, each with seeds 0, 1, 2: test accuracy
   (mean ± sd) beside TF-IDF + LR; on a seeded sample of test documents (seed 0's model) every figure of the
   faithfulness experiment (attention, integrated gradients, leave-one-out, random; bootstrap intervals; the
   permutation test); and the uniform-attention twin's accuracy difference on the whole test split.

Runs go to ``runs/experiments/faithful-attention/DATA/MODEL/RECIPE/seedN`` and are reused when finished;
``docs/results/faithful_attention.json`` keeps every figure, and ``docs/results.md`` is re-rendered.
"""

from __future__ import annotations

import re
from pathlib import Path

from attnkit.experiments.common import ExperimentPaths, command_line, ensure_run, mean_std, read_json, write_json
from attnkit.experiments.faithful_attention.recipes import DEFAULT_RECIPE, RECIPES, ROWS, Recipe, Row, combine
from attnkit.training.run_report import in_percent

__all__ = [
    "ACCURACY_SLACK",
    "FAITHFUL_SHARE",
    "choose",
    "explanation",
    "recipe_named",
    "run_faithful_attention",
    "train_argv",
]

ACCURACY_SLACK = 1.0  # points of validation accuracy a recipe may lose against today's and still be chosen
FAITHFUL_SHARE = 0.9  # attention's AOPC comprehensiveness as a share of IG's that counts as faithful (issue #38)
FLIP_SLACK = 0.05  # attention's flip fraction may exceed IG's by this much
# scaled_attention: |attention x task score| of TaSc models (what their pooling multiplies); attention_contribution:
# attention x each word's part of the logit, for --attention-values embeddings models; absent for the others
_OWN = ("attention", "scaled_attention", "attention_contribution")
PROBE_METHODS = (*_OWN, "integrated_gradients", "random")
CONFIRM_METHODS = (*_OWN, "integrated_gradients", "leave_one_out", "random")
STEPS = 16  # integrated gradients' steps, as in the faithfulness experiment
VALID_FRACTION = 0.1  # the training command's default validation share


def train_argv(row: Row, recipe: Recipe, seed: int, out: Path, *, uniform: bool = False) -> list[str]:
    """The ``attnkit`` arguments of one run of ``recipe`` on ``row`` (``uniform``: its uniform-attention twin)."""
    extra = ["--uniform-attention"] if uniform else []
    options = [*row.argv(recipe), *extra, "--seed", str(seed), "--out", str(out), "--resume"]
    return ["train", "classify", "--data", row.data, *options]


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _run_dir(root: Path, row: Row, recipe: Recipe, seed: int) -> Path:
    return root / "faithful-attention" / row.data / row.model / _slug(recipe.name) / f"seed{seed}"


def _measure(classifier, texts, labels, documents: int, methods, cache: Path, run_id) -> dict:
    """The faithfulness summary of ``classifier`` on a seeded sample of ``documents`` of ``texts`` (reused from
    ``cache`` while the run and the settings are unchanged)."""
    from attnkit.experiments.faithfulness.measure import measure_documents, sample_documents, summarise_documents

    numbers = sample_documents(len(texts), documents)
    settings = {"run": run_id, "documents": numbers, "steps": STEPS, "methods": list(methods)}
    stored = read_json(cache)
    if stored and stored.get("settings") == settings:
        return stored["summary"]
    records = measure_documents(classifier, texts, labels, numbers, methods=methods, steps=STEPS)
    summary = summarise_documents(records)
    write_json(cache, {"settings": settings, "summary": summary, "records": records})
    return summary


def _figures(summary: dict) -> dict:
    """The figures a choice reads: each method's mean comprehensiveness and flip fraction, attention's share."""
    means = {
        name: {figure: values[figure]["mean"] for figure in ("aopc_comprehensiveness", "flip_fraction")}
        for name, values in summary["methods"].items()
    }
    ig = means["integrated_gradients"]["aopc_comprehensiveness"]

    def share(name: str) -> float | None:
        return means[name]["aopc_comprehensiveness"] / ig if name in means and ig else None

    return {
        "means": means,
        "share_of_ig": share("attention"),
        "scaled_share_of_ig": share("scaled_attention"),
        "contribution_share_of_ig": share("attention_contribution"),
    }


def probe(row: Row, recipe: Recipe, paths: ExperimentPaths, documents: int, threads, device) -> dict:
    """Stage 1 for one recipe: seed 0's run, its validation accuracy and its validation faithfulness figures."""
    from attnkit.data.classification import load_data_set
    from attnkit.tasks.classify.inference import load_classifier
    from attnkit.tasks.classify.training import validation_split

    out = _run_dir(paths.runs, row, recipe, 0)
    metrics = in_percent(ensure_run(train_argv(row, recipe, 0, out), out, threads=threads, device=device))
    dataset = load_data_set(row.data)
    _, valid = validation_split(dataset, VALID_FRACTION, 0)
    texts = [dataset.train_texts[i] for i in valid]
    labels = [dataset.train_labels[i] for i in valid]
    classifier = load_classifier(out / "best", device=device)
    summary = _measure(
        classifier, texts, labels, documents, PROBE_METHODS, out / "probe.json", metrics["train_seconds"]
    )
    return {
        "options": row.argv(recipe),
        "valid_accuracy": round(metrics["best_valid"]["accuracy"], 2),
        "minutes": round(metrics["train_seconds"] / 60, 1),
        "documents": summary["documents"],
        "summary": summary,
        **_figures(summary),
    }


# The attention explanation a recipe's model gives, its own first: what its pooling multiplies (TaSc) or each word's
# attention times its own part of the logit (--attention-values embeddings); else the attention weights.
_EXPLANATIONS = (
    ("attention_contribution", "contribution_share_of_ig"),
    ("scaled_attention", "scaled_share_of_ig"),
    ("attention", "share_of_ig"),
)


def explanation(result: dict) -> tuple[str, float | None]:
    """The method that explains a probe's model through its attention, and its share of IG's comprehensiveness."""
    for method, share in _EXPLANATIONS:
        if result.get(share) is not None:
            return method, result[share]
    return "attention", None


def _faithful(result: dict) -> bool:
    method, share = explanation(result)
    means = result["means"]
    flips_ok = means[method]["flip_fraction"] <= means["integrated_gradients"]["flip_fraction"] + FLIP_SLACK
    return share is not None and share >= FAITHFUL_SHARE and flips_ok


def choose(probes: dict[str, dict]) -> tuple[str, str]:
    """The recommended recipe from the probes' validation figures alone, and why.

    Accurate: validation accuracy within :data:`ACCURACY_SLACK` points of today's. Among accurate recipes, the
    faithful ones (attention ≥ :data:`FAITHFUL_SHARE` of IG's comprehensiveness, flip fraction ≤ IG's + 0.05) win,
    the most accurate first; with none faithful, the one whose attention holds the largest share of IG's. A model's
    attention explanation is :func:`explanation`'s: its own attention-derived method where it has one."""
    today = probes["today"]["valid_accuracy"]
    accurate = {name: result for name, result in probes.items() if result["valid_accuracy"] >= today - ACCURACY_SLACK}
    faithful = {name: result for name, result in accurate.items() if _faithful(result)}
    if faithful:
        name = max(faithful, key=lambda n: (faithful[n]["valid_accuracy"], faithful[n]["share_of_ig"]))
        return name, "faithful on validation and the most accurate of the faithful recipes"
    name = max(accurate, key=lambda n: explanation(accurate[n])[1] or 0.0)
    return name, "no recipe faithful on validation: the accurate one whose attention holds most of IG's"


def _combination(row: Row, probes: dict[str, dict]) -> Recipe | None:
    """One recipe per family that raised attention's share of IG's without costing accuracy, combined."""
    today = probes["today"]
    picks: dict[str, tuple[float, Recipe]] = {}
    for name, result in probes.items():
        recipe = RECIPES.get(name)
        if recipe is None or recipe.family is None or result["share_of_ig"] is None:
            continue
        gains = result["share_of_ig"] > (today["share_of_ig"] or 0.0)
        accurate = result["valid_accuracy"] >= today["valid_accuracy"] - ACCURACY_SLACK
        better = recipe.family not in picks or result["share_of_ig"] > picks[recipe.family][0]
        if gains and accurate and better:
            picks[recipe.family] = (result["share_of_ig"], recipe)
    combined = combine([recipe for _, recipe in picks.values()])
    return combined if combined is not None and row.applies(combined) else None


def run_probes(row: Row, names: list[str], paths, documents: int, threads, device) -> tuple[dict, dict[str, Recipe]]:
    """Stage 1 on ``row``: every applicable recipe of ``names``, then their combination; each probe is saved to the
    results JSON as soon as it is measured, so that a stopped experiment keeps what it finished."""
    path = paths.results / "faithful_attention.json"
    recipes = {name: RECIPES[name] for name in names if row.applies(RECIPES[name])}
    probes = {}
    for name, recipe in recipes.items():
        probes[name] = probe(row, recipe, paths, documents, threads, device)
        _save(path, row, {"probe": {name: _brief(probes[name])}})
    combined = _combination(row, probes)
    if combined is not None:
        recipes[combined.name] = combined
        probes[combined.name] = probe(row, combined, paths, documents, threads, device)
        _save(path, row, {"probe": {combined.name: _brief(probes[combined.name])}})
    return probes, recipes


def confirm(row: Row, recipe: Recipe, paths, seeds: int, documents: int, threads, device) -> dict:
    """Stage 2 for one recipe: ``seeds`` runs' test accuracy, seed 0's test faithfulness and uniform twin."""
    from attnkit.data.classification import load_data_set
    from attnkit.experiments.faithfulness.measure import uniform_difference
    from attnkit.tasks.classify.inference import load_classifier

    accuracies, minutes = [], []
    for seed in range(seeds):
        out = _run_dir(paths.runs, row, recipe, seed)
        metrics = in_percent(ensure_run(train_argv(row, recipe, seed, out), out, threads=threads, device=device))
        accuracies.append(round(metrics["test"]["accuracy"], 2))
        minutes.append(metrics["train_seconds"] / 60)
    seed0 = _run_dir(paths.runs, row, recipe, 0)
    dataset = load_data_set(row.data)
    classifier = load_classifier(seed0 / "best", device=device)
    run_id = read_json(seed0 / "metrics.json")["train_seconds"]
    texts, labels = dataset.test_texts, dataset.test_labels
    summary = _measure(classifier, texts, labels, documents, CONFIRM_METHODS, seed0 / "test_faithfulness.json", run_id)
    twin = seed0.parent / "uniform"
    ensure_run(train_argv(row, recipe, 0, twin, uniform=True), twin, threads=threads, device=device)
    uniform = uniform_difference(classifier, load_classifier(twin / "best", device=device), texts, labels)
    mean, std = mean_std(accuracies)
    return {
        "options": row.argv(recipe),
        "command": command_line(train_argv(row, recipe, 0, _run_dir(ExperimentPaths().runs, row, recipe, 0))),
        "test_accuracy": accuracies,
        "test_accuracy_mean": round(mean, 2),
        "test_accuracy_std": round(std, 2),
        "minutes_mean": round(sum(minutes) / len(minutes), 1),
        "uniform": uniform,
        "documents": summary["documents"],
        "summary": summary,
        **_figures(summary),
    }


def recipe_named(name: str) -> Recipe:
    """The recipe a table names: one of :data:`RECIPES`, or a combination ``a + b`` of them."""
    if name in RECIPES:
        return RECIPES[name]
    parts = name.split(" + ")
    unknown = [part for part in parts if part not in RECIPES]
    if unknown or len(parts) < 2:
        raise ValueError(f"unknown recipe {name!r}; choose from {', '.join(RECIPES)} or a combination 'a + b'")
    return combine([RECIPES[part] for part in parts])


def _brief(result: dict) -> dict:
    """A probe's record without its per-method intervals (kept beside the run, in ``probe.json``)."""
    return {key: value for key, value in result.items() if key != "summary"}


def _save(path: Path, row: Row, update: dict) -> dict:
    """Merge ``update`` into ``row``'s entry of the JSON as it is on disk now (probes and confirmations merged by
    recipe, so a recipe confirmed before another was chosen keeps its figures), write it, and return the entry:
    what another process recorded meanwhile survives."""
    table = read_json(path) or {}
    entry = table.setdefault(row.data, {}).setdefault(row.model, {"label": row.label, "probe": {}})
    for merged in ("probe", "confirm"):
        if merged in update:
            entry.setdefault(merged, {}).update(update.pop(merged))
    entry.update(update)
    write_json(path, table)
    return entry


def _baseline(data: str, paths: ExperimentPaths) -> float:
    """TF-IDF + LR's test accuracy on ``data`` (the classification table's figure when it has one)."""
    table = read_json(paths.results / "classification.json") or {}
    if data in table:
        return table[data]["baseline"]["test_accuracy"]
    from attnkit.data.classification import load_data_set
    from attnkit.tasks.classify.baselines import tfidf_logreg_accuracy

    d = load_data_set(data)
    return round(100 * tfidf_logreg_accuracy(d.train_texts, d.train_labels, d.test_texts, d.test_labels, seed=0), 2)


def run_faithful_attention(
    rows: list[tuple[str, str]],
    paths: ExperimentPaths,
    *,
    recipes: list[str] | None = None,
    stage: str = "all",
    seeds: int = 3,
    documents: int = 40,
    threads: int | None = None,
    device: str = "auto",
) -> dict:
    """Run the stages on ``rows`` ((data, model) keys of ROWS), write the JSON and re-render the results page.

    Several processes may run rows, or recipes of one row, at once (one core each): each saves only what it
    measured into what the file holds then (:func:`_save`), and the choice reads every probe recorded for the row.
    """
    unknown = [key for key in rows if key not in ROWS]
    if unknown:
        raise ValueError(f"no faithful-attention row for {unknown}; choose from {sorted(ROWS)}")
    path = paths.results / "faithful_attention.json"
    for key in rows:
        row = ROWS[key]
        _, known = run_probes(row, list(recipes or RECIPES), paths, documents, threads, device)
        entry = _save(path, row, {})
        entry = _save(path, row, dict(zip(("chosen", "reason"), choose(entry["probe"]), strict=True)))
        if stage == "all":
            names = ("today", entry["chosen"], *([DEFAULT_RECIPE] if row.applies(RECIPES[DEFAULT_RECIPE]) else []))
            picks = {name: known.get(name) or recipe_named(name) for name in names}
            confirmed = {n: confirm(row, r, paths, seeds, documents, threads, device) for n, r in picks.items()}
            _save(path, row, {"confirm": confirmed, "baseline": _baseline(row.data, paths)})
    from attnkit.experiments.report import render_results

    render_results(paths)
    return read_json(path) or {}
