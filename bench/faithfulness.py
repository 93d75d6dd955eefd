"""Benchmark: the cost of the faithfulness tests (issue #22's targets, on the two-core CPU).

* ``explain --faithfulness`` on 50 fine-foods test reviews (every method: attention, gradient × input, integrated
  gradients in the panel's 8 Gauss-Legendre nodes, ``explain --steps``'s default, its largest completeness delta
  in the JSON; leave-one-out, random; all erasures at every k and the flip search) against ``explain``
  alone on the same reviews, each from the loaded model to the written HTML page: target ≤ 3×.
* Integrated gradients alone, 32 steps, over the same 50 reviews: target ≤ 20 s (the row's peer is the 20 s budget).

The model is ``--checkpoint RUN`` (a classifier checkpoint, e.g. ``attnkit train classify --data fine-foods``);
without it a HAN is trained first on 1,000 fine-foods reviews for one epoch (200 and 5 reviews with ``--quick``),
which is not timed. The figures are medians of ``--repeats`` rounds (default 3; 1 with ``--quick``) in wall-clock
seconds; the JSON also keeps each round's CPU seconds (all threads), the figure to read on a loaded machine, and
the load average before and after. ``--threads`` defaults to 1: on the shared machine the second core carries a
long training run, and two OpenMP threads then wait on the starved one (a HAN forward was 30x slower with 2
threads than with 1 there, 2026-11-25).
Run: ``python -m bench.faithfulness --checkpoint fine-foods-han [--threads 1] [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench._lib import common

NAME = "faithfulness"
EXPLAIN_RATIO_TARGET = 3.0
IG_BUDGET_SECONDS = 20.0
IG_STEPS = 32


def _train(directory: Path, reviews: int) -> Path:
    """A HAN trained one epoch on the first ``reviews`` fine-foods training reviews (not timed)."""
    import csv

    from attnkit.cli import main
    from attnkit.data.classification import load_data_set

    data = load_data_set("fine-foods")
    train = directory / "train.csv"
    with train.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        for text, label in list(zip(data.train_texts, data.train_labels, strict=True))[:reviews]:
            writer.writerow([text, data.label_names[label]])
    out = directory / "run"
    argv = ["train", "classify", "--data", str(train), "--model", "han", "--epochs", "1", "--out", str(out)]
    if main([*argv, "--no-progress"]) != 0:
        raise RuntimeError("training the benchmark's HAN failed")
    return out


def _median_seconds(work: Callable[[], object], repeats: int) -> tuple[float, list[float], list[float]]:
    """The median wall-clock seconds of ``repeats`` runs, every wall-clock sample, and every CPU-seconds sample
    (this process, all threads: the figure to read on a shared, loaded machine)."""
    samples, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        work()
        samples.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(samples), samples, cpu


def run(
    quick: bool, repeats: int | None, checkpoint: str | None = None, threads: int = 1
) -> tuple[list[common.Row], dict[str, object]]:
    """Time explain with and without the tests, and IG alone; returns the rows and the JSON payload."""
    import os

    import attnkit
    from attnkit.data.classification import load_data_set
    from attnkit.explain.faithfulness.gradients import integrated_gradients
    from attnkit.explain.faithfulness.methods import PANEL_STEPS
    from attnkit.tasks.classify.explain import classifier_report
    from attnkit.tasks.classify.faithfulness import classifier_subjects

    common.setup(threads)
    load_before = os.getloadavg()
    repeats = repeats or (1 if quick else 3)
    count = 5 if quick else 50
    texts = load_data_set("fine-foods").test_texts[:count]
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        run_dir = Path(checkpoint) if checkpoint else _train(scratch, 200 if quick else 1000)
        classifier = attnkit.load(run_dir, device="cpu")
        page = scratch / "report.html"

        def cold() -> None:
            # every timed call starts as a fresh `attnkit explain` process does: no sentences remembered from the
            # call before (the splitter's cache would otherwise make the repeats of `explain` alone skip pysbd)
            classifier.encoder.splitter._split.clear()

        def explain() -> None:
            cold()
            predictions = classifier.predict(texts)
            classifier_report(predictions, classifier.label_names, page)

        panel_deltas: list[float] = []

        def explain_with_tests() -> None:
            cold()
            predictions = classifier.predict(texts)
            tests = classifier.faithfulness(texts, steps=PANEL_STEPS)  # as explain --faithfulness
            panel_deltas[:] = [t.methods["integrated_gradients"].convergence_delta for t in tests]
            classifier_report(predictions, classifier.label_names, page, faithfulness=tests)

        def ig_only() -> list[float]:
            cold()
            return [
                integrated_gradients(s.gradient_inputs(), s.label, steps=IG_STEPS).convergence_delta
                for s in classifier_subjects(classifier, texts)
            ]

        explain()  # warm-up: imports, matplotlib's first figure
        plain, plain_samples, plain_cpu = _median_seconds(explain, repeats)
        tested, tested_samples, tested_cpu = _median_seconds(explain_with_tests, repeats)
        ig, ig_samples, ig_cpu = _median_seconds(ig_only, repeats)
        deltas = ig_only()
        tokens = sum(len(s.tokens) for s in classifier_subjects(classifier, texts))
    size = f"{count} reviews, {tokens} tokens"
    rows = [
        common.Row(f"{NAME}: explain --faithfulness", size, tested, plain, "explain alone", "s", EXPLAIN_RATIO_TARGET),
        common.Row(f"{NAME}: IG {IG_STEPS} steps", size, ig, IG_BUDGET_SECONDS, "20 s budget", "s", 1.0),
    ]
    payload = {
        "quick": quick,
        "threads": threads,
        "load_average": {"before": list(load_before), "after": list(os.getloadavg())},
        "checkpoint": str(checkpoint) if checkpoint else "a HAN trained 1 epoch on fine-foods (see the docstring)",
        "reviews": count,
        "tokens": tokens,
        "samples": {
            "explain": plain_samples,
            "explain_faithfulness": tested_samples,
            "integrated_gradients": ig_samples,
        },
        "cpu_seconds": {"explain": plain_cpu, "explain_faithfulness": tested_cpu, "integrated_gradients": ig_cpu},
        "ig_max_convergence_delta": max(deltas),
        "panel_ig_steps": PANEL_STEPS,
        "panel_ig_max_convergence_delta": max(panel_deltas),
        "rows": common.rows_payload(rows),
    }
    return rows, payload


def main(argv: Sequence[str] | None = None) -> list[common.Row]:
    """``python -m bench.faithfulness``: print the table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default=None, help="a classifier run to time (default: train a small HAN)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1; see the docstring)")
    args = common.parse_args(argv, parser.description, parser)
    rows, payload = run(args.quick, args.repeats, args.checkpoint, args.threads)
    print(common.format_table(rows))
    print(f"wrote {common.write_json(NAME, payload, args.out)}")
    return rows


if __name__ == "__main__":
    main()
