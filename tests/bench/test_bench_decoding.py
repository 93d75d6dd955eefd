"""Smoke test of ``bench/decoding.py`` in ``--quick`` mode: it runs, checks parity, writes well-formed JSON.

No timing assertions: the figures of a quick run mean nothing; only their shape is checked. The parity the
benchmark relies on (``nn.TransformerDecoder`` holding attnkit's weights emits attnkit's tokens) is checked here
on its own too, so a broken weight copy cannot hide behind a timing.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
import torch
from bench._lib import common, decoding_floor

from bench import decoding


@pytest.fixture(autouse=True)
def restore_threads():
    """The benchmark pins torch to two threads: give the other tests theirs back."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def test_decoding_quick_writes_rows_throughput_and_timings(tmp_path: Path, capsys) -> None:
    rows = decoding.main(["--quick", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    assert "greedy decode" in printed and "tokens/s" in printed
    document = json.loads((tmp_path / "decoding.json").read_text())
    assert document["quick"] is True and document["tokens_identical"] is True
    assert document["machine"]["threads"] == common.THREADS
    ct2 = document["ctranslate2"]
    competitors = {"attnkit", "recompute", "floor"} | ({"ct2_float32", "ct2_int8"} if ct2["available"] else set())
    assert len(rows) == len(document["rows"]) == (3 if ct2["available"] else 1)
    row = document["rows"][0]
    assert row["target"] == 1 / decoding.SPEEDUP_TARGET and row["unit"] == "s"
    assert math.isclose(row["ratio"], row["attnkit"] / row["peer"]) and row["met"] == (row["ratio"] <= row["target"])
    figures = document["throughput"]
    tokens = decoding.QUICK.batch * decoding.QUICK.steps
    assert math.isclose(figures["attnkit_tokens_per_s"], tokens / row["attnkit"])
    assert math.isclose(figures["speedup"], row["peer"] / row["attnkit"])
    details = document["details"]
    assert math.isclose(figures["floor_speedup"], figures["floor_tokens_per_s"] / figures["recompute_tokens_per_s"])
    assert "floor (the step's kernels alone)" in printed
    assert set(details["samples_s"]) == set(document["min_median_s"]) == competitors
    assert all(
        len(v) == decoding.QUICK.repeats and common.all_finite_positive(v) for v in details["samples_s"].values()
    )
    for name, (fastest, median) in document["min_median_s"].items():
        assert fastest == min(details["samples_s"][name]) and fastest <= median
    if not ct2["available"]:
        assert "CTranslate2 rows skipped: ctranslate2 is not installed" in printed
        return
    assert ct2["float32_tokens_identical"] is True and 0.0 <= ct2["int8_tokens_agreeing"] <= 1.0
    float32, int8 = document["rows"][1:]
    assert "CTranslate2 float32" in float32["peer_name"] and float32["attnkit"] == row["attnkit"]
    assert float32["target"] == pytest.approx(1 / decoding.CT2_THROUGHPUT_TARGET) and int8["target"] is None
    assert math.isclose(figures["attnkit_share_of_ct2_float32"], float32["peer"] / float32["attnkit"])
    assert "CTranslate2 int8" in printed and "same tokens" in printed


def test_without_ctranslate2_the_decoding_bench_says_so_and_runs_the_rest(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ctranslate2", None)  # as if it were not installed
    rows = decoding.main(["--quick", "--repeats", "1", "--out", str(tmp_path)])
    document = json.loads((tmp_path / "decoding.json").read_text())
    assert len(rows) == 1 and document["ctranslate2"]["available"] is False
    assert "CTranslate2 rows skipped: ctranslate2 is not installed (pip install 'attnkit[deploy]')" in (
        capsys.readouterr().out
    )


def test_the_peer_holds_attnkits_weights_and_decodes_every_step() -> None:
    torch.set_num_threads(1)  # tiny ops: one thread is fastest, above all on a busy machine
    torch.manual_seed(0)
    config = decoding.QUICK
    model = decoding.build_model(config)
    decoder = decoding.torch_decoder(model, config)
    source = torch.randint(4, config.vocab, (3, 5))
    mask = torch.ones_like(source, dtype=torch.bool)
    with torch.no_grad():
        memory, _ = model.encode(source, mask)
        prefix = torch.randint(4, config.vocab, (3, 7))
        ours = model(source, mask, prefix).logits  # [B, T, V]: teacher forcing through attnkit's layers
        x = model._embed(prefix, model.target_embedding, model.target_positions, 0)
        causal = torch.nn.Transformer.generate_square_subsequent_mask(7)
        theirs = model.output(decoder(x, memory, tgt_mask=causal, tgt_is_causal=True))
    torch.testing.assert_close(theirs, ours, atol=1e-5, rtol=1e-5)
    tokens = decoding.cached_greedy(model, source, 20)
    assert tokens.shape == (3, 20)  # <eos> disabled: every one of the 20 steps ran
    assert torch.equal(tokens, decoding.recompute_greedy(model, decoder, memory, 20))
    assert torch.equal(tokens, decoding_floor.floor_greedy(model, memory, 20))  # the same, kernels only


@pytest.mark.slow  # compiling with inductor takes about a minute and needs a C++ compiler
def test_the_compiled_floor_probe_emits_the_eager_floors_tokens_and_writes_its_json(tmp_path: Path) -> None:
    from bench import decoding_compiled

    payload = decoding_compiled.main(["--quick", "--out", str(tmp_path)])
    document = json.loads((tmp_path / "decoding_compiled.json").read_text())
    assert document["tokens_identical"] is True and document["quick"] is True
    assert math.isclose(document["compiled_over_eager"], payload["compiled_s"] / payload["eager_s"])
    assert common.all_finite_positive([document["eager_s"], document["compiled_s"], document["compile_seconds"]])
