"""What the benchmarks share, kept apart from them so that every module of ``bench/`` is a benchmark or a probe.

| module | holds |
|---|---|
| :mod:`bench._lib.common` | set-up, parity checks, the results table, JSON with machine info |
| :mod:`bench._lib.timing` | fair timing on a shared machine: alternated rounds, a quiet gate |
| :mod:`bench._lib.decoding_floor` | the decoding floor: one step's kernels alone (``bench.decoding``) |
| :mod:`bench._lib.decoding_ctranslate2` | CTranslate2's side of ``bench.decoding`` |
| :mod:`bench._lib.icount` | the workloads ``bench.instruction_counts`` counts under callgrind |
"""
