"""The masking experiment: does masking padding in attention pooling matter?

The same attention-pooling classifier (embeddings -> one-head attention pooling -> linear), trained on random,
padding-heavy batches (not length-bucketed), three ways (see :mod:`attnkit.models.padding`):

(a) ``masked``        padding masked inside the softmax;
(b) ``unmasked``      padding (zero vectors) scored like tokens, as in most HAN code online;
(c) ``renormalised``  softmax over everything, then multiplied by the mask and renormalised.

For every run it measures, on the test split read in random batches of the training batch size (the padding
regime the model was trained in), the accuracy and the mean attention mass that lands on padding; and the
accuracy in length-bucketed batches (little padding), where an unmasked model meets a padding regime it was not
trained on. ``attnkit experiment masking --data 20ng --seeds 5`` writes ``docs/results/masking.json``.
"""

from __future__ import annotations

from pathlib import Path

import torch

from attnkit.experiments.common import ExperimentPaths, command_line, ensure_run, mean_std, write_json
from attnkit.models.padding import PADDING_MODES

__all__ = ["BATCH_SIZE", "MODEL_ARGS", "padding_statistics", "run_masking", "train_argv"]

BATCH_SIZE = 32
MODEL_ARGS = ["--model", "pooled", "--encoder", "none", "--pooling", "attention", "--embed-dim", "128"]
FIT_ARGS = ["--random-batches", "--batch-size", str(BATCH_SIZE), "--dropout", "0.3", "--lr", "2e-3"]
FIT_ARGS += ["--epochs", "8", "--patience", "3", "--max-minutes", "2"]


def train_argv(data: str, mode: str, seed: int, out: Path) -> list[str]:
    """The ``attnkit`` arguments of one run of the experiment."""
    model = [*MODEL_ARGS, "--attention-padding", mode]
    return ["train", "classify", "--data", data, *model, *FIT_ARGS, "--seed", str(seed), "--out", str(out), "--resume"]


def run_masking(
    data: str, seeds: int, paths: ExperimentPaths, *, threads: int | None = None, device: str = "auto"
) -> dict:
    """Train (or reuse) every mode x seed, measure accuracy and padding mass, write and return the summary."""
    if seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {seeds}")
    from attnkit.data.classification import load_builtin

    dataset = load_builtin(data)
    summary: dict = {
        "data": data,
        "seeds": seeds,
        "command": command_line(["experiment", "masking", "--data", data, "--seeds", str(seeds)]),
        "run_command": command_line(train_argv(data, "MODE", 0, Path(f"runs/experiments/masking/{data}/MODE/seed0"))),
        "modes": {},
    }
    for mode in PADDING_MODES:
        runs = []
        for seed in range(seeds):
            out = paths.runs / "masking" / data / mode / f"seed{seed}"
            argv = train_argv(data, mode, seed, out)
            metrics = ensure_run(argv, out, threads=threads, device=device)
            statistics = padding_statistics(out / "best", dataset.test_texts, dataset.test_labels, seed=seed)
            runs.append(
                {"seed": seed, "bucketed_test_accuracy": round(100 * metrics["test"]["accuracy"], 2)} | statistics
            )
        summary["modes"][mode] = {
            "runs": runs,
            **{
                f"{key}_{stat}": value
                for key in ("test_accuracy", "bucketed_test_accuracy", "padding_mass")
                for stat, value in zip(("mean", "std"), mean_std([run[key] for run in runs]), strict=True)
            },
        }
        write_json(paths.results / "masking.json", summary)
    from attnkit.experiments.report import render_results

    render_results(paths)
    return summary


def padding_statistics(
    checkpoint: Path, texts: list[str], labels: list[int], *, seed: int = 0, batch_size: int = BATCH_SIZE
) -> dict[str, float]:
    """Accuracy (%) and mean attention mass on padding of a pooled classifier, over random batches of ``texts``.

    The mass of a document is the sum of its pooling weights on padded positions (0 for a masked model); the
    figure is the mean over documents.
    """
    from attnkit.data.batching import EncodedDataset, RandomBatchSampler
    from attnkit.tasks.classify.inference import load_classifier

    classifier = load_classifier(checkpoint)
    model, encoder = classifier.model, classifier.encoder
    dataset = EncodedDataset(encoder.encode(texts), labels)
    sampler = RandomBatchSampler(dataset.lengths, batch_size, shuffle=True, seed=seed)
    collate = encoder.collate()
    correct, mass, count = 0, 0.0, 0
    with torch.no_grad():
        for indices in sampler:
            batch = collate([dataset[i] for i in indices])
            output = model(batch.token_ids, batch.mask)
            weights = output.pooling.weights.sum(dim=1)  # [B, T], summed over heads
            heads = output.pooling.weights.shape[1]
            mass += float((weights * ~batch.mask).sum()) / heads
            correct += int((output.logits.argmax(-1) == batch.labels).sum())
            count += len(indices)
    return {"test_accuracy": round(100 * correct / count, 2), "padding_mass": round(mass / count, 4)}
