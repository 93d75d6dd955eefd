"""The faithfulness experiment: does each classifier's attention explain its predictions, on real data?

For each data set and model (HAN where the texts keep their sentences; pooled attention over the embeddings;
pooled over a BiGRU; pooled over a Transformer encoder) it takes the shipped model where one exists
(:data:`SHIPPED`: ``attnkit models``) or trains a short one, and trains the same recipe with uniform attention
(``--uniform-attention``), then, on a seeded sample of test documents, runs the tests of
:mod:`attnkit.explain.faithfulness` with deletion as the erasure: per method, AOPC comprehensiveness and
sufficiency, the fraction erased before the decision flips and Kendall τ with leave-one-out; Jain & Wallace's
permutation test; and, on the whole test split, Wiegreffe & Pinter's accuracy difference between learned and
uniform attention. Every figure carries a 95 % bootstrap interval over the documents.

``attnkit experiment faithfulness --data fine-foods`` writes ``docs/results/faithfulness.json``. The rows that are
no classifier's (:data:`OTHER_ROWS`: digits, cmudict, dates) are measured by this package's ``vision`` and
``seq2seq`` modules. The per-document records stay beside the runs (``documents.json``), reused while the run and
the settings are unchanged. A shipped classifier's card carries a small fixed-sample version (``card``).
"""

from __future__ import annotations

import importlib
import shlex
from dataclasses import dataclass
from pathlib import Path

from attnkit.experiments.common import ExperimentPaths, command_line, ensure_run, read_json, write_json
from attnkit.experiments.faithfulness.measure import IG_STEPS, minutes_line, target_minutes

__all__ = [
    "DATASETS",
    "DOCUMENTS",
    "MODELS",
    "SHIPPED",
    "run_faithfulness",
    "run_uniform_only",
    "shipped_uniform_argv",
    "train_argv",
]

CLASSIFIER_DATASETS = ("fine-foods", "r8", "r52", "20ng")


@dataclass(frozen=True)
class OtherRow:
    """A data set measured by its own module of this package: the row's ``model`` key, where its ``measure(paths,
    documents, threads, device, *, minutes)`` lives, and whether it takes ``--checkpoint`` (then the module's
    ``resolve_model`` checks it, and its constant named ``shipped`` is the model the row waits for otherwise)."""

    model: str
    module: str
    measure: str
    shipped: str = ""
    takes_checkpoint: bool = False

    def function(self):
        """The row's measure."""
        return getattr(importlib.import_module(f"{__name__}.{self.module}"), self.measure)

    def available(self) -> bool:
        """Whether the row can run without options (a row that takes a checkpoint: once its model ships)."""
        if not self.takes_checkpoint:
            return True
        from attnkit.pretrained import shipped_path

        return shipped_path(getattr(importlib.import_module(f"{__name__}.{self.module}"), self.shipped)) is not None


# The data sets measured by the other modules of this package, one line each.
OTHER_ROWS = {
    "digits": OtherRow("digits", "vision", "run_digits"),
    "cmudict": OtherRow("g2p", "seq2seq", "run_g2p"),
    "dates": OtherRow("transformer", "seq2seq", "run_dates_transformer", "DATES_MODEL", takes_checkpoint=True),
}
OTHER_DATASETS = tuple(OTHER_ROWS)
DATASETS = (*CLASSIFIER_DATASETS, *OTHER_DATASETS)
DOCUMENTS = 200  # test documents sampled per data set x model (the interval shows what the sample costs)
# Short recipes (minutes, not the results table's runs): GloVe 50d, one attention pooling head so that the
# attention is one distribution per document; pooled models read at most 256 tokens.
_FIT = "--embed-dim 50 --embeddings glove --dropout 0.5 --lr-decay 0.5 --epochs 8 --patience 2 --max-minutes 4"
_FIT += " --attention-values states"  # as trained before the faithful recipe became train classify's default
_POOLED = "--model pooled --pooling attention --heads 2 --max-tokens 256 --lr 2e-3"
MODELS: dict[str, list[str]] = {
    name: shlex.split(f"{options} {_FIT}")
    for name, options in {
        "han": "--model han --hidden 50 --lr 1e-3",
        "pooled": f"{_POOLED} --encoder none",
        "pooled_bigru": f"{_POOLED} --encoder bigru --hidden 64",
        "pooled_transformer": f"{_POOLED} --encoder transformer",
    }.items()
}
# The rows measured on a shipped model (``attnkit models``) instead of a short run: (data, model) -> its name.
# Their uniform twins train with the shipped model's own recipe (its card's command) and ``--uniform-attention``.
SHIPPED = {("fine-foods", "han"): "fine-foods-han", ("r8", "pooled_bigru"): "r8", ("r52", "pooled_bigru"): "r52"}
LABELS = {
    "han": "HAN",
    "pooled": "pooled",
    "pooled_bigru": "pooled + BiGRU",
    "pooled_transformer": "pooled + Transformer",
}


