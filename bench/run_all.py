"""Run every benchmark (what ``make bench`` calls): one table at the end, one JSON file per benchmark.

Each benchmark writes ``<out>/<name>.json``; this also writes ``<out>/core.json``, every row of the run in one
file with the machine info. Run: ``python -m bench.run_all [--quick] [--repeats N] [--out DIR]``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from bench import additive_memory, common, mha, sdpa_weights

MODULES = (mha, sdpa_weights, additive_memory)


def main(argv: Sequence[str] | None = None) -> list[common.Row]:
    """Run each module in turn, write its JSON and a combined ``core.json``, print the combined table."""
    args = common.parse_args(argv, __doc__.splitlines()[0])
    rows: list[common.Row] = []
    files = []
    start = time.perf_counter()
    for module in MODULES:
        print(f"== {module.NAME}", flush=True)
        module_rows, payload = module.run(args.quick, args.repeats)
        print(common.format_table(module_rows), flush=True)
        files.append(common.write_json(module.NAME, payload, args.out).name)
        rows += module_rows
    summary = {"quick": args.quick, "files": files, "seconds": time.perf_counter() - start}
    path = common.write_json("core", {**summary, "rows": common.rows_payload(rows)}, args.out)
    print("\n== all benchmarks")
    print(common.format_table(rows))
    print(f"wrote {', '.join(files)} and {path}")
    return rows


if __name__ == "__main__":
    main()
