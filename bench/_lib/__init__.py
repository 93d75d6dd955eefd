"""What the benchmarks share, kept apart from them so that every module of ``bench/`` is a benchmark or a probe.

| module | holds |
|---|---|
| :mod:`bench._lib.common` | set-up, parity checks, the results table, JSON with machine info |
| :mod:`bench._lib.timing` | fair timing on a shared machine: alternated rounds, a quiet gate |
| :mod:`bench._lib.decoding_floor` | the decoding floor: one step's kernels alone (``bench.decoding``) |
| :mod:`bench._lib.decoding_ctranslate2` | CTranslate2's exports of ``bench.decoding``'s model (``bench.decoding_runtimes``) |
| :mod:`bench._lib.processes` | runtimes timed apart: one fresh process per side per round (``attnkit.experiments.processes``) |
| :mod:`bench._lib.decoding_sides` | the sides of ``bench.decoding_runtimes``, built in those processes |
| :mod:`bench._lib.probes` | sides of known cost, for the harness's own test |
| :mod:`bench._lib.icount` | the workloads ``bench.instruction_counts`` counts under callgrind |
"""
