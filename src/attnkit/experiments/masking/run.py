"""The masking experiment: does masking padding in attention pooling matter?

HAN code online lets the attention softmax run over the padding. Does masking it, or renormalising after the
softmax, change what the model learns? Asked where the answer can matter: a HAN whose BiGRUs run over the padding
(``--unpacked-rnn``, so a padded slot has a non-zero encoding), trained on random batches, where most slots are
padding. Each attention pooling treats padding one of three ways (see :mod:`attnkit.models.padding`):

(a) ``masked``        padding masked inside the softmax;
(b) ``unmasked``      padding scored like tokens, as in most HAN code online;
(c) ``renormalised``  softmax over everything, then multiplied by the mask and renormalised.

Beside it, the pooled classifier (embeddings -> one-head attention pooling), whose padding is a zero vector. Each
run is scored on the test split in random batches (the padding regime it was trained in): accuracy and attention
mass on padding; and in length-bucketed batches, where an unmasked model meets less padding.
"""

from __future__ import annotations

from pathlib import Path

import torch

from attnkit.experiments.common import ExperimentPaths, command_line, ensure_run, mean_std, read_json, write_json
from attnkit.models.padding import PADDING_MODES
from attnkit.training.run_report import in_percent

__all__ = ["BATCH_SIZE", "DATA", "MODELS", "padding_statistics", "run_masking", "train_argv"]

DATA = "fine-foods"
BATCH_SIZE = 32
_FIT = ["--random-batches", "--batch-size", str(BATCH_SIZE), "--dropout", "0.5", "--lr-decay", "0.5"]
_FIT += ["--epochs", "40", "--patience", "3", "--max-minutes", "20", "--attention-values", "states"]
# The models of the experiment and their options (fit options: the demo's HAN recipe; the pooled model's lr 2e-3).
_HAN = ["--model", "han", "--embed-dim", "100", "--hidden", "50", "--unpacked-rnn", "--weight-decay", "0.01"]
_POOLED = ["--model", "pooled", "--encoder", "none", "--pooling", "attention", "--embed-dim", "128"]
MODELS: dict[str, list[str]] = {"han": [*_HAN, "--lr", "1e-3", *_FIT], "pooled": [*_POOLED, "--lr", "2e-3", *_FIT]}
STATISTICS = ("test_accuracy", "bucketed_test_accuracy", "padding_mass", "sentence_padding_mass", "best_epoch")


def train_argv(data: str, model: str, mode: str, seed: int, out: Path) -> list[str]:
    """The ``attnkit`` arguments of one run of the experiment."""
    options = [*MODELS[model], "--attention-padding", mode]
    return ["train", "classify", "--data", data, *options, "--seed", str(seed), "--out", str(out), "--resume"]


