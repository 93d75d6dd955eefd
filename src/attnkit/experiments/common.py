"""What every experiment shares: where runs and results go, training a run (through the task's own training
function, or ``torchrun`` for several processes), reusing finished runs, and summary statistics."""

from __future__ import annotations

import json
import math
import shlex
import statistics
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnkit.checkpointing.config_io import read_json_value

__all__ = [
    "ExperimentPaths",
    "command_line",
    "ensure_run",
    "launcher",
    "mean_std",
    "read_json",
    "run_command",
    "write_json",
]


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


def launcher(processes: int = 1) -> list[str]:
    """What runs ``attnkit``: itself for one process, ``torchrun`` for ``processes`` (one per core, under DDP)."""
    if processes < 1:
        raise ValueError(f"processes must be >= 1, got {processes}")
    return ["attnkit"] if processes == 1 else ["torchrun", "--nproc-per-node", str(processes), "-m", "attnkit.cli"]


def command_line(argv: Sequence[str], processes: int = 1) -> str:
    """The shell command that runs ``attnkit argv...`` on ``processes`` processes (quoted for copying)."""
    return shlex.join([*launcher(processes), *argv])


def run_command(argv: Sequence[str], processes: int = 1) -> None:
    """Run the training command ``attnkit train TASK options...``: in this process through the task's own parser
    and training function (:func:`attnkit.tasks.run_training`), or under ``torchrun`` (``python -m
    torch.distributed.run``) for ``processes > 1``; raise if it fails."""
    print(f"\n$ {command_line(argv, processes)}", file=sys.stderr, flush=True)
    if processes == 1:
        from attnkit.tasks import run_training

        if len(argv) < 2 or argv[0] != "train":
            raise ValueError(f"an experiment runs training commands, got {command_line(argv)}")
        status = run_training(argv[1], argv[2:])
    else:
        torchrun = [sys.executable, "-m", "torch.distributed.run", *launcher(processes)[1:]]
        status = subprocess.run([*torchrun, *argv], check=False).returncode
    if status != 0:
        raise RuntimeError(f"{command_line(argv, processes)} exited with status {status}")


def ensure_run(
    argv: Sequence[str], out: Path, *, threads: int | None = None, processes: int = 1, device: str = "auto"
) -> dict:
    """The ``metrics.json`` of the training run ``attnkit argv...`` writing to ``out``: reused when ``out`` holds a
    finished run of exactly this command (``out/command.json``), trained (or resumed, with ``--resume`` in
    ``argv``) otherwise; ``processes > 1`` trains under ``torchrun`` (``threads`` is then per process).
    ``threads`` and ``device`` say where a run trains, not what it is, so they are not part of the command a
    finished run is recognised by; a run's precision is part of its recipe (``--precision`` goes in ``argv``)."""
    metrics = read_json(out / "metrics.json")
    # one process: the bare arguments, as every command.json written before torchrun runs existed (still reused)
    command = list(argv) if processes == 1 else [*launcher(processes), *argv]
    if read_json(out / "command.json") != command or not (metrics and metrics.get("test")):
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / "command.json", command)
        options = ["--no-progress", *([] if threads is None else ["--threads", str(threads)])]
        options += [] if device == "auto" else ["--device", device]
        # --resume in an experiment's command means "continue if interrupted": with no last/ there is nothing to
        # continue, and the training command refuses --resume then, so the run starts as a new one
        todo = [arg for arg in argv if arg != "--resume" or (out / "last").is_dir()]
        run_command([*todo, *options], processes)
        metrics = read_json(out / "metrics.json")
    return metrics


def read_json(path: Path) -> Any | None:
    """The JSON in ``path``, or None when the file does not exist (``ValueError`` when it is not UTF-8 JSON)."""
    return read_json_value(path) if path.exists() else None


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