def models_for(data: str, punctuated: bool) -> list[str]:
    """The models of a data set: the HAN only where the texts keep their sentences (``punctuated``)."""
    return [name for name in MODELS if name != "han" or punctuated]


def train_argv(data: str, model: str, out: Path, *, uniform: bool = False) -> list[str]:
    """The ``attnkit`` arguments of one run (``uniform``: the same model with uniform attention)."""
    options = [*MODELS[model], *(["--uniform-attention"] if uniform else [])]
    return ["train", "classify", "--data", data, *options, "--seed", "0", "--out", str(out), "--resume"]


def shipped_uniform_argv(name: str, out: Path) -> list[str]:
    """The ``attnkit`` arguments of a shipped model's uniform-attention twin: the training command of its card
    (``attnkit models``) with ``--uniform-attention``, writing to ``out`` (``--threads`` and ``--out`` are the
    experiment's, not the recipe's)."""
    from attnkit.pretrained import read_card

    words = shlex.split(read_card(name)["command"])
    if words[:3] != ["attnkit", "train", "classify"] or "&&" in words:
        raise ValueError(f"{name}: its card's command is not one 'attnkit train classify' command")
    recipe: list[str] = []
    skip = False
    for word in words[1:]:
        if skip:
            skip = False
        elif word in ("--threads", "--out", "--device"):
            skip = True
        elif not word.startswith(("--threads=", "--out=", "--device=")):
            recipe.append(word)
    return [*recipe, "--uniform-attention", "--out", str(out), "--resume"]


def default_datasets() -> list[str]:
    """The data sets measured when none is named: all of :data:`DATASETS`, ``dates`` once its Transformer ships."""
    return [data for data in DATASETS if data not in OTHER_ROWS or OTHER_ROWS[data].available()]


def run_faithfulness(
    datasets: list[str],
    paths: ExperimentPaths,
    *,
    models: tuple[str, ...] | None = None,
    documents: int = DOCUMENTS,
    threads: int | None = None,
    device: str = "auto",
    checkpoint: str | None = None,
    minutes: float | None = None,
) -> dict:
    """Train (or reuse) each data set x model and its uniform twin, measure, write and return the summary
    (``checkpoint``: the Transformer of ``dates``, default the shipped one). ``minutes``: each row measures its
    sampled documents, in a seeded random order, only while this budget lasts (``None``: all of them); each row's
    minutes are recorded against the 10-minute target (training not counted)."""
    unknown = sorted(set(datasets) - set(DATASETS))
    if unknown:
        raise ValueError(f"no faithfulness setting for {', '.join(unknown)}; choose from {', '.join(DATASETS)}")
    _check_models(datasets, models)
    if documents < 1:
        raise ValueError(f"documents must be >= 1, got {documents}")
    takes = [data for data, row in OTHER_ROWS.items() if row.takes_checkpoint]
    if checkpoint is not None and (len(datasets) != 1 or datasets[0] not in takes):
        raise ValueError(f"--checkpoint is for --data {' or '.join(takes)} alone")
    for data in set(datasets) & set(takes):
        importlib.import_module(f"{__name__}.{OTHER_ROWS[data].module}").resolve_model(checkpoint)  # refused now
    plans = {data: _measures(data, models, checkpoint) for data in datasets}  # every row found before any runs
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    summary_path = paths.results / "faithfulness.json"
    summary = read_json(summary_path) or {"data": {}}
    summary["integrated_gradients_steps"] = IG_STEPS
    for data in datasets:
        section = summary["data"].setdefault(data, {"models": {}})
        given = ["--checkpoint", checkpoint] if checkpoint is not None else []
        sized = ["--documents", str(documents)] if minutes is None else []
        section["command"] = command_line(["experiment", "faithfulness", "--data", data, *sized, *given])
        for model, measure in plans[data]:
            row = measure(paths, documents, threads, device, minutes=minutes)
            row["minutes"] = {**row["minutes"], **target_minutes(row, documents, minutes)}
            section["models"][model] = row
            print(f"faithfulness {data} x {row['label']}: {minutes_line(row)}", flush=True)
            write_json(summary_path, summary)
    from attnkit.experiments.report import render_results

    render_results(paths)
    return summary


