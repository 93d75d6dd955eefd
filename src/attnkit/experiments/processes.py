"""Fair timing across runtimes: every side in its own fresh process, processes alternating round by round.

Two runtimes in one process slow each other (torch's OpenMP pool and CTranslate2's thread pool contend for the same
cores), so each **side** is built by a *setup* function (``"module:function"`` plus JSON keyword arguments) and
timed in a **fresh Python process** (:mod:`attnkit.experiments.process_worker`). Every **round** runs one process
per side, the order rotating, so a shared machine's drift falls on every side alike. Threads are **pinned** (the
``*_NUM_THREADS`` variables, ``torch.set_num_threads``, the setups' ``threads``; ``cpus``: ``taskset -c``). A side's
figure is the **minimum over rounds** (the least disturbed on a loaded machine), with median and maximum as spread;
its CPU time per round is kept as ``cpu_samples``. Results come back as JSON, digested every round, so parity and
determinism checks need no extra run. Used by ``attnkit experiment deploy`` and ``bench/_lib/processes.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


@dataclass(frozen=True)
class Side:
    """One competitor: ``setup(threads=..., **kwargs)`` (``setup`` is ``"package.module:function"``), run in a fresh
    process, returns the zero-argument function timed there, whose result must be JSON-serialisable (or None).
    ``warmup`` untimed calls come first, then ``inner`` timed ones; the process's figure is the fastest."""

    setup: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    warmup: int = 1
    inner: int = 1


@dataclass
class ProcessTimings:
    """Per side, each round's seconds (its process's fastest call); the load before each round; the results."""

    samples: dict[str, list[float]]
    threads: int
    cpus: str | None
    load_before_round: list[float] = field(default_factory=list)  # 1-minute load average
    results: dict[str, Any] = field(default_factory=dict)  # each side's result in its first round
    cpu_samples: dict[str, list[float]] = field(default_factory=dict)  # per round, the least CPU time of its calls
    digests: dict[str, str] = field(default_factory=dict)

    def min(self, name: str) -> float:
        """The side's figure: its fastest round."""
        return min(self.samples[name])

    def median(self, name: str) -> float:
        """The side's median round (spread)."""
        return statistics.median(self.samples[name])

    def max(self, name: str) -> float:
        """The side's slowest round (spread)."""
        return max(self.samples[name])

    def cpu_min(self, name: str) -> float:
        """The side's least process CPU time over rounds (all its threads; less sensitive to other jobs' load
        than wall time, though not to their use of the shared caches)."""
        return min(self.cpu_samples[name])

    def spread(self, name: str) -> str:
        """``min / median / max`` in seconds, for tables: ``0.351 / 0.362 / 0.410 s``."""
        return f"{self.min(name):.3f} / {self.median(name):.3f} / {self.max(name):.3f} s"

    def same_result(self, a: str, b: str) -> bool:
        """Whether sides ``a`` and ``b`` returned the same result."""
        return self.digests[a] == self.digests[b]

    def summary(self, label: str) -> str:
        """One line saying how the figures were taken."""
        rounds = len(self.load_before_round)
        loads = self.load_before_round
        where = f", taskset -c {self.cpus}" if self.cpus else ""
        return (
            f"{label}: {rounds} rounds, each side a fresh process, order rotating; {self.threads} thread(s){where}; "
            f"figures are the minimum over rounds; 1-min load average {min(loads):.2f}–{max(loads):.2f}"
        )

    def to_json(self) -> dict[str, object]:
        """Everything measured but the results, for the results file."""
        return {
            "method": "fresh process per side per round, order rotating; minimum over rounds",
            "threads": self.threads,
            "cpus": self.cpus,
            "samples_s": self.samples,
            "cpu_samples_s": self.cpu_samples,
            "min_median_max_s": {n: [self.min(n), self.median(n), self.max(n)] for n in self.samples},
            "load_average_before_round": [round(x, 2) for x in self.load_before_round],
            "result_digests": self.digests,
        }


def digest(result: Any) -> str:
    """A short hash of a JSON-serialisable result (what rounds and sides are compared by)."""
    return hashlib.sha256(json.dumps(result, sort_keys=True).encode()).hexdigest()[:16]


def child_environment(threads: int, path: str | None = None) -> dict[str, str]:
    """This process's environment with every thread-count variable set to ``threads`` and ``path`` (a directory
    the sides' modules are imported from) ahead on ``PYTHONPATH``."""
    env = dict(os.environ)
    env.update({name: str(threads) for name in THREAD_VARIABLES})
    env["PYTHONPATH"] = os.pathsep.join(p for p in (path, env.get("PYTHONPATH", "")) if p)
    return env


def _command(side: Side, threads: int, cpus: str | None, result_path: Path) -> list[str]:
    spec = {**side.__dict__, "threads": threads, "result": str(result_path)}
    command = [sys.executable, "-m", "attnkit.experiments.process_worker", json.dumps(spec)]
    if cpus is not None:
        taskset = shutil.which("taskset")
        if taskset is None:
            raise RuntimeError("cpus= needs the taskset command (util-linux), which is not on PATH")
        command = [taskset, "-c", cpus, *command]
    return command


def run_side(
    side: Side, *, threads: int, cpus: str | None = None, path: str | None = None, timeout: float = 3600.0
) -> dict[str, Any]:
    """Run ``side`` once in a fresh process (``path``: put ahead on its ``PYTHONPATH``); return the worker's report
    (``seconds``, ``result``, ...). A failed process raises ``RuntimeError`` with its stderr's tail."""
    with tempfile.TemporaryDirectory(prefix="attnkit-bench-side-") as tmp:
        result_path = Path(tmp) / "result.json"
        done = subprocess.run(
            _command(side, threads, cpus, result_path),
            env=child_environment(threads, path),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0 or not result_path.exists():
            tail = "\n".join(done.stderr.strip().splitlines()[-15:])
            raise RuntimeError(f"side {side.setup} failed (exit {done.returncode}):\n{tail}")
        return json.loads(result_path.read_text())


def compare_processes(
    sides: dict[str, Side],
    *,
    rounds: int,
    threads: int,
    cpus: str | None = None,
    path: str | None = None,
    quiet: bool = True,
) -> ProcessTimings:
    """Time every side in ``rounds`` rounds, each side in a fresh process per round, the order rotating. ``cpus``:
    a ``taskset -c`` list (``"0"``); ``path``: put ahead on the processes' ``PYTHONPATH``. A side that returns a
    different result in a later round (not deterministic) raises ``RuntimeError``."""
    if rounds < 1 or threads < 1:
        raise ValueError(f"rounds and threads must be >= 1, got {rounds} and {threads}")
    names = list(sides)
    timings = ProcessTimings({name: [] for name in names}, threads=threads, cpus=cpus)
    for r in range(rounds):
        timings.load_before_round.append(os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0)
        for name in names[r % len(names) :] + names[: r % len(names)]:
            report = run_side(sides[name], threads=threads, cpus=cpus, path=path)
            timings.samples[name].append(min(report["seconds"]))
            timings.cpu_samples.setdefault(name, []).append(min(report.get("cpu_seconds", [float("nan")])))
            if name not in timings.digests:
                timings.digests[name], timings.results[name] = report["digest"], report["result"]
            elif report["digest"] != timings.digests[name]:
                raise RuntimeError(f"side {name!r} returned a different result in round {r + 1}")
            if not quiet:
                print(f"  round {r + 1} {name}: {min(report['seconds']):.3f} s", flush=True)
    return timings
