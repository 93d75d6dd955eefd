"""Benchmark: how long ``attnkit --help`` and ``attnkit train --help`` take to answer, against ``import torch``.

Every command is a fresh Python process (``subprocess.run``), as a user's shell starts it; a round runs each once,
the order flipping from round to round. Two figures per command, both medians over the rounds:

* **wall** seconds, from ``subprocess.run`` to its return (what the user waits for);
* **CPU** seconds of the child (user + system, from ``resource.getrusage(RUSAGE_CHILDREN)``): the work the command
  does, which another job on the machine does not inflate the way it inflates wall time.

The peer is ``python -c "import torch"`` in the same interpreter: what every ``--help`` cost while the command line
imported torch before parsing (1.9 s on a quiet machine, 2026-11-23). The issue's target is an absolute one, a
median of at most 0.5 s wall for ``attnkit --help`` on a quiet machine; the rows' ratio is against the peer.
Run: ``python -m bench.cli_startup [--quick]``.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time

from bench._lib import common, timing

NAME = "cli_startup"
TARGET_SECONDS = 0.5  # median wall time of `attnkit --help` (issue #14)
COMMANDS: dict[str, list[str]] = {
    "attnkit --help": [sys.executable, "-m", "attnkit.cli", "--help"],
    "attnkit train --help": [sys.executable, "-m", "attnkit.cli", "train", "--help"],
    "import torch": [sys.executable, "-c", "import torch"],
}
PEER = "import torch"
FULL_ROUNDS, QUICK_ROUNDS = 15, 2


def time_command(argv: list[str]) -> tuple[float, float]:
    """``(wall seconds, child CPU seconds)`` of one run of ``argv``; raises if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def measure(rounds: int, quiet: bool) -> dict[str, dict[str, list[float]]]:
    """Every command once per round, alternating the order; ``{command: {"wall": [...], "cpu": [...]}}``."""
    samples: dict[str, dict[str, list[float]]] = {name: {"wall": [], "cpu": []} for name in COMMANDS}
    names = list(COMMANDS)
    for name in names:  # warm the page cache: the first start of a cold interpreter is not what users repeat
        time_command(COMMANDS[name])
    for index in range(rounds):
        if quiet:
            timing.wait_for_quiet()
        for name in names if index % 2 == 0 else reversed(names):
            wall, cpu = time_command(COMMANDS[name])
            samples[name]["wall"].append(wall)
            samples[name]["cpu"].append(cpu)
    return samples


def run(quick: bool = False, repeats: int | None = None) -> tuple[list[common.Row], dict[str, object]]:
    """Time the commands; rows of wall and CPU medians against ``import torch``, and the JSON payload."""
    rounds = repeats or (QUICK_ROUNDS if quick else FULL_ROUNDS)
    samples = measure(rounds, quiet=not quick)
    medians = {name: {kind: statistics.median(values) for kind, values in s.items()} for name, s in samples.items()}
    rows = [
        common.Row(
            f"{name} ({kind})",
            "fresh process",
            medians[name][kind],
            medians[PEER][kind],
            "python -c 'import torch'",
            "s",
        )
        for name in COMMANDS
        if name != PEER
        for kind in ("wall", "cpu")
    ]
    help_wall = medians["attnkit --help"]["wall"]
    payload: dict[str, object] = {
        "quick": quick,
        "rounds": rounds,
        "target_seconds": TARGET_SECONDS,
        "help_median_wall_seconds": help_wall,
        "target_met": help_wall <= TARGET_SECONDS,
        "medians": medians,
        "samples": samples,
        "rows": common.rows_payload(rows),
    }
    return rows, payload


def main() -> None:
    """Command-line entry point: print the table, write the JSON."""
    args = common.parse_args(None, __doc__.splitlines()[0])
    rows, payload = run(args.quick, args.repeats)
    print(common.format_table(rows))
    met = "met" if payload["target_met"] else "NOT met"
    print(
        f"attnkit --help: median {payload['help_median_wall_seconds']:.3f} s wall (target ≤ {TARGET_SECONDS} s: {met})"
    )
    print(f"wrote {common.write_json(NAME, payload, args.out)}")


if __name__ == "__main__":
    main()
