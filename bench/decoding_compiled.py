"""Probe: does ``torch.compile`` lower the decoding floor (``bench/_lib/decoding_floor.py``) on this CPU?

Compiles :meth:`bench._lib.decoding_floor.FloorDecoder.step_static` with inductor, ``dynamic=False``: the
self-attention cache is allocated for every step at once and attended over in full under a mask of the steps
written so far, and the step is a 0-d tensor, so one graph serves all 256 steps (the first probe, 2026-11-25,
compiled the growing-cache :meth:`~bench._lib.decoding_floor.FloorDecoder.step` with ``dynamic=True`` and ran
1.78× *slower* than eager). It checks that the compiled decoding emits the eager floor's tokens, and times the
eager floor, the compiled static floor and attnkit's :func:`attnkit.decoding.greedy` in alternated rounds in one
process (torch against torch) on ``bench.decoding``'s model and sizes. The compile time is reported apart and kept
out of the timings. Not part of ``make bench`` (compiling takes a minute or more and needs a C++ compiler); run
``python -m bench.decoding_compiled [--quick] [--threads N]`` (pin it, e.g. ``taskset -c 0``, for one thread).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence

import torch

from bench import decoding
from bench._lib import common, timing
from bench._lib.decoding_floor import FloorDecoder

NAME = "decoding_compiled"


def probe(quick: bool = False, repeats: int | None = None, threads: int = common.THREADS) -> dict[str, object]:
    """Compile, check the tokens, time the eager floor, the compiled static floor and attnkit; return the JSON
    payload (a probe has no ``run``: ``bench.run_all`` does not pick it up)."""
    common.setup(threads)
    config = decoding.QUICK if quick else decoding.FULL
    repeats = repeats or 3
    model = decoding.build_model(config)
    generator = torch.Generator().manual_seed(0)
    source_ids = torch.randint(4, config.vocab, (config.batch, config.source_len), generator=generator)
    with torch.no_grad():
        memory, _ = model.encode(source_ids, torch.ones_like(source_ids, dtype=torch.bool))  # [B, S, D]
    floor = FloorDecoder(model, memory, config.steps)
    compiled_step = torch.compile(floor.step_static, dynamic=False, fullgraph=True)
    started = time.perf_counter()
    compiled_tokens = floor.decode_static(compiled_step)  # compiles once: every step has the same shapes
    compile_seconds = time.perf_counter() - started
    eager_tokens = floor.decode()
    if not torch.equal(compiled_tokens, eager_tokens) or not torch.equal(floor.decode_static(), eager_tokens):
        raise AssertionError("the static or compiled floor emits other tokens than the eager floor; not timing")
    fns = {
        "eager floor": floor.decode,
        "compiled floor": lambda: floor.decode_static(compiled_step),
        "attnkit": lambda: decoding.cached_greedy(model, source_ids, config.steps),
    }
    timings = timing.compare(fns, repeats=repeats, warmup=1, quiet=not quick)
    print(timings.summary(f"decoding floor, {config.steps} tokens, {threads} thread(s)"), flush=True)
    eager, compiled, ours = (timings.median(name) for name in fns)
    return {
        "quick": quick,
        "config": {**config.__dict__, "repeats": repeats, "threads": threads},
        "compile": "inductor, dynamic=False, static cache attended under a mask, the step a 0-d tensor",
        "compile_seconds": compile_seconds,
        "eager_s": eager,
        "compiled_s": compiled,
        "attnkit_s": ours,
        "compiled_over_eager": compiled / eager,
        "compiled_over_attnkit": compiled / ours,
        "tokens_identical": True,
        "load_average_end": list(os.getloadavg()),
        "details": timings.to_json(),
    }


def main(argv: Sequence[str] | None = None) -> dict[str, object]:
    """Command line: run, print the figures, write ``<out>/decoding_compiled.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=common.THREADS, help=f"torch threads (default {common.THREADS})")
    args = common.parse_args(argv, parser.description, parser)
    payload = probe(args.quick, args.repeats, args.threads)
    print(
        f"eager floor {payload['eager_s']:.3f} s, compiled static floor {payload['compiled_s']:.3f} s "
        f"({payload['compiled_over_eager']:.2f}x the eager time), attnkit {payload['attnkit_s']:.3f} s; "
        f"compiling took {payload['compile_seconds']:.0f} s"
    )
    print(f"wrote {common.write_json(NAME, payload, args.out)}")
    return payload


if __name__ == "__main__":
    main()
