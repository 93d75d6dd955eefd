"""Shared benchmark machinery: set-up, parity checks, a results table, JSON with machine info.

Rules every benchmark follows:

* ``torch.set_num_threads(2)`` (the CI machine has two cores);
* outputs are checked to match before anything is timed (:func:`check_close`);
* attnkit and its peer are timed in alternated rounds in one process, the figure being a median
  (:mod:`bench.timing`); every sample is kept in the JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

THREADS = 2
RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"
QUICK_RESULTS_DIR = RESULTS_DIR / "quick"  # git-ignored: smoke runs never overwrite the published figures


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


def parse_args(
    argv: Sequence[str] | None, description: str, parser: argparse.ArgumentParser | None = None
) -> argparse.Namespace:
    """The command line every benchmark module shares: ``--quick``, ``--repeats``, ``--out``.

    Pass ``parser`` to add options of your own first.
    """
    parser = parser or argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, a smoke test (figures mean nothing)")
    parser.add_argument("--repeats", type=int, default=None, help="clean rounds wanted (default per benchmark)")
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
