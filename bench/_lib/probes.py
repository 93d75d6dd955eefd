"""Sides with a known cost, for testing :mod:`bench._lib.processes` (not benchmarks).

:func:`spin` returns a function that sleeps ``sleep`` seconds and then runs ``work`` iterations of a pure-Python
loop: the sleep is a floor no load can lower, the loop a CPU cost load can raise; a slowed peer adds either.
:func:`environment` returns the thread variables and the torch thread count the worker saw.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable


def spin(*, threads: int, work: int = 0, sleep: float = 0.0) -> Callable[[], int]:
    """A function that sleeps ``sleep`` s, then sums ``work`` integers; it returns the sum."""
    del threads  # pure Python: one thread whatever is asked

    def run() -> int:
        time.sleep(sleep)
        total = 0
        for i in range(work):
            total += i
        return total

    return run


def environment(*, threads: int, load_torch: bool = False) -> Callable[[], dict[str, object]]:
    """A function returning the thread variables the process got, ``threads`` and (if asked) torch's count."""

    def run() -> dict[str, object]:
        seen: dict[str, object] = {name: os.environ.get(name) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
        seen["threads"] = threads
        if load_torch:
            import torch

            seen["torch_threads"] = torch.get_num_threads()
        return seen

    if load_torch:
        import torch  # noqa: F401  (loaded during setup, as a real side would; the worker pins it)
    return run
