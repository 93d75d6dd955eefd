"""The faithfulness experiment: does each classifier's attention explain its predictions, on real data?

For each data set and model (HAN where the texts keep their sentences; pooled attention over the embeddings;
pooled over a BiGRU; pooled over a Transformer encoder) it trains a short model and the same model with uniform
attention (``--uniform-attention``), then, on a seeded sample of test documents, runs the tests of
:mod:`attnkit.explain.faithfulness` with deletion as the erasure: per method, AOPC comprehensiveness and
sufficiency, the fraction erased before the decision flips and Kendall τ with leave-one-out; Jain & Wallace's
permutation test; and, on the whole test split, Wiegreffe & Pinter's accuracy difference between learned and
uniform attention. Every figure carries a 95 % bootstrap interval over the documents.

``attnkit experiment faithfulness --data fine-foods`` writes ``docs/results/faithfulness.json`` (then
``docs/results.md``). The per-document records stay beside the runs (``documents.json``) and are reused when the
run and the settings have not changed.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from attnkit.experiments.common import ExperimentPaths, command_line, ensure_run, read_json, write_json

__all__ = ["DATASETS", "DOCUMENTS", "MODELS", "run_faithfulness", "train_argv"]

DATASETS = ("fine-foods", "r8", "r52", "20ng")
DOCUMENTS = 200  # test documents sampled per data set x model (the interval shows what the sample costs)
IG_STEPS = 16
# Short recipes (minutes, not the results table's runs): GloVe 50d, one attention pooling head so that the
# attention is one distribution per document; pooled models read at most 256 tokens.
_FIT = "--embed-dim 50 --embeddings glove --dropout 0.5 --lr-decay 0.5 --epochs 8 --patience 2 --max-minutes 4"
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


def run_faithfulness(
    datasets: list[str],
    paths: ExperimentPaths,
    *,
    models: tuple[str, ...] | None = None,
    documents: int = DOCUMENTS,
    threads: int | None = None,
    device: str = "auto",
) -> dict:
    """Train (or reuse) each data set x model and its uniform twin, measure, write and return the summary."""
    unknown = sorted(set(datasets) - set(DATASETS))
    if unknown:
        raise ValueError(f"no faithfulness setting for {', '.join(unknown)}; choose from {', '.join(DATASETS)}")
    bad = sorted(set(models or ()) - set(MODELS))
    if bad:
        raise ValueError(f"no faithfulness model {', '.join(bad)}; choose from {', '.join(MODELS)}")
    if documents < 1:
        raise ValueError(f"documents must be >= 1, got {documents}")
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    from attnkit.data.classification import load_data_set

    summary_path = paths.results / "faithfulness.json"
    summary = read_json(summary_path) or {"data": {}}
    summary["documents"] = documents
    summary["integrated_gradients_steps"] = IG_STEPS
    for data in datasets:
        dataset = load_data_set(data)
        section = summary["data"].setdefault(data, {"models": {}})
        for model in models_for(data, dataset.punctuated):
            if models and model not in models:
                continue
            section["models"][model] = _run_model(data, model, dataset, paths, documents, threads, device)
            section["command"] = command_line(["experiment", "faithfulness", "--data", data])
            write_json(summary_path, summary)
    from attnkit.experiments.report import render_results

    render_results(paths)
    return summary


def _run_model(data: str, model: str, dataset, paths: ExperimentPaths, documents: int, threads, device) -> dict:
    """One data set x model: both runs, the measurements (reused when unchanged), the summary row."""
    from attnkit.experiments.faithfulness_measure import (
        Stopwatch,
        measure_documents,
        sample_documents,
        summarise_documents,
        uniform_difference,
    )
    from attnkit.explain.faithfulness.names import METHODS
    from attnkit.tasks.classify.inference import load_classifier

    clock = Stopwatch()
    root = paths.runs / "faithfulness" / data / model
    # the learned model is measured before its uniform twin trains: an interrupted experiment keeps the records
    metrics = ensure_run(train_argv(data, model, root / "learned"), root / "learned", threads=threads, device=device)
    classifier = load_classifier(root / "learned" / "best", device=device)
    numbers = sample_documents(len(dataset.test_texts), documents)
    settings = {"run": metrics["train_seconds"], "documents": numbers, "steps": IG_STEPS, "methods": list(METHODS)}
    stored = read_json(root / "documents.json")
    if stored and stored.get("settings") == settings:
        records, measured = stored["records"], stored["minutes"]
    else:
        measuring = Stopwatch()
        texts, labels = dataset.test_texts, dataset.test_labels
        records = measure_documents(classifier, texts, labels, numbers, methods=METHODS, steps=IG_STEPS)
        measured = measuring.minutes()
        write_json(root / "documents.json", {"settings": settings, "minutes": measured, "records": records})
    uniform_argv = train_argv(data, model, root / "uniform", uniform=True)
    uniform_metrics = ensure_run(uniform_argv, root / "uniform", threads=threads, device=device)
    both = {"learned": metrics["train_seconds"], "uniform": uniform_metrics["train_seconds"]}
    stored = read_json(root / "uniform.json")
    if stored and stored.get("runs") == both:
        baseline = stored["result"]
    else:
        uniform = load_classifier(root / "uniform" / "best", device=device)
        baseline = uniform_difference(classifier, uniform, dataset.test_texts, dataset.test_labels)
        write_json(root / "uniform.json", {"runs": both, "result": baseline})
    trained = round((metrics["train_seconds"] + uniform_metrics["train_seconds"]) / 60, 1)
    learned_out = Path(f"runs/experiments/faithfulness/{data}/{model}/learned")
    return {
        "label": LABELS[model],
        "run_command": command_line(train_argv(data, model, learned_out)),
        "test_accuracy": round(100 * metrics["test"]["accuracy"], 2),
        "uniform": baseline,
        "minutes": {"train": trained, "measure": measured, "this_command": clock.minutes()},
        **summarise_documents(records),
    }
