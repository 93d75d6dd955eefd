"""Smoke test of ``bench/decoding_runtimes.py`` in ``--quick`` mode: every side runs in its own process, CTranslate2
float32 returns attnkit's tokens, the JSON says how the figures were taken. No timing is asserted."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bench import decoding, decoding_runtimes


@pytest.mark.slow  # eight fresh processes that load torch: about 30 s on a quiet machine, minutes on a loaded one
def test_decoding_runtimes_quick_times_each_side_in_its_own_process(tmp_path: Path, capsys) -> None:
    rows = decoding_runtimes.main(["--quick", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    document = json.loads((tmp_path / "decoding_runtimes.json").read_text())
    assert "each side a fresh process" in printed and document["method"].startswith("each side a fresh process")
    setting = document["settings"]["2"]
    timings = setting["timings"]
    sides = {"attnkit", "attnkit_int8", "attnkit_split"} | (
        {"ct2_float32", "ct2_int8"} if document["ctranslate2"]["available"] else set()
    )
    assert set(timings["samples_s"]) == sides and timings["threads"] == 2
    assert all(len(samples) == 2 for samples in timings["samples_s"].values())
    assert len(timings["load_average_before_round"]) == 2
    for name, (low, mid, high) in timings["min_median_max_s"].items():
        assert low == min(timings["samples_s"][name]) and low <= mid <= high
    tokens = decoding.QUICK.batch * decoding.QUICK.steps
    figures = setting["figures"]
    assert math.isclose(figures["attnkit"]["tokens_per_s"], tokens / timings["min_median_max_s"]["attnkit"][0])
    assert 0.0 <= figures["attnkit_int8"]["tokens_agreeing_with_float32"] <= 1.0
    assert (
        timings["result_digests"]["attnkit_split"] == timings["result_digests"]["attnkit"]
    )  # two threads, same tokens
    assert figures["attnkit_split"]["over_attnkit"] > 0
    assert rows[0].benchmark == "greedy decode, int8" and math.isclose(rows[0].ratio, rows[0].attnkit / rows[0].peer)
    if document["ctranslate2"]["available"]:
        assert timings["result_digests"]["ct2_float32"] == timings["result_digests"]["attnkit"]
        assert figures["ct2_float32"]["tokens_agreeing_with_float32"] == 1.0
        assert len(rows) == 4 and rows[1].target == pytest.approx(1 / decoding_runtimes.TARGETS[2])
        assert (
            rows[3].benchmark == "greedy decode, split" and rows[3].peer_name == decoding_runtimes.LABELS["ct2_float32"]
        )


@pytest.mark.slow  # fresh processes that load torch, twice
def test_one_setting_alone_and_a_kept_export_reused(tmp_path: Path) -> None:
    """``--threads 1`` times that setting only (pinned to core 0); ``--workdir`` keeps the weights and exports, and
    the next run uses them as they are (no second export) and still checks CTranslate2 float32's tokens."""
    workdir = tmp_path / "work"
    decoding_runtimes.main(
        ["--quick", "--threads", "1", "--repeats", "1", "--workdir", str(workdir), "--out", str(tmp_path)]
    )
    document = json.loads((tmp_path / "decoding_runtimes.json").read_text())
    assert set(document["settings"]) == {"1"} and document["settings"]["1"]["timings"]["cpus"] == "0"
    kept = {path: path.stat().st_mtime_ns for path in workdir.rglob("*") if path.is_file()}
    assert (workdir / "model.safetensors") in kept
    decoding_runtimes.main(
        ["--quick", "--threads", "1", "--repeats", "1", "--workdir", str(workdir), "--out", str(tmp_path)]
    )
    assert {path: path.stat().st_mtime_ns for path in workdir.rglob("*") if path.is_file()} == kept
    document = json.loads((tmp_path / "decoding_runtimes.json").read_text())
    digests = document["settings"]["1"]["timings"]["result_digests"]
    if document["ctranslate2"]["available"]:
        assert digests["ct2_float32"] == digests["attnkit"]
