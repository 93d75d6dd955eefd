"""Benchmark: training on files larger than comfort: peak memory, time to the first step, throughput (#25).

Generated files (``bench/_lib/scale_files.py``; fixed seeds) are trained on by ``attnkit train`` in fresh
processes, as a user runs it. Cases (``--case``, repeatable; default all):

* ``csv`` — the issue's command on a two-label CSV of 1M rows (~200 MB; ``--quick``: 100k):
  ``train classify --model pooled --encoder none --epochs 1 --max-minutes 1``, streamed with an empty cache
  (cold) and again (warm). Targets: the cold run done within 5 minutes at peak RSS ≤ 1.2 GB; the warm run's
  first optimiser step within 10 s.
* ``jsonl`` — a 2 GB two-label JSONL (11.2M rows; ``--quick``: 50 MB), streamed cold then warm, each stopped by
  ``--max-steps`` (default 300). Targets: peak RSS ≤ 1.5 GB; first step within 2 minutes cold, 10 s warm.
* ``pairs`` — a 1 GB TSV of sentence pairs (~5M; ``--quick``: 50 MB), ``train seq2seq`` (a small Transformer,
  one shared subword vocabulary of 8,000), the same two runs and targets as ``jsonl``.
* ``throughput`` — a slice that fits (50k rows; ``--quick``: 20k), for each task one epoch in memory and two
  runs of one epoch streamed from an empty cache: the first reads the text and keeps its ids
  (:mod:`attnkit.data.id_cache`), the second reads the ids, as every later epoch and run does. The stream's steady
  rate (optimiser steps after the first, per CPU second on one core) must be ≥ 0.9× the in-memory path's.
* ``padding`` — real tokens per padded token of one epoch of the slice's rows (no training): length-bucketed
  windows of the stream against :class:`~attnkit.data.batching.BucketBatchSampler` and random batches.

A small wrapper process runs the CLI and notes, for the benchmark (not for attnkit), the wall and CPU time of the
first and last ``AdamW.step`` and the number of steps; peak RSS is its ``ru_maxrss``. Every figure is written
with the load average before and after it: on a shared machine, compare CPU seconds. Files go under
``--data-dir`` (kept and reused, so that each case can run on its own) or a temporary directory deleted at the
end. Run: ``nice -n 5 python -m bench.data_scale [--quick] [--case csv ...] [--data-dir DIR] [--threads N]``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench._lib import common
from bench._lib.scale_files import write_csv, write_jsonl, write_pairs

NAME = "data_scale"
CASES = ("csv", "jsonl", "pairs", "throughput", "padding")
TARGETS = {"csv_rss_mb": 1200, "csv_wall_s": 300, "big_rss_mb": 1536, "cold_first_step_s": 120,
           "warm_first_step_s": 10, "throughput": 0.9}  # fmt: skip
CLASSIFY = ["classify", "--model", "pooled", "--encoder", "none", "--embed-dim", "64"]
SEQ2SEQ = ["seq2seq", "--model", "transformer", "--dim", "64", "--heads", "2", "--encoder-layers", "1",
           "--decoder-layers", "1", "--ff-dim", "128", "--source-level", "subword", "--target-level", "subword",
           "--no-test"]  # fmt: skip

# Runs the CLI in this process, notes the first and last optimiser steps and the peak RSS of the whole run.
_WRAPPER = """
import json, resource, sys, time
started = float(sys.argv[1]); probe = sys.argv[2]
import torch.optim
original = torch.optim.AdamW.step
steps = []
def step(self, *args, **kwargs):
    now = (time.time() - started, time.process_time())
    if not steps:
        steps.append(now)
    steps[1:] = [now]
    count[0] += 1
    return original(self, *args, **kwargs)
count = [0]
torch.optim.AdamW.step = step
from attnkit.cli import main
try:
    code = main(sys.argv[3:])
except SystemExit as exit:
    code = exit.code
usage = resource.getrusage(resource.RUSAGE_SELF)
first, last = (steps[0], steps[-1]) if steps else ((None, None), (None, None))
json.dump({"code": code, "steps": count[0], "first_step_s": first[0], "first_step_cpu_s": first[1],
           "last_step_s": last[0], "last_step_cpu_s": last[1], "cpu_s": usage.ru_utime + usage.ru_stime,
           "peak_rss_mb": usage.ru_maxrss / 1024}, open(probe, "w"))
