"""Smoke tests for ``bench/``: every benchmark runs in ``--quick`` mode and writes well-formed JSON.

No timing assertions, ever: the figures of a quick run mean nothing; only their shape is checked.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from bench._lib import common, timing

from bench import additive_memory, mha, run_all, sdpa_weights


@pytest.fixture(autouse=True)
def restore_torch_state():
    """The benchmarks pin two threads and seed the global RNG: give the other tests theirs back."""
    threads, rng = torch.get_num_threads(), torch.get_rng_state()
    yield
    torch.set_num_threads(threads)
    torch.set_rng_state(rng)


ROW_KEYS = {"benchmark", "size", "attnkit", "peer", "peer_name", "unit", "target", "ratio", "met"}
MACHINE_KEYS = {"torch", "cpu", "threads", "python", "platform"}


def _load(path: Path) -> dict:
    document = json.loads(path.read_text())
    assert document["quick"] is True
    assert set(document["machine"]) >= MACHINE_KEYS
    assert document["machine"]["threads"] == common.THREADS
    return document


def _check_rows(rows: list[dict], expected: int) -> None:
    assert len(rows) == expected
    for row in rows:
        assert set(row) == ROW_KEYS
        for key in ("attnkit", "peer", "ratio"):
            assert isinstance(row[key], int | float) and math.isfinite(row[key]) and row[key] > 0, (key, row)
        assert math.isclose(row["ratio"], row["attnkit"] / row["peer"])
        if row["target"] is None:
            assert row["met"] is None
        else:
            assert row["met"] == (row["ratio"] <= row["target"])


def _check_timings(timings: dict, names: set[str]) -> None:
    assert set(timings["samples_s"]) == names
    rounds = len(timings["others_cores_per_round"])
    assert rounds == timings["requested_rounds"]  # quick runs time exactly the requested rounds
    for values in timings["samples_s"].values():
        assert len(values) == rounds and common.all_finite_positive(values)
    assert 0 <= timings["clean_rounds"] <= rounds and isinstance(timings["contended"], bool)


def test_mha_quick(tmp_path: Path, capsys) -> None:
    mha.main(["--quick", "--out", str(tmp_path)])
    assert "ratio" in capsys.readouterr().out  # the table was printed
    document = _load(tmp_path / "mha.json")
    _check_rows(document["rows"], 4 * len(mha.QUICK.lengths))
    details = document["details"]
    assert [d["length"] for d in details] == list(mha.QUICK.lengths)
    for detail in details:
        _check_timings(detail, {"attnkit", "attnkit_packed", "torch", "torch_no_weights"})
        assert all(diff <= 1e-4 for diff in detail["max_abs_diff"].values())


def test_sdpa_weights_quick(tmp_path: Path, capsys) -> None:
    sdpa_weights.main(["--quick", "--out", str(tmp_path)])
    assert "ratio" in capsys.readouterr().out
    document = _load(tmp_path / "sdpa_weights.json")
    _check_rows(document["rows"], 3)
    details = document["details"]
    _check_timings(details["inference"], {"sdpa", "attnkit", "attnkit_weights"})
    _check_timings(details["training"], {"sdpa_grad", "attnkit_weights_grad"})
    assert all(diff <= 1e-5 for diff in details["max_abs_diff"].values())


def test_additive_memory_quick(tmp_path: Path, capsys) -> None:
    additive_memory.main(["--quick", "--out", str(tmp_path)])
    assert "ratio" in capsys.readouterr().out
    document = _load(tmp_path / "additive_memory.json")
    _check_rows(document["rows"], 3)
    details = document["details"]
    _check_timings(details, {"attnkit", "naive"})
    for figures in details["memory_bytes"].values():
        assert set(figures) == {"baseline_rss", "peak_rss", "increase", "ru_maxrss"}
        assert common.all_finite_positive(list(figures.values()))
        assert figures["increase"] == figures["peak_rss"] - figures["baseline_rss"]


def test_run_all_finds_the_core_benchmarks_first() -> None:
    names = [module.NAME for module in run_all.discover()]
    assert names[:3] == ["mha", "sdpa_weights", "additive_memory"]
    assert not {"common", "timing", "run_all"} & set(names)
    assert "decoding_compiled" not in names  # a probe run on its own, not part of `make bench`


def test_every_discovered_benchmark_returns_rows_and_payload() -> None:
    # run_all unpacks `run(quick, repeats)` into (rows, payload): a module whose `run` says otherwise broke `make
    # bench` after an hour of timings (decoding_compiled, 2026-11-25)
    import inspect

    for module in run_all.discover():
        annotation = inspect.signature(module.run).return_annotation
        assert "tuple" in str(annotation).lower(), f"{module.__name__}.run returns {annotation}"


def test_run_all_writes_every_file(tmp_path: Path, monkeypatch) -> None:
    # The core three only (other benchmarks have their own smoke tests), and the memory children (two fresh Python
    # processes, covered above) stubbed, to keep the suite short.
    only = ["--only", "additive_memory", "mha", "sdpa_weights"]  # run in discovery order, not this one
    stub = {"baseline_rss": 100, "peak_rss": 150, "increase": 50, "ru_maxrss": 150}
    monkeypatch.setattr(additive_memory, "measure_memory", lambda impl, quick: dict(stub))
    run_all.main(["--quick", "--repeats", "1", "--out", str(tmp_path), *only])
    summary = _load(tmp_path / "summary.json")
    assert summary["files"] == ["mha.json", "sdpa_weights.json", "additive_memory.json"]
    assert all((tmp_path / name).is_file() for name in summary["files"])
    per_file = [row for name in summary["files"] for row in _load(tmp_path / name)["rows"]]
    assert summary["rows"] == per_file and len(per_file) > 3
    _check_rows(summary["rows"], len(per_file))


def test_run_all_refuses_unknown_names(capsys) -> None:
    with pytest.raises(SystemExit):
        run_all.main(["--quick", "--only", "no_such_benchmark"])
    assert "unknown benchmark" in capsys.readouterr().err


def test_row_ratio_and_target() -> None:
    met = common.Row("b", "s", 1.0, 2.0, "peer", "s", 0.8)
    missed = common.Row("b", "s", 3.0, 2.0, "peer", "s", 0.8)
    info = common.Row("b", "s", 3.0, 2.0, "peer", "s")
    assert (met.ratio, met.met, missed.met, info.met) == (0.5, True, False, None)
    table = common.format_table([met, missed, info])
    assert "yes" in table and "NO" in table


def test_medians_use_clean_rounds_unless_too_few() -> None:
    clean = timing.Timings({"a": [1.0, 9.0, 2.0, 3.0]}, others_cores=[0.0, 1.5, 0.1, 0.0], requested=3)
    assert clean.clean_rounds == [0, 2, 3] and not clean.contended
    assert clean.median("a") == 2.0  # the contended 9.0 is set aside
    loaded = timing.Timings({"a": [1.0, 9.0, 8.0]}, others_cores=[0.0, 1.5, 1.0], requested=3)
    assert loaded.contended and loaded.median("a") == 8.0  # too few clean rounds: all of them, flagged
    assert "CONTENDED" in loaded.summary("x")
    few = timing.Timings({"a": [1.0] * 10}, others_cores=[0.0] * 4 + [1.0] * 6, requested=10)
    assert few.contended  # 4 clean rounds of the 10 requested: fewer than half


def test_check_close_refuses_different_results() -> None:
    a = torch.zeros(3)
    assert common.check_close("same", a, a) == 0.0
    with pytest.raises(AssertionError, match="different"):
        common.check_close("differ", a, a + 1e-3)
