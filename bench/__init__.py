"""attnkit benchmarks: each module prints a table and writes JSON to ``bench/results/``; ``python -m bench.run_all`` runs them all."""