def _check_models(datasets: list[str], models: tuple[str, ...] | None) -> None:
    """Refuse ``--only`` names that are no classifier model, or ``--only`` with a data set whose one row is not a
    classifier's (digits, cmudict, dates): an option that would be ignored is refused, never ignored."""
    bad = sorted(set(models or ()) - set(MODELS))
    if bad:
        raise ValueError(f"no faithfulness model {', '.join(bad)}; choose from {', '.join(MODELS)}")
    others = [data for data in datasets if data in OTHER_ROWS]
    if models and others:
        raise ValueError(
            f"--only chooses among the classifier models ({', '.join(MODELS)}); --data {' '.join(others)} "
            "has one row of its own: leave --only out for it, or run it apart"
        )


def run_uniform_only(
    datasets: list[str], paths: ExperimentPaths, *, models: tuple[str, ...] | None = None, threads=None, device="auto"
) -> dict:
    """Only Wiegreffe & Pinter's column: train (or reuse) the uniform-attention twin of each classifier row already
    in ``faithfulness.json`` and replace that row's ``uniform``, ``uniform_command`` and ``minutes.train``, leaving
    its measured figures as they are. Rows not measured yet are left alone (run the experiment without
    ``--uniform-only`` for them)."""
    others = sorted(set(datasets) - set(CLASSIFIER_DATASETS))
    if others:
        raise ValueError(
            f"--uniform-only is for the classifier data sets ({', '.join(CLASSIFIER_DATASETS)}), not {', '.join(others)}"
        )
    _check_models(datasets, models)
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    from attnkit.data.classification import load_data_set

    summary_path = paths.results / "faithfulness.json"
    summary = read_json(summary_path) or {"data": {}}
    for data in datasets:
        rows = summary["data"].get(data, {}).get("models", {})
        chosen = [m for m in rows if m in MODELS and (not models or m in models)]
        dataset = load_data_set(data) if chosen else None
        for model in chosen:
            root = paths.runs / "faithfulness" / data / model
            classifier, metrics, _ = _learned(data, model, root, threads, device)
            found = _uniform(data, model, dataset, classifier, metrics, root, threads, device)
            row = rows[model]
            row["uniform"], row["uniform_command"] = found["uniform"], found["uniform_command"]
            row["test_accuracy"] = found["uniform"]["accuracy"]
            row["minutes"]["train"] = found["minutes"]["train"]
            write_json(summary_path, summary)
    from attnkit.experiments.report import render_results

    render_results(paths)
    return summary


def _measures(data: str, models: tuple[str, ...] | None, checkpoint: str | None) -> list[tuple[str, object]]:
    """``(model, measure(paths, documents, threads, device) -> row)`` for each model of ``data`` (``models``: only
    these, for the classifiers)."""
    from functools import partial

    row = OTHER_ROWS.get(data)
    if row is not None:
        given = {"checkpoint": checkpoint} if row.takes_checkpoint else {}
        return [(row.model, partial(row.function(), **given))]
    from attnkit.data.classification import load_data_set

    dataset = load_data_set(data)
    available = models_for(data, dataset.punctuated)
    chosen = [m for m in available if not models or m in models]
    if not chosen:
        raise ValueError(
            f"--only {' '.join(models or ())}: --data {data} has no such row (its rows: {', '.join(available)})"
        )
    return [(model, partial(_run_model, data, model, dataset)) for model in chosen]


def _learned(data: str, model: str, root: Path, threads, device) -> tuple[object, dict, str]:
    """The learned model of a row (shipped, or a short run trained now), an id of its weights, its command."""
    from attnkit.checkpointing import resolve_checkpoint
    from attnkit.tasks.classify.inference import load_classifier

    name = SHIPPED.get((data, model))
    if name is not None:
        from attnkit.pretrained import read_card

        card = read_card(name)
        metrics = {"train_seconds": f"shipped {name} {card['measured']} {card['value']}"}
        return load_classifier(resolve_checkpoint(name), device=device), metrics, f"attnkit models  # {name}"
    # the learned model is measured before its uniform twin trains: an interrupted experiment keeps the records
    metrics = ensure_run(train_argv(data, model, root / "learned"), root / "learned", threads=threads, device=device)
    command = command_line(train_argv(data, model, _published(data, model) / "learned"))
    return load_classifier(root / "learned" / "best", device=device), metrics, command


