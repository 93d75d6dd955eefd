"""Benchmark: training on a file larger than comfort: peak memory, time to the first step, throughput (#25).

A generated classification CSV (two labels, texts of 10-60 words drawn from a 5,000-word Zipf vocabulary, about
200 bytes a row; fixed seed) is trained on by ``attnkit train classify --model pooled --encoder none`` in fresh
processes, as a user runs it:

* **stream cold** — the full file (1M rows, ~200 MB; ``--quick``: 100k rows), ``--epochs 1 --max-minutes 1``,
  read as a stream with an empty cache: peak RSS, seconds to the first optimiser step, wall time to exit. The
  issue's target: done within 5 minutes at peak RSS ≤ 1.2 GB.
* **stream warm** — the same run again: the vocabulary and the counts come from the cache (target: first step
  within 10 s).
* **in memory vs stream** — a slice that fits (50k rows; ``--quick``: 20k), one epoch each way, steady
  throughput in training rows per second of the epoch (load excluded): the stream's must be ≥ 0.9× the
  in-memory path's.

* **bucketing on a stream** — the share of real tokens in padded batches of the slice's rows (no training):
  length-bucketed windows of the stream against :class:`~attnkit.data.batching.BucketBatchSampler` over the
  whole slice in memory and against random batches. The bucketing speed-up ``bench.encoder_bucketing`` measures
  comes from this padding saved; the stream must keep nearly all of it.

Peak RSS is the child's ``ru_maxrss``, read by a small wrapper process that runs the CLI; the same wrapper notes
the time of the first ``AdamW.step`` (a probe of the benchmark, not of attnkit), in wall seconds and in the
process's CPU seconds (the CPU figure is what to compare on a shared, loaded machine). Files go under ``--tmp``
(default ``/tmp``) and are deleted afterwards. Run: ``nice -n 5 python -m bench.data_scale [--quick]``.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench._lib import common

NAME = "data_scale"
RSS_TARGET_MB = 1200
WALL_TARGET_S = 300
WARM_FIRST_STEP_TARGET_S = 10
THROUGHPUT_TARGET = 0.9

# Runs the CLI in this process, notes when the first optimiser step happens and the peak RSS of the whole run.
_WRAPPER = """
import json, resource, sys, time
started = float(sys.argv[1]); probe = sys.argv[2]
import torch.optim
original = torch.optim.AdamW.step
first = []
def step(self, *args, **kwargs):
    if not first:
        first.append((time.time() - started, time.process_time()))
    return original(self, *args, **kwargs)
torch.optim.AdamW.step = step
from attnkit.cli import main
try:
    code = main(sys.argv[3:])
except SystemExit as exit:
    code = exit.code
usage = resource.getrusage(resource.RUSAGE_SELF)
json.dump({"code": code, "first_step_s": first[0][0] if first else None,
           "first_step_cpu_s": first[0][1] if first else None, "cpu_s": usage.ru_utime + usage.ru_stime,
           "peak_rss_mb": usage.ru_maxrss / 1024}, open(probe, "w"))
"""


def generate(path: Path, rows: int, seed: int = 0) -> Path:
    """A two-label CSV of ``rows`` rows (see the module docstring)."""
    generator = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(5000)]
    cumulative = list(itertools.accumulate(1 / (i + 1) for i in range(5000)))
    cues = {"pos": ["good", "great", "love"], "neg": ["bad", "awful", "hate"]}
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        for _ in range(rows):
            label = "pos" if generator.random() < 0.5 else "neg"
            words = generator.choices(vocabulary, cum_weights=cumulative, k=generator.randint(10, 60))
            words[generator.randrange(len(words))] = generator.choice(cues[label])
            writer.writerow([" ".join(words), label])
    return path


def train(data: Path, out: Path, cache: Path, *extra: str) -> dict[str, object]:
    """One ``attnkit train classify`` in a fresh process: exit code, first-step and wall seconds, peak RSS, and the
    run's metrics.json."""
    probe = out.parent / f"{out.name}.probe.json"
    argv = ["train", "classify", "--data", str(data), "--model", "pooled", "--encoder", "none", "--embed-dim", "64"]
    argv += ["--epochs", "1", "--threads", str(common.THREADS), "--no-progress", "--overwrite", "--out", str(out)]
    started = time.time()
    env = {"ATTNKIT_CACHE": str(cache), "PATH": "/usr/bin:/bin", **_python_env()}
    command = [sys.executable, "-c", _WRAPPER, str(started), str(probe), *argv, *extra]
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
    wall = time.time() - started
    result = json.loads(probe.read_text())
    metrics = json.loads((out / "metrics.json").read_text())
    epoch = metrics_history(out)[0]
    rows_per_s = epoch["steps"] * metrics["batch_size"] / epoch["seconds"]
    return {**result, "wall_s": wall, "load_s": metrics["details"].get("load_seconds"), "rows_per_s": rows_per_s}


