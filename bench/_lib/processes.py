"""The fresh-process harness for comparing runtimes, as the benchmarks use it: :mod:`attnkit.experiments.processes`
(shared with ``attnkit experiment deploy``) with this repository put on the processes' path, so sides can live in
``bench/`` (e.g. :mod:`bench._lib.decoding_sides`)."""

from __future__ import annotations

from pathlib import Path

from attnkit.experiments.processes import ProcessTimings, Side, digest
from attnkit.experiments.processes import compare_processes as _compare

__all__ = ["REPO", "ProcessTimings", "Side", "compare_processes", "digest"]

REPO = Path(__file__).resolve().parents[2]


def compare_processes(sides: dict[str, Side], **options) -> ProcessTimings:
    """:func:`attnkit.experiments.processes.compare_processes` with the repository on the processes' path."""
    return _compare(sides, path=str(REPO), **options)
