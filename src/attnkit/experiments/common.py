"""What every experiment shares: where runs and results go, running an ``attnkit`` command in-process, reusing
finished runs, and summary statistics."""

from __future__ import annotations

import json
import math
import shlex
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ExperimentPaths", "command_line", "ensure_run", "mean_std", "read_json", "run_command", "write_json"]


@dataclass(frozen=True)
class ExperimentPaths:
    """``runs``: where the training runs go (one directory each); ``docs``: the ``docs/`` directory whose
    ``results/NAME.json`` files and ``results.md`` the experiments write."""

    runs: Path = Path("runs/experiments")
    docs: Path = Path("docs")

    @property
    def results(self) -> Path:
        """``docs/results``: one JSON summary per experiment (and its figures)."""
        return self.docs / "results"


def command_line(argv: Sequence[str]) -> str:
    """The shell command that runs ``attnkit argv...`` (quoted for copying)."""
    return "attnkit " + shlex.join(argv)


def run_command(argv: Sequence[str]) -> None:
    """Run ``attnkit argv...`` in this process (the same code path as the shell command); raise if it fails."""
    from attnkit.cli import main

    print(f"\n$ {command_line(argv)}", file=sys.stderr, flush=True)
    status = main(list(argv))
    if status != 0:
        raise RuntimeError(f"{command_line(argv)} exited with status {status}")


def ensure_run(argv: Sequence[str], out: Path, *, threads: int | None = None) -> dict:
    """The ``metrics.json`` of the training run ``attnkit argv...`` writing to ``out``: reused when ``out`` holds a
    finished run of exactly this command (``out/command.json``), trained (or resumed, with ``--resume`` in
    ``argv``) otherwise."""
    metrics = read_json(out / "metrics.json")
    if read_json(out / "command.json") != list(argv) or not (metrics and metrics.get("test")):
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / "command.json", list(argv))
        run_command([*argv, "--no-progress", *([] if threads is None else ["--threads", str(threads)])])
        metrics = read_json(out / "metrics.json")
    return metrics


def read_json(path: Path) -> Any | None:
    """The JSON in ``path``, or None when the file does not exist."""
    return json.loads(path.read_text()) if path.exists() else None


def write_json(path: Path, value: Any) -> None:
    """Write ``value`` as indented JSON (atomically: a temporary file, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(value, indent=2) + "\n")
    temporary.replace(path)


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single value)."""
    if not values:
        return math.nan, math.nan
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0
