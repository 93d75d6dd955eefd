"""Probe: does ``torch.compile`` lower the decoding floor (``bench/_lib/decoding_floor.py``) on this CPU?

Compiles :meth:`bench._lib.decoding_floor.FloorDecoder.step` with inductor (``dynamic=True``: the self-attention cache
grows by one position a step, so a static compile would recompile at every step), checks that the compiled
decoding emits the eager floor's tokens, and times both in alternated rounds on ``bench.decoding``'s model and
sizes. The compile time is reported apart and kept out of the timings. Not part of ``make bench`` (compiling takes
about a minute and needs a C++ compiler); run ``python -m bench.decoding_compiled [--quick]``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import torch

from bench import decoding
from bench._lib import common, timing
from bench._lib.decoding_floor import FloorDecoder

NAME = "decoding_compiled"


def probe(quick: bool = False, repeats: int | None = None) -> dict[str, object]:
    """Compile, check the tokens, time eager and compiled floors; return the JSON payload (a probe has no ``run``:
    ``bench.run_all`` does not pick it up)."""
    common.setup()
    config = decoding.QUICK if quick else decoding.FULL
    repeats = repeats or 3
    model = decoding.build_model(config)
    generator = torch.Generator().manual_seed(0)
    source_ids = torch.randint(4, config.vocab, (config.batch, config.source_len), generator=generator)
    with torch.no_grad():
        memory, _ = model.encode(source_ids, torch.ones_like(source_ids, dtype=torch.bool))  # [B, S, D]
    floor = FloorDecoder(model, memory, config.steps)
    compiled_step = torch.compile(floor.step, dynamic=True)
    started = time.perf_counter()
    compiled_tokens = floor.decode(compiled_step)  # compiles (and recompiles, for the first steps' shapes)
    compile_seconds = time.perf_counter() - started
    if not torch.equal(compiled_tokens, floor.decode()):
        raise AssertionError("the compiled floor emits other tokens than the eager floor; not timing")
    fns = {"eager floor": floor.decode, "compiled floor": lambda: floor.decode(compiled_step)}
    timings = timing.compare(fns, repeats=repeats, warmup=1, quiet=not quick)
    print(timings.summary(f"decoding floor, {config.steps} tokens"), flush=True)
    eager, compiled = timings.median("eager floor"), timings.median("compiled floor")
    return {
        "quick": quick,
        "config": {**config.__dict__, "repeats": repeats},
        "compile_seconds": compile_seconds,
        "eager_s": eager,
        "compiled_s": compiled,
        "compiled_over_eager": compiled / eager,
        "tokens_identical": True,
        "details": timings.to_json(),
    }


def main(argv: Sequence[str] | None = None) -> dict[str, object]:
    """Command line: run, print the figures, write ``<out>/decoding_compiled.json``."""
    args = common.parse_args(argv, __doc__.splitlines()[0])
    payload = probe(args.quick, args.repeats)
    print(
        f"eager floor {payload['eager_s']:.3f} s, compiled floor {payload['compiled_s']:.3f} s "
        f"({payload['compiled_over_eager']:.2f}x the eager time; compiling took {payload['compile_seconds']:.0f} s)"
    )
    print(f"wrote {common.write_json(NAME, payload, args.out)}")
    return payload


if __name__ == "__main__":
    main()
