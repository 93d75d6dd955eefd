"""The fresh-process harness (``bench/_lib/processes.py``) measures what it claims to, on a loaded machine too.

No timed assertion can flake here: the sides sleep (a floor no load lowers) and the deliberate slowdowns are many
times any noise, the bounds generous. What is checked: the same command timed against itself gives a ratio near 1;
a peer slowed on purpose (an extra sleep, or 40× the CPU work) comes out slower; every side runs in its own process
with the pinned thread count; a side that fails or changes its result between rounds stops the comparison.
"""

from __future__ import annotations

import os

import pytest
from bench._lib.processes import Side, compare_processes, digest

SPIN = "bench._lib.probes:spin"


def test_the_same_command_timed_twice_gives_a_ratio_within_noise() -> None:
    side = Side(SPIN, {"sleep": 0.05, "work": 20_000}, warmup=0, inner=2)
    timings = compare_processes({"a": side, "b": side}, rounds=3, threads=1)
    assert all(len(timings.samples[n]) == 3 for n in ("a", "b"))
    assert min(timings.samples["a"]) >= 0.05 and min(timings.samples["b"]) >= 0.05  # the sleep is in every sample
    assert 0.5 < timings.min("a") / timings.min("b") < 2.0
    assert timings.same_result("a", "b") and timings.results["a"] == sum(range(20_000))


def test_a_peer_slowed_by_a_sleep_comes_out_slower() -> None:
    base = Side(SPIN, {"sleep": 0.02}, warmup=0, inner=2)
    slowed = Side(SPIN, {"sleep": 0.32}, warmup=0, inner=2)
    timings = compare_processes({"base": base, "slowed": slowed}, rounds=2, threads=1)
    assert timings.min("slowed") >= 0.32
    assert timings.min("slowed") / timings.min("base") > 3.0  # 16x in the sleeps alone
    assert timings.cpu_min("slowed") < 0.2  # a sleep takes no CPU time: waiting is not counted there


def test_a_peer_slowed_by_a_busy_loop_comes_out_slower() -> None:
    base = Side(SPIN, {"work": 50_000}, warmup=1, inner=3)
    slowed = Side(SPIN, {"work": 2_000_000}, warmup=1, inner=3)
    timings = compare_processes({"base": base, "slowed": slowed}, rounds=2, threads=1)
    assert timings.min("slowed") / timings.min("base") > 4.0  # 40x the work; a 10x margin for load
    assert timings.cpu_min("slowed") / timings.cpu_min("base") > 4.0  # the work is CPU time too
    assert all(len(timings.cpu_samples[n]) == 2 for n in ("base", "slowed"))


def test_each_side_gets_a_fresh_process_with_pinned_threads() -> None:
    side = Side("bench._lib.probes:environment", {"load_torch": True}, warmup=0)
    timings = compare_processes({"one": side}, rounds=1, threads=1)
    seen = timings.results["one"]
    assert seen == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "threads": 1, "torch_threads": 1}
    timings = compare_processes({"two": side}, rounds=1, threads=2)
    assert timings.results["two"]["torch_threads"] == 2 and timings.results["two"]["OMP_NUM_THREADS"] == "2"


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity on this platform")
def test_cpus_pins_the_processes_with_taskset() -> None:
    side = Side(SPIN, {}, warmup=0)
    timings = compare_processes({"pinned": side}, rounds=1, threads=1, cpus="0")
    assert timings.cpus == "0" and "taskset -c 0" in timings.summary("x")


def test_a_failing_side_stops_the_comparison_with_its_error() -> None:
    with pytest.raises(RuntimeError, match="failed"):
        compare_processes({"bad": Side("bench._lib.probes:no_such_function")}, rounds=1, threads=1)


def test_the_order_rotates_and_the_json_keeps_every_sample() -> None:
    sides = {name: Side(SPIN, {"work": 10}, warmup=0) for name in ("x", "y", "z")}
    timings = compare_processes(sides, rounds=3, threads=1)
    document = timings.to_json()
    assert set(document["samples_s"]) == {"x", "y", "z"} and len(document["load_average_before_round"]) == 3
    for name, (low, mid, high) in document["min_median_max_s"].items():
        assert low == min(document["samples_s"][name]) and low <= mid <= high
    assert document["result_digests"]["x"] == digest(sum(range(10)))
