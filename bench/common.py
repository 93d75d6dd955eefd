"""Shared benchmark machinery: fair timing, a results table, JSON with machine info.

Fairness rules every benchmark follows:

* ``torch.set_num_threads(2)`` (the CI machine has two cores);
* warm-up runs first, then the attnkit and peer runs **alternate** inside one process, with the order flipped on
  every repeat, so background load and cache/allocator state hit both sides equally;
* the figure reported is the **median** of the repeats (every sample is kept in the JSON);
* outputs are checked to match before anything is timed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

THREADS = 2
RESULTS_DIR = Path(__file__).resolve().parent / "results"
QUICK_RESULTS_DIR = RESULTS_DIR / "quick"  # git-ignored: smoke runs never overwrite the published figures
QUIET_BUSY = 0.15  # a round starts when the CPUs were at most 15 % busy over a quarter of a second...
QUIET_TIMEOUT = 30.0  # ...or after this many seconds of waiting (the round is then counted as under load)


@dataclass
class Row:
    """One line of a results table: attnkit against its peer on one size.

    ``ratio`` is ``attnkit / peer`` (lower is better); ``target`` is the largest acceptable ratio, or ``None`` for
    rows reported for information only (then ``met`` is ``None`` too).
    """

    benchmark: str
    size: str
    attnkit: float
    peer: float
    peer_name: str
    unit: str
    target: float | None = None
    ratio: float = field(init=False)
    met: bool | None = field(init=False)

    def __post_init__(self) -> None:
        self.ratio = self.attnkit / self.peer
        self.met = None if self.target is None else self.ratio <= self.target


def setup(threads: int = THREADS, seed: int = 0) -> None:
    """Pin the thread count and the seed (call once at the start of a benchmark)."""
    torch.set_num_threads(threads)
    torch.manual_seed(seed)


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo`` (falls back to :func:`platform.processor`)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info() -> dict[str, object]:
    """Where the figures were measured: torch version, CPU, threads, Python, OS."""
    return {
        "torch": torch.__version__,
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def time_once(fn: Callable[[], object]) -> float:
    """Wall-clock seconds of one call of ``fn``."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def cpu_busy_fraction(window: float = 0.25) -> float:
    """Fraction of all CPUs' time spent busy during the next ``window`` seconds (from ``/proc/stat``; 0 elsewhere)."""

    def totals() -> tuple[int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return sum(fields), idle

    try:
        total0, idle0 = totals()
        time.sleep(window)
        total1, idle1 = totals()
    except (OSError, ValueError, IndexError):
        return 0.0
    elapsed = total1 - total0
    return 0.0 if elapsed <= 0 else 1.0 - (idle1 - idle0) / elapsed


def wait_for_quiet(threshold: float = QUIET_BUSY, timeout: float = QUIET_TIMEOUT) -> bool:
    """Wait (up to ``timeout`` s) until other processes leave the CPUs mostly idle; return whether they did.

    Other people's jobs on a 2-core machine stall every parallel region of ours; starting each timing round on a
    quiet machine keeps that noise out of most samples (alternation and medians take care of the rest).
    """
    deadline = time.monotonic() + timeout
    while True:
        if cpu_busy_fraction() <= threshold:
            return True
        if time.monotonic() >= deadline:
            return False


def compare(
    fns: dict[str, Callable[[], object]],
    *,
    repeats: int,
    warmup: int = 1,
    inner: int = 1,
    quiet: bool = True,
    stats: dict[str, int] | None = None,
) -> dict[str, list[float]]:
    """Time every function in ``fns``, alternating them, and return seconds per call for each repeat.

    Args:
        fns: name -> zero-argument callable (all run in this process).
        repeats: number of timed samples per function; each round runs every function once, the order flipping
            from round to round.
        warmup: untimed calls of each function first.
        inner: calls per sample (the sample is their mean), for functions too short to time one by one.
        quiet: start each round only when the machine is idle (see :func:`wait_for_quiet`).
        stats: if given, receives ``rounds`` and ``rounds_started_under_load``.

    Returns:
        name -> list of ``repeats`` samples (seconds per call).
    """
    names = list(fns)
    for _ in range(warmup):
        for name in names:
            fns[name]()
    samples: dict[str, list[float]] = {name: [] for name in names}
    under_load = 0
    for r in range(repeats):
        if quiet and not wait_for_quiet():
            under_load += 1
        for name in names if r % 2 == 0 else reversed(names):
            fn = fns[name]
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            samples[name].append((time.perf_counter() - start) / inner)
    if stats is not None:
        stats["rounds"] = stats.get("rounds", 0) + repeats
        stats["rounds_started_under_load"] = stats.get("rounds_started_under_load", 0) + under_load
    return samples


def median(samples: Sequence[float]) -> float:
    """Median of the samples."""
    return statistics.median(samples)


def max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """``max |a - b|`` as a Python float."""
    return (a.detach().double() - b.detach().double()).abs().max().item()


def check_close(name: str, a: torch.Tensor, b: torch.Tensor, atol: float = 1e-5, rtol: float = 0.0) -> float:
    """Raise ``AssertionError`` unless ``max |a - b| ≤ atol + rtol · max |b|``; return ``max |a - b|``.

    ``rtol`` is relative to the largest entry of ``b``: right for gradients that sum many terms.
    """
    if a.shape != b.shape:
        raise AssertionError(f"{name}: shapes differ, {tuple(a.shape)} vs {tuple(b.shape)}")
    diff = max_abs_diff(a, b)
    bound = atol + rtol * b.detach().abs().max().item()
    if not diff <= bound:
        raise AssertionError(f"{name}: max |difference| {diff:.3g} > {bound:.3g}; not timing different computations")
    return diff


def format_value(value: float, unit: str) -> str:
    """Human-readable value: ms for seconds, MiB for bytes."""
    if unit == "s":
        return f"{value * 1e3:.2f} ms"
    if unit == "bytes":
        return f"{value / 2**20:.1f} MiB"
    return f"{value:.4g} {unit}"


def format_table(rows: Sequence[Row]) -> str:
    """The results as a fixed-width text table."""
    header = ("benchmark", "size", "attnkit", "peer", "ratio", "target", "met?")
    lines = [header]
    for row in rows:
        target = "—" if row.target is None else f"≤ {row.target:.3g}×"
        met = "—" if row.met is None else ("yes" if row.met else "NO")
        lines.append(
            (
                row.benchmark,
                row.size,
                format_value(row.attnkit, row.unit),
                f"{format_value(row.peer, row.unit)} ({row.peer_name})",
                f"{row.ratio:.3f}×",
                target,
                met,
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = [" | ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) for line in lines]
    out.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(out)


def write_json(name: str, payload: dict[str, object], out_dir: Path) -> Path:
    """Write ``payload`` plus machine info to ``out_dir/<name>.json`` (atomically) and return the path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    document = {"name": name, "machine": machine_info(), **payload}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(document, indent=2, allow_nan=False) + "\n")
    tmp.replace(path)
    return path


def rows_payload(rows: Sequence[Row]) -> list[dict[str, object]]:
    """Rows as JSON-ready dicts."""
    return [asdict(row) for row in rows]


def all_finite_positive(values: Sequence[float]) -> bool:
    """True if every value is a finite number > 0."""
    return all(isinstance(v, int | float) and math.isfinite(v) and v > 0 for v in values)


def parse_args(argv: Sequence[str] | None, description: str) -> argparse.Namespace:
    """The command line every benchmark module shares: ``--quick``, ``--repeats``, ``--out``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, a smoke test (figures mean nothing)")
    parser.add_argument("--repeats", type=int, default=None, help="timed samples per side (default per benchmark)")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"directory for the JSON (default {RESULTS_DIR}, or {QUICK_RESULTS_DIR} with --quick)",
    )
    args = parser.parse_args(argv)
    if args.out is None:
        args.out = QUICK_RESULTS_DIR if args.quick else RESULTS_DIR
    return args