"""


def train(command: list[str], data: Path, out: Path, cache: Path, *extra: str, threads: int) -> dict[str, object]:
    """One ``attnkit train`` in a fresh process: the probe's figures, wall seconds to exit, the load average
    before and after, ``load_seconds`` from metrics.json and the steady rates (steps/s after the first step)."""
    probe = out.parent / f"{out.name}.probe.json"
    argv = ["train", *command, "--data", str(data), "--epochs", "1", "--threads", str(threads), "--no-progress"]
    argv += ["--overwrite", "--out", str(out), *extra]
    load_before = os.getloadavg()
    started = time.time()
    env = {"ATTNKIT_CACHE": str(cache), "PATH": "/usr/bin:/bin", **_python_env()}
    subprocess.run([sys.executable, "-c", _WRAPPER, str(started), str(probe), *argv], check=True, env=env,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    result = json.loads(probe.read_text())
    result.update(wall_s=time.time() - started, load_before=load_before, load_after=os.getloadavg())
    details = json.loads((out / "metrics.json").read_text()).get("details", {})
    result["load_s"] = details.get("load_seconds")
    if result["steps"] > 1:
        steady = result["steps"] - 1
        result["steps_per_s"] = steady / (result["last_step_s"] - result["first_step_s"])
        result["steps_per_cpu_s"] = steady / max(result["last_step_cpu_s"] - result["first_step_cpu_s"], 1e-9)
    return result


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


def _python_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "HOME", "LANG", "OMP_NUM_THREADS")}


def files(directory: Path, quick: bool) -> dict[str, tuple[Path, object]]:
    """Each file's path and how to write it: ``(path, writer)``."""
    big_rows, slice_rows, big = (100_000, 20_000, 50 * 10**6) if quick else (1_000_000, 50_000, 10**9)
    suffix = "-quick" if quick else ""
    return {
        "csv": (directory / f"big{suffix}.csv", lambda p: write_csv(p, big_rows)),
        "jsonl": (directory / f"big{suffix}.jsonl", lambda p: write_jsonl(p, 2 * big)),
        "pairs": (directory / f"pairs{suffix}.tsv", lambda p: write_pairs(p, big)),
        "slice": (directory / f"slice{suffix}.csv", lambda p: write_csv(p, slice_rows, seed=1)),
        "pair_slice": (directory / f"pair-slice{suffix}.tsv", lambda p: write_pairs(p, slice_rows, seed=1)),
    }


def ensure(entry: tuple[Path, object]) -> Path:
    """The file, written first if it is missing."""
    path, writer = entry
    if not path.exists():
        partial = path.with_name(path.name + ".partial")
        writer(partial)  # type: ignore[operator]
        partial.replace(path)
    return path


def run_cases(
    cases: Sequence[str], *, quick: bool, directory: Path, threads: int, max_steps: int, limit: int | None = None
) -> dict:
    """Run ``cases``; their figures by case name. ``limit`` reads only the first rows of the jsonl and pairs files
    (``--limit``: a cold scan of the whole file does not fit a measurement slot on a shared machine)."""
    made = files(directory, quick)
    cache = directory / "cache"
    work = directory / "runs"
    results: dict[str, object] = {}
    for case in cases:
        if case in ("csv", "jsonl", "pairs"):
            data = ensure(made[case])
            shutil.rmtree(cache, ignore_errors=True)  # cold: an empty cache
            command = SEQ2SEQ if case == "pairs" else CLASSIFY
            extra = ["--max-minutes", "1"] if case == "csv" else ["--max-steps", str(max_steps)]
            if limit and case != "csv":
                extra += ["--limit", str(limit)]
            runs = {when: train(command, data, work / f"{case}-{when}", cache, *extra, "--streaming", "always",
                                threads=threads) for when in ("cold", "warm")}  # fmt: skip
            results[case] = {"file_mb": round(data.stat().st_size / 1e6, 1), "argv": extra, **runs}
        elif case == "throughput":
            figures = {}
            ways = (("in_memory", "never"), ("streamed_text", "always"), ("streamed", "always"))
            for task, entry, command in (("classify", "slice", CLASSIFY), ("seq2seq", "pair_slice", SEQ2SEQ)):
                data = ensure(made[entry])
                shutil.rmtree(cache, ignore_errors=True)  # the first streamed run reads the text and keeps the ids
                runs = {way: train(command, data, work / f"{task}-{way}", cache, "--streaming", streaming,
                                   threads=threads) for way, streaming in ways}  # fmt: skip
                ratios = {
                    name: {
                        unit: runs[way][unit] / runs["in_memory"][unit] for unit in ("steps_per_s", "steps_per_cpu_s")
                    }
                    for name, way in (("ratio", "streamed"), ("ratio_text", "streamed_text"))
                }
                figures[task] = {**runs, **ratios}  # fmt: skip
            results[case] = figures
        elif case == "padding":
            with ensure(made["slice"]).open(encoding="utf-8") as handle:
                lengths = [len(row[0].split()) for row in list(csv.reader(handle))[1:]]
            results[case] = padding_efficiency(lengths)
    return results