def padding_efficiency(lengths: list[int], batch_size: int = 32) -> dict[str, float]:
    """Real tokens / padded tokens of one epoch's batches: streamed windows, in-memory buckets, random batches."""
    from attnkit.data.batching import BucketBatchSampler, RandomBatchSampler
    from attnkit.data.streaming import StreamedBatches, StreamOptions

    def share(batches: list[list[int]]) -> float:
        real = sum(sum(batch) for batch in batches)
        return real / sum(max(batch) * len(batch) for batch in batches)

    streamed = StreamedBatches(lambda: iter(lengths), len(lengths), encode=list, length=int, collate=list,
                               options=StreamOptions(batch_size=batch_size, prefetch=0))  # fmt: skip
    shares = {"streamed": share(list(streamed(1)))}
    for name, sampler in (("in_memory", BucketBatchSampler), ("random", RandomBatchSampler)):
        batches = sampler(lengths, batch_size, shuffle=True)
        batches.set_epoch(1)
        shares[name] = share([[lengths[i] for i in batch] for batch in batches])
    return shares


def metrics_history(out: Path) -> list[dict[str, float]]:
    """``metrics.csv``'s rows (one per epoch) as numbers."""
    with (out / "metrics.csv").open() as handle:
        return [{k: float(v) for k, v in row.items() if _is_number(v)} for row in csv.DictReader(handle)]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


def _python_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "HOME", "LANG", "OMP_NUM_THREADS")}


def run(quick: bool, tmp: Path) -> tuple[list[common.Row], dict[str, object]]:
    """Generate the files, run the four trainings, delete the files; the table's rows and the JSON payload."""
    big_rows, slice_rows = (100_000, 20_000) if quick else (1_000_000, 50_000)
    work = Path(tempfile.mkdtemp(prefix="attnkit-data-scale-", dir=tmp))
    try:
        big = generate(work / "big.csv", big_rows)
        small = generate(work / "slice.csv", slice_rows, seed=1)
        size_mb = big.stat().st_size / 1e6
        with small.open(encoding="utf-8") as handle:
            lengths = [len(row[0].split()) for row in list(csv.reader(handle))[1:]]
        padding = padding_efficiency(lengths)
        cache = work / "cache"
        budget = ["--max-minutes", "1"]
        cold = train(big, work / "cold", cache, *budget, "--streaming", "always")
        warm = train(big, work / "warm", cache, *budget, "--streaming", "always")
        memory = train(small, work / "memory", cache, "--streaming", "never")
        streamed = train(small, work / "streamed", cache, "--streaming", "always")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ratio = streamed["rows_per_s"] / memory["rows_per_s"]
    mb = 2**20
    rows = [
        common.Row("data_scale", f"{big_rows:,} rows, cold: peak RSS", cold["peak_rss_mb"] * mb,
                   RSS_TARGET_MB * mb, "target", "bytes", 1.0),
        common.Row("data_scale", f"{big_rows:,} rows, cold: wall", cold["wall_s"], WALL_TARGET_S, "target", "s", 1.0),
        common.Row("data_scale", f"{big_rows:,} rows, warm: first step", warm["first_step_s"],
                   WARM_FIRST_STEP_TARGET_S, "target", "s", 1.0),
        common.Row("data_scale", f"{slice_rows:,} rows: s per row", 1 / streamed["rows_per_s"],
                   1 / memory["rows_per_s"], "in memory", "s", 1 / THROUGHPUT_TARGET),
        common.Row("data_scale", f"{slice_rows:,} rows: padded/real tokens", 1 / padding["streamed"],
                   1 / padding["in_memory"], "in-memory buckets", "ratio", 1.05),
    ]  # fmt: skip
    payload = {
        "quick": quick,
        "file_mb": round(size_mb, 1),
        "rows": big_rows,
        "runs": {"stream_cold": cold, "stream_warm": warm, "in_memory": memory, "streamed": streamed},
        "throughput_ratio": ratio,
        "real_token_share": padding,
    }
    return rows, payload


def main(argv: Sequence[str] | None = None) -> list[common.Row]:
    """Command line: run, print the table and the runs, write ``<out>/data_scale.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100k rows instead of 1M")
    parser.add_argument("--tmp", type=Path, default=Path(tempfile.gettempdir()), help="where the files go")
    parser.add_argument("--out", type=Path, default=None, help="directory for the JSON (default bench/results)")
    args = parser.parse_args(argv)
    out = args.out or (common.QUICK_RESULTS_DIR if args.quick else common.RESULTS_DIR)
    rows, payload = run(args.quick, args.tmp)
    print(common.format_table(rows))
    for name, figures in payload["runs"].items():
        shown = ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in figures.items())
        print(f"{name}: {shown}")
    print(f"wrote {common.write_json(NAME, payload, out)}")
    return rows


if __name__ == "__main__":
    main()
