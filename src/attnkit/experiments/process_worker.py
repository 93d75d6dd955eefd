"""The child side of :mod:`attnkit.experiments.processes`: build one side, time it, write a JSON report, exit.

Run as ``python -m attnkit.experiments.process_worker SPEC``, ``SPEC`` being JSON: ``setup``, ``kwargs``, ``threads``,
``warmup``, ``inner`` and ``result`` (the report's path). The report holds ``seconds`` and ``cpu_seconds`` per timed
call, ``setup_seconds``, the last call's ``result`` and its ``digest``.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from pathlib import Path


def _pin_torch(threads: int) -> None:
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)


def main(argv: list[str]) -> None:
    """Build, warm up and time the side described by ``argv[0]``; write its report."""
    spec = json.loads(argv[0])
    module_name, function_name = spec["setup"].split(":")
    started = time.perf_counter()
    setup = getattr(importlib.import_module(module_name), function_name)
    _pin_torch(spec["threads"])
    fn = setup(threads=spec["threads"], **spec["kwargs"])
    _pin_torch(spec["threads"])  # the setup may have imported torch itself
    setup_seconds = time.perf_counter() - started
    result = None
    for _ in range(spec["warmup"]):
        result = fn()
    seconds, cpu_seconds = [], []
    for _ in range(spec["inner"]):
        start, cpu_start = time.perf_counter(), time.process_time()
        result = fn()
        seconds.append(time.perf_counter() - start)
        cpu_seconds.append(time.process_time() - cpu_start)
    from attnkit.experiments.processes import digest

    report = {"seconds": seconds, "cpu_seconds": cpu_seconds, "setup_seconds": setup_seconds, "result": result}
    report["digest"] = digest(result)
    path = Path(spec["result"])
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(report))
    tmp.replace(path)


if __name__ == "__main__":
    main(sys.argv[1:])