def table(results: dict) -> list[common.Row]:
    """The table's rows for the cases that ran."""
    mb, rows = 2**20, []
    if "csv" in results:
        cold, warm = results["csv"]["cold"], results["csv"]["warm"]
        rows += [common.Row(NAME, "CSV 1M rows, cold: peak RSS", cold["peak_rss_mb"] * mb, TARGETS["csv_rss_mb"] * mb,
                            "target", "bytes", 1.0),
                 common.Row(NAME, "CSV 1M rows, cold: wall", cold["wall_s"], TARGETS["csv_wall_s"], "target", "s", 1.0),
                 common.Row(NAME, "CSV 1M rows, warm: first step", warm["first_step_s"], TARGETS["warm_first_step_s"],
                            "target", "s", 1.0)]  # fmt: skip
    for case, label in (("jsonl", "JSONL 2 GB"), ("pairs", "pairs TSV 1 GB")):
        if case in results:
            cold, warm = results[case]["cold"], results[case]["warm"]
            argv = results[case].get("argv", [])
            label += f" (first {int(argv[argv.index('--limit') + 1]):,} rows)" if "--limit" in argv else ""
            peak = max(cold["peak_rss_mb"], warm["peak_rss_mb"])
            rows += [common.Row(NAME, f"{label}: peak RSS", peak * mb, TARGETS["big_rss_mb"] * mb, "target", "bytes", 1.0),
                     common.Row(NAME, f"{label}, cold: first step", cold["first_step_s"], TARGETS["cold_first_step_s"],
                                "target", "s", 1.0),
                     common.Row(NAME, f"{label}, warm: first step", warm["first_step_s"], TARGETS["warm_first_step_s"],
                                "target", "s", 1.0)]  # fmt: skip
    for task, figures in results.get("throughput", {}).items():
        for way, label in (("streamed", "ids"), ("streamed_text", "text, first epoch")):
            rows.append(common.Row(NAME, f"{task} slice, streamed ({label}): CPU s per step",
                                   1 / figures[way]["steps_per_cpu_s"], 1 / figures["in_memory"]["steps_per_cpu_s"],
                                   "in memory", "s", 1 / TARGETS["throughput"]))  # fmt: skip
    if "padding" in results:
        padding = results["padding"]
        rows.append(common.Row(NAME, "slice: padded/real tokens", 1 / padding["streamed"], 1 / padding["in_memory"],
                               "in-memory buckets", "ratio", 1.05))  # fmt: skip
    return rows


def run(quick: bool, repeats: int = 1) -> tuple[list[common.Row], dict[str, object]]:
    """Every case on files in a temporary directory (``bench.run_all``'s entry; ``repeats`` is not used)."""
    del repeats
    directory = Path(tempfile.mkdtemp(prefix="attnkit-data-scale-"))
    try:
        results = run_cases(CASES, quick=quick, directory=directory, threads=common.THREADS, max_steps=300)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return table(results), {"quick": quick, "cases": results}


def main(argv: Sequence[str] | None = None) -> list[common.Row]:
    """Command line: run the cases, print the table and the runs, merge them into ``<out>/data_scale.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller files (see the module docstring)")
    parser.add_argument("--case", action="append", choices=CASES, help="run this case (repeatable; default all)")
    parser.add_argument("--data-dir", type=Path, default=None, help="keep and reuse the files here")
    parser.add_argument("--generate-only", action="store_true", help="write the cases' files and stop")
    parser.add_argument("--threads", type=int, default=common.THREADS, help=f"torch threads (default {common.THREADS})")
    parser.add_argument("--max-steps", type=int, default=300, help="steps of the jsonl and pairs runs (default 300)")
    parser.add_argument("--limit", type=int, default=None, help="jsonl and pairs: read only the first N rows")
    parser.add_argument("--out", type=Path, default=None, help="directory for the JSON (default bench/results)")
    args = parser.parse_args(argv)
    cases = args.case or list(CASES)
    directory = args.data_dir or Path(tempfile.mkdtemp(prefix="attnkit-data-scale-"))
    directory.mkdir(parents=True, exist_ok=True)
    try:
        if args.generate_only:
            needed = {"throughput": ["slice", "pair_slice"], "padding": ["slice"]}
            for name in [n for case in cases for n in needed.get(case, [case])]:
                print(f"{ensure(files(directory, args.quick)[name])}: ready")
            return []
        results = run_cases(cases, quick=args.quick, directory=directory, threads=args.threads,
                            max_steps=args.max_steps, limit=args.limit)  # fmt: skip
    finally:
        if args.data_dir is None:
            shutil.rmtree(directory, ignore_errors=True)
    out = args.out or (common.QUICK_RESULTS_DIR if args.quick else common.RESULTS_DIR)
    previous = out / f"{NAME}.json"
    merged = json.loads(previous.read_text()).get("cases", {}) if previous.exists() else {}
    merged.update(results)
    rows = table(results)
    print(common.format_table(rows))
    print(json.dumps(results, indent=1, default=lambda v: round(v, 3) if isinstance(v, float) else str(v)))
    print(f"wrote {common.write_json(NAME, {'quick': args.quick, 'threads': args.threads, 'cases': merged}, out)}")
    return rows


if __name__ == "__main__":
    main()