def _run_model(
    data: str, model: str, dataset, paths: ExperimentPaths, documents: int, threads, device, *, minutes=None
) -> dict:
    """One data set x model: both runs, the measurements (reused when unchanged), the summary row."""
    from attnkit.experiments.faithfulness.measure import (
        Stopwatch,
        measure_documents,
        reuse_or_measure,
        sample_documents,
        summarise_documents,
    )
    from attnkit.explain.faithfulness.methods import METHODS

    clock = Stopwatch()
    root = paths.runs / "faithfulness" / data / model
    classifier, metrics, learned_command = _learned(data, model, root, threads, device)
    numbers = sample_documents(len(dataset.test_texts), documents)
    settings = {"run": metrics["train_seconds"], "documents": numbers, "steps": IG_STEPS, "methods": list(METHODS)}
    texts, labels = dataset.test_texts, dataset.test_labels

    def measure() -> list[dict]:
        return measure_documents(classifier, texts, labels, numbers, methods=METHODS, steps=IG_STEPS, minutes=minutes)

    records, measured = reuse_or_measure(root / "documents.json", settings, measure, minutes=minutes)
    shipped = SHIPPED.get((data, model))
    uniform = _uniform(data, model, dataset, classifier, metrics, root, threads, device)
    baseline, trained, uniform_command = uniform["uniform"], uniform["minutes"]["train"], uniform["uniform_command"]
    return {
        "label": LABELS[model] if shipped is None else f"{LABELS[model]} (shipped {shipped})",
        "shipped": shipped,
        "run_command": learned_command,
        "uniform_command": uniform_command,
        "test_accuracy": baseline["accuracy"],
        "uniform": baseline,
        "minutes": {
            "train": trained,
            "measure": measured,
            "accuracy": uniform["minutes"]["accuracy"],
            "this_command": clock.minutes(),
        },
        "sampled": len(numbers),
        **summarise_documents(records),
    }


def _uniform(data: str, model: str, dataset, classifier, metrics: dict, root: Path, threads, device) -> dict:
    """Wiegreffe & Pinter's baseline of a row: its uniform-attention twin (the short recipe, or a shipped model's own
    recipe: :func:`shipped_uniform_argv`) trained or reused, and the accuracy difference on the whole test split
    (reused while both runs are unchanged): the row's ``uniform``, ``uniform_command`` and ``minutes``."""
    from attnkit.experiments.faithfulness.measure import Stopwatch, uniform_difference
    from attnkit.tasks.classify.inference import load_classifier

    shipped = SHIPPED.get((data, model))
    if shipped is None:
        uniform_argv = train_argv(data, model, root / "uniform", uniform=True)
        published = [*uniform_argv[:-3], "--out", str(_published(data, model) / "uniform")]
    else:
        uniform_argv = shipped_uniform_argv(shipped, root / "uniform")
        published = shipped_uniform_argv(shipped, _published(data, model) / "uniform")[:-1]
    uniform_metrics = ensure_run(uniform_argv, root / "uniform", threads=threads, device=device)
    both = {"learned": metrics["train_seconds"], "uniform": uniform_metrics["train_seconds"]}
    stored = read_json(root / "uniform.json")
    if stored and stored.get("runs") == both:
        baseline, accuracy_minutes = stored["result"], stored.get("minutes", 0.0)
    else:
        clock = Stopwatch()
        uniform = load_classifier(root / "uniform" / "best", device=device)
        baseline = uniform_difference(classifier, uniform, dataset.test_texts, dataset.test_labels)
        accuracy_minutes = clock.minutes()
        write_json(root / "uniform.json", {"runs": both, "result": baseline, "minutes": accuracy_minutes})
    learned_seconds = 0.0 if shipped is not None else metrics["train_seconds"]
    trained = round((learned_seconds + uniform_metrics["train_seconds"]) / 60, 1)
    minutes = {"train": trained, "accuracy": accuracy_minutes}
    return {"uniform": baseline, "uniform_command": command_line(published), "minutes": minutes}


def _published(data: str, model: str) -> Path:
    """Where a row's runs go under the default ``--runs`` (the path its published commands name)."""
    return Path(f"runs/experiments/faithfulness/{data}/{model}")
