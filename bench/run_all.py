"""Run every benchmark (what ``make bench`` calls): one table at the end, one JSON file per benchmark.

A benchmark is any module ``bench/<name>.py`` defining ``NAME`` and ``run(quick, repeats) -> (rows, payload)``;
what they share lives in ``bench/_lib/``, and a probe run on its own (``decoding_compiled``, ``instruction_counts``)
has no ``run``. The attention-core benchmarks run first, then the others in alphabetical order. Each writes
``<out>/<NAME>.json``; this also writes ``<out>/summary.json``, every row of the run in one file with the machine
info.
Run: ``python -m bench.run_all [--quick] [--repeats N] [--out DIR] [--only NAME ...]``.
"""

from __future__ import annotations

import argparse
import importlib
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from bench._lib import common

CORE = ("mha", "sdpa_weights", "additive_memory")  # the attention core's benchmarks, in this order


def discover() -> list[ModuleType]:
    """The benchmark modules in ``bench/``: the core ones first, then the rest alphabetically."""
    here = Path(__file__).resolve()
    names = sorted(p.stem for p in here.parent.glob("*.py") if not p.stem.startswith("_") and p != here)
    ordered = [n for n in CORE if n in names] + [n for n in names if n not in CORE]
    modules = [importlib.import_module(f"bench.{name}") for name in ordered]
    return [m for m in modules if hasattr(m, "NAME") and callable(getattr(m, "run", None))]


def main(argv: Sequence[str] | None = None) -> list[common.Row]:
    """Run each benchmark in turn, write its JSON and ``summary.json``, print the combined table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these benchmarks (by NAME)")
    args = common.parse_args(argv, parser.description, parser)
    modules = discover()
    if args.only:
        unknown = set(args.only) - {m.NAME for m in modules}
        if unknown:
            parser.error(f"unknown benchmark(s) {sorted(unknown)}; known: {[m.NAME for m in modules]}")
        modules = [m for m in modules if m.NAME in args.only]
    rows: list[common.Row] = []
    files = []
    start = time.perf_counter()
    for module in modules:
        print(f"== {module.NAME}", flush=True)
        module_rows, payload = module.run(args.quick, args.repeats)
        print(common.format_table(module_rows), flush=True)
        files.append(common.write_json(module.NAME, payload, args.out).name)
        rows += module_rows
    summary = {"quick": args.quick, "only": args.only, "files": files, "seconds": time.perf_counter() - start}
    path = common.write_json("summary", {**summary, "rows": common.rows_payload(rows)}, args.out)
    print("\n== all benchmarks")
    print(common.format_table(rows))
    print(f"wrote {', '.join(files)} and {path.name} in {args.out}")
    return rows


if __name__ == "__main__":
    main()
