"""Fair timing on a small shared machine: alternated rounds, a quiet gate, contended rounds set aside.

On a 2-core machine another process's job stalls every parallel region of ours (each OpenMP barrier waits for a
descheduled thread), so a benchmark made of many small ops is hit far harder than one fused kernel: load does not
add noise equally to both sides. Hence:

* every **round** runs each competitor once, the order flipping from round to round (alternation);
* a round starts when the CPUs are idle (:func:`wait_for_quiet`, within a waiting budget);
* during each round we measure the CPU time **other** processes used (system busy time minus ours); a round where
  they averaged more than :data:`CONTENDED_CORES` is *contended*, and extra rounds are run (up to twice the
  requested number) to collect the requested count of clean ones;
* the figure is the **median of the clean rounds** (of all rounds, flagged ``contended``, when fewer than three or
  than half the requested number are clean: rerun then). Every sample and every round's load stay in the JSON.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

QUIET_BUSY = 0.15  # a round starts when the CPUs were at most 15 % busy over a quarter of a second...
QUIET_TIMEOUT = 20.0  # ...or after this many seconds of waiting...
QUIET_BUDGET = 120.0  # ...and at most this long in total per comparison (under steady load, stop waiting)
CONTENDED_CORES = 0.2  # other processes using more than 0.2 of a core on average during a round: contended
MIN_CLEAN = 3  # fewer clean rounds than this, or than half the requested count: median of all rounds, flagged
TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _system_busy_ticks() -> int | None:
    """Busy clock ticks of all CPUs since boot (``/proc/stat``), or None where unavailable."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    return sum(fields) - fields[3] - (fields[4] if len(fields) > 4 else 0)  # minus idle and iowait


def _own_ticks() -> int:
    """Clock ticks of CPU this process (all its threads) has used."""
    times = os.times()
    return round((times.user + times.system) * TICK)


def cpu_busy_fraction(window: float = 0.25) -> float:
    """Fraction of all CPUs busy during the next ``window`` seconds, while this process sleeps (0 if unknown)."""
    start = _system_busy_ticks()
    time.sleep(window)
    end = _system_busy_ticks()
    if start is None or end is None:
        return 0.0
    return (end - start) / (window * TICK * (os.cpu_count() or 1))


def wait_for_quiet(threshold: float = QUIET_BUSY, timeout: float = QUIET_TIMEOUT) -> bool:
    """Wait up to ``timeout`` seconds for the CPUs to be at most ``threshold`` busy; return whether they were."""
    deadline = time.monotonic() + timeout
    while True:
        if cpu_busy_fraction() <= threshold:
            return True
        if time.monotonic() >= deadline:
            return False


@dataclass
class Timings:
    """Seconds per call of each competitor, round by round, and how loaded each round was."""

    samples: dict[str, list[float]]
    others_cores: list[float] = field(default_factory=list)  # other processes' mean CPU use (cores) per round
    requested: int = 0

    @property
    def clean_rounds(self) -> list[int]:
        """Indices of the rounds other processes left alone."""
        return [i for i, load in enumerate(self.others_cores) if load <= CONTENDED_CORES]

    @property
    def contended(self) -> bool:
        """True if too few rounds were clean and the medians include contended rounds."""
        needed = max(MIN_CLEAN, (self.requested + 1) // 2)
        return len(self.clean_rounds) < min(needed, len(self.others_cores))

    def median(self, name: str) -> float:
        """Median seconds per call of ``name`` over the clean rounds (all rounds if :attr:`contended`)."""
        rounds = range(len(self.others_cores)) if self.contended else self.clean_rounds
        return statistics.median(self.samples[name][i] for i in rounds)

    def summary(self, label: str) -> str:
        """One line on how clean the rounds were, printed under the table."""
        rounds = len(self.others_cores)
        note = "; CONTENDED: medians over all rounds" if self.contended else ""
        return f"{label}: {len(self.clean_rounds)} of {rounds} rounds clean (requested {self.requested}){note}"

    def to_json(self) -> dict[str, object]:
        """Everything measured, for the results file."""
        return {
            "samples_s": self.samples,
            "others_cores_per_round": [round(x, 3) for x in self.others_cores],
            "requested_rounds": self.requested,
            "clean_rounds": len(self.clean_rounds),
            "contended": self.contended,
        }


def compare(
    fns: dict[str, Callable[[], object]],
    *,
    repeats: int,
    warmup: int = 1,
    inner: int = 1,
    quiet: bool = True,
) -> Timings:
    """Time the functions in ``fns`` in alternated rounds until ``repeats`` clean rounds (or ``2 × repeats`` rounds).

    Args:
        fns: name -> zero-argument callable (all run in this process).
        repeats: clean rounds wanted; each round times every function once, the order flipping between rounds.
        warmup: untimed calls of each function first.
        inner: calls per sample (the sample is their mean), for functions too short to time one by one.
        quiet: wait for an idle machine before each round and retry contended rounds; ``False`` (smoke runs) times
            exactly ``repeats`` rounds straight away.
    """
    names = list(fns)
    for _ in range(warmup):
        for name in names:
            fns[name]()
    timings = Timings({name: [] for name in names}, requested=repeats)
    wait_deadline = time.monotonic() + QUIET_BUDGET
    max_rounds = 2 * repeats if quiet else repeats
    while len(timings.others_cores) < max_rounds and (not quiet or len(timings.clean_rounds) < repeats):
        if quiet and (budget := min(QUIET_TIMEOUT, wait_deadline - time.monotonic())) > 0:
            wait_for_quiet(timeout=budget)
        order = names if len(timings.others_cores) % 2 == 0 else names[::-1]
        busy0, own0, wall0 = _system_busy_ticks(), _own_ticks(), time.perf_counter()
        for name in order:
            start = time.perf_counter()
            for _ in range(inner):
                fns[name]()
            timings.samples[name].append((time.perf_counter() - start) / inner)
        busy1, own1, wall1 = _system_busy_ticks(), _own_ticks(), time.perf_counter()
        others = 0.0 if busy0 is None or busy1 is None else max(0, (busy1 - busy0) - (own1 - own0))
        timings.others_cores.append(others / TICK / (wall1 - wall0))
    return timings