def run_masking(
    data: str,
    seeds: int,
    paths: ExperimentPaths,
    *,
    models: tuple[str, ...] = tuple(MODELS),
    threads: int | None = None,
    device: str = "auto",
) -> dict:
    """Train (or reuse) every model x mode x seed, measure accuracy and padding mass, write and return the summary."""
    if seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {seeds}")
    unknown = sorted(set(models) - set(MODELS))
    if unknown:
        raise ValueError(f"no masking model {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    from attnkit.data.classification import load_data_set

    dataset = load_data_set(data)
    summary_path = paths.results / "masking.json"
    previous = read_json(summary_path) or {}
    summary: dict = {
        "data": data,
        "command": command_line(["experiment", "masking", "--data", data, "--seeds", str(seeds)]),
        # the other models' rows of the same data stay (``--only`` trains some models)
        "models": previous.get("models", {}) if previous.get("data") == data else {},
    }
    for model in models:
        runs: dict[str, list[dict]] = {mode: [] for mode in PADDING_MODES}
        # seed by seed over the three modes: an interrupted experiment leaves every mode with the same seeds
        for seed in range(seeds):
            for mode in PADDING_MODES:
                out = paths.runs / "masking" / data / model / mode / f"seed{seed}"
                metrics = ensure_run(train_argv(data, model, mode, seed, out), out, threads=threads, device=device)
                statistics = padding_statistics(out / "best", dataset.test_texts, dataset.test_labels, seed=seed)
                runs[mode].append(
                    {
                        "seed": seed,
                        "bucketed_test_accuracy": round(in_percent(metrics)["test"]["accuracy"], 2),
                        "best_epoch": metrics["best_epoch"],
                        "minutes": round(metrics.get("wall_time", metrics["train_seconds"]) / 60, 1),
                        "stop_reason": metrics.get("stop_reason"),
                    }
                    | statistics
                )
            summary["models"][model] = {
                "run_command": command_line(
                    train_argv(data, model, "MODE", 0, Path(f"runs/experiments/masking/{data}/{model}/MODE/seed0"))
                ),
                "seeds": seed + 1,
                "modes": {mode: {"runs": done} | _mean_std(done) for mode, done in runs.items()},
            }
            write_json(summary_path, summary)
    from attnkit.experiments.report import render_results

    render_results(paths)
    return summary


def _mean_std(runs: list[dict]) -> dict[str, float]:
    """``{key}_mean`` and ``{key}_std`` over the runs, for every statistic they all hold."""
    out = {}
    for key in STATISTICS:
        if all(key in run for run in runs):
            mean, std = mean_std([run[key] for run in runs])
            out |= {f"{key}_mean": mean, f"{key}_std": std}
    return out


def padding_statistics(
    checkpoint: Path, texts: list[str], labels: list[int], *, seed: int = 0, batch_size: int = BATCH_SIZE
) -> dict[str, float]:
    """Accuracy (%) and attention mass on padding of a HAN or pooled classifier, over random batches of ``texts``.

    ``padding_mass``: the pooling weight on padded positions of a pooled model's document, or of a HAN's real
    sentence over its words, averaged over documents (sentences); ``sentence_padding_mass`` (HAN): a document's
    weight on padded sentences, averaged; ``padding_share``: the share of the slots of those rows that are padding
    (how much padding the random batches give). All 0 where the model masks.
    """
    from attnkit.data.batching import DocumentBatch, EncodedDataset, RandomBatchSampler
    from attnkit.tasks.classify.encoding import forward_batch
    from attnkit.tasks.classify.inference import load_classifier

    classifier = load_classifier(checkpoint)
    model, encoder = classifier.model, classifier.encoder
    dataset = EncodedDataset(encoder.encode(texts), labels)
    sampler = RandomBatchSampler(dataset.lengths, batch_size, shuffle=True, seed=seed)
    collate = encoder.collate()
    hierarchical = False  # a HAN's batches: sentences of words
    sums = dict.fromkeys(("correct", "documents", "mass", "rows", "padding", "slots", "sentence_mass"), 0.0)
    with torch.no_grad():
        for indices in sampler:
            batch = collate([dataset[i] for i in indices])
            output = forward_batch(model, batch)
            hierarchical = isinstance(batch, DocumentBatch)
            if hierarchical:
                sentences = batch.sentence_mask & batch.word_mask.any(dim=2)  # [B, S]: real sentences
                padded_words = ~batch.word_mask[sentences]  # [N, W]
                sums["mass"] += float((output.words.weights[sentences] * padded_words).sum())
                sums["sentence_mass"] += float((output.sentences.weights * ~sentences).sum())
                rows = padded_words
            else:
                heads = output.pooling.weights.shape[1]
                weights = output.pooling.weights.sum(dim=1) / heads  # [B, T], averaged over heads
                sums["mass"] += float((weights * ~batch.mask).sum())
                rows = ~batch.mask
            sums["rows"] += rows.shape[0]
            sums["padding"] += float(rows.sum())
            sums["slots"] += rows.numel()
            sums["correct"] += int((output.logits.argmax(-1) == batch.labels).sum())
            sums["documents"] += len(indices)
    statistics = {
        "test_accuracy": round(100 * sums["correct"] / sums["documents"], 2),
        "padding_mass": round(sums["mass"] / sums["rows"], 4),
        "padding_share": round(sums["padding"] / sums["slots"], 4),
    }
    if hierarchical:
        statistics["sentence_padding_mass"] = round(sums["sentence_mass"] / sums["documents"], 4)
    return statistics
