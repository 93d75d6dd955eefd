"""Helpers of the benchmarks (not benchmarks themselves): the fresh-process harness for comparing runtimes."""
