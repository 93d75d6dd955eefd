"""Benchmark 3: additive (Bahdanau) scores, forward + backward — peak memory and time against the naive broadcast.

``attnkit.functional.additive_scores(wq, uk, v)`` (blocked, recomputes ``tanh`` in backward) against
``additive_scores_reference`` (``tanh(Wq[:, :, None] + Uk[:, None]) @ v``, which materialises and keeps the
``[B, Tq, Tk, Dh]`` tensor), with B = 8, Tq = Tk = 512, Dh = 256.

* Memory: each implementation runs one forward + backward in its **own subprocess**; the child reports its
  baseline (peak RSS after imports and input creation) and its peak RSS after the run — the kernel's high-water
  mark, read as ``VmHWM`` because ``ru_maxrss`` inherits the parent's size (see :func:`peak_rss_bytes`; the
  child's ``ru_maxrss`` is kept in the JSON too). Both the peak RSS and the peak minus the baseline are
  compared. Target: attnkit ≤ 1/16 of naive.
* Time: median of repeats, the two alternated in this process. Target: attnkit ≤ 1.0× naive.

Scores and gradients are checked to match before timing. Run: ``python -m bench.additive_memory [--quick]``.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from attnkit.functional import additive_scores, additive_scores_reference
from bench._lib import common, timing

NAME = "additive_memory"
TARGET_MEMORY = 1 / 16
TARGET_TIME = 1.0
IMPLEMENTATIONS: dict[str, Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "attnkit": additive_scores,
    "naive": additive_scores_reference,
}


@dataclass(frozen=True)
class Config:
    """Sizes of one run."""

    batch: int
    length: int
    hidden: int
    repeats: int


FULL = Config(batch=8, length=512, hidden=256, repeats=3)
QUICK = Config(batch=2, length=128, hidden=64, repeats=2)


def make_inputs(config: Config) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``wq [B, Tq, Dh]``, ``uk [B, Tk, Dh]``, ``v [Dh]`` (all requiring grad) and an upstream gradient ``[B, Tq, Tk]``."""
    generator = torch.Generator().manual_seed(0)
    shape = (config.batch, config.length, config.hidden)
    wq = torch.randn(shape, generator=generator).requires_grad_(True)
    uk = torch.randn(shape, generator=generator).requires_grad_(True)
    v = (torch.rand(config.hidden, generator=generator) * 2 - 1).mul_(config.hidden**-0.5).requires_grad_(True)
    grad_out = torch.randn(config.batch, config.length, config.length, generator=generator)
    return wq, uk, v, grad_out


def forward_backward(impl: str, wq: torch.Tensor, uk: torch.Tensor, v: torch.Tensor, grad_out: torch.Tensor):
    """One forward + backward of ``impl``; returns ``(scores, grad_wq, grad_uk, grad_v)``."""
    for tensor in (wq, uk, v):
        tensor.grad = None
    scores = IMPLEMENTATIONS[impl](wq, uk, v)
    scores.backward(grad_out)
    return scores.detach(), wq.grad, uk.grad, v.grad


def max_rss_bytes() -> int:
    """``getrusage(RUSAGE_SELF).ru_maxrss`` in bytes (it is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def peak_rss_bytes() -> int:
    """Peak RSS of this process's own address space: ``VmHWM`` from ``/proc/self/status``, else ``ru_maxrss``.

    Linux carries ``ru_maxrss`` across ``fork``/``vfork`` + ``exec`` from the *parent* (a child started by a big
    process reports at least the parent's size), while ``VmHWM`` is the same high-water mark kept per address
    space and starts afresh at ``exec``. Where they differ, ``ru_maxrss`` is the one that is wrong.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return max_rss_bytes()


def child(impl: str, config: Config) -> dict[str, int]:
    """Run in a fresh process: baseline after imports and inputs, then peak after one forward + backward."""
    common.setup()
    inputs = make_inputs(config)
    baseline = peak_rss_bytes()
    forward_backward(impl, *inputs)
    peak = peak_rss_bytes()
    return {"baseline_rss": baseline, "peak_rss": peak, "increase": peak - baseline, "ru_maxrss": max_rss_bytes()}


def measure_memory(impl: str, quick: bool) -> dict[str, int]:
    """Start a child process for ``impl`` and return its RSS figures (bytes)."""
    root = Path(__file__).resolve().parent.parent
    command = [sys.executable, "-m", "bench.additive_memory", "--child", impl] + (["--quick"] if quick else [])
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"memory child for {impl} failed ({done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def check_values(config: Config) -> dict[str, float]:
    """Scores (≤ 1e-5) and gradients (≤ 1e-5 + rtol · their largest entry) must agree; return the differences.

    ``grad_v`` sums B·Tq·Tk terms; against a float64 run the naive version's error is ~6e-5 of its largest entry
    (attnkit's ~1e-6), so it gets ``rtol = 1e-4``.
    """
    inputs = make_inputs(config)
    ours = [t.clone() for t in forward_backward("attnkit", *inputs)]
    naive = forward_backward("naive", *inputs)
    names = ("scores", "grad_wq", "grad_uk", "grad_v")
    rtols = (0.0, 1e-5, 1e-5, 1e-4)
    return {
        name: common.check_close(name, a, b, atol=1e-5, rtol=rtol)
        for name, a, b, rtol in zip(names, ours, naive, rtols, strict=True)
    }


def run(quick: bool = False, repeats: int | None = None) -> tuple[list[common.Row], dict[str, object]]:
    """Run the benchmark; return the rows and the JSON payload (without machine info)."""
    common.setup()
    config = QUICK if quick else FULL
    repeats = repeats or config.repeats
    memory = {impl: measure_memory(impl, quick) for impl in IMPLEMENTATIONS}
    diffs = check_values(config)  # also the warm-up of both
    inputs = make_inputs(config)
    fns = {impl: (lambda impl=impl: forward_backward(impl, *inputs)) for impl in IMPLEMENTATIONS}
    timings = timing.compare(fns, repeats=repeats, warmup=0, quiet=not quick)
    print(timings.summary("additive time"), flush=True)
    size = f"B={config.batch} Tq=Tk={config.length} Dh={config.hidden}"
    ours, naive = memory["attnkit"], memory["naive"]
    rows = [
        common.Row(
            "additive fwd+bwd peak RSS", size, ours["peak_rss"], naive["peak_rss"], "naive", "bytes", TARGET_MEMORY
        ),
        common.Row(
            "additive fwd+bwd peak−baseline", size, ours["increase"], naive["increase"], "naive", "bytes", TARGET_MEMORY
        ),
        common.Row(
            "additive fwd+bwd time",
            size,
            timings.median("attnkit"),
            timings.median("naive"),
            "naive",
            "s",
            TARGET_TIME,
        ),
    ]
    payload = {
        "quick": quick,
        "config": {**config.__dict__, "repeats": repeats},
        "rows": common.rows_payload(rows),
        "details": {"memory_bytes": memory, "max_abs_diff": diffs, **timings.to_json()},
    }
    return rows, payload


def main(argv: Sequence[str] | None = None) -> list[common.Row]:
    """Command line: run, print the table, write ``<out>/additive_memory.json``. ``--child IMPL`` is internal."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--child" in argv:
        impl = argv[argv.index("--child") + 1]
        print(json.dumps(child(impl, QUICK if "--quick" in argv else FULL)))
        return []
    args = common.parse_args(argv, __doc__.splitlines()[0])
    rows, payload = run(args.quick, args.repeats)
    print(common.format_table(rows))
    print(f"wrote {common.write_json(NAME, payload, args.out)}")
    return rows


if __name__ == "__main__":
    main()
