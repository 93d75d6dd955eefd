"""Smoke test of ``bench/encoder_bucketing.py`` in ``--quick`` mode, and the parity its figures rely on.

No timing assertions: the figures of a quick run mean nothing; only their shape is checked. The weight copy
into ``nn.TransformerEncoder`` and the parity check are tested on their own, so a broken copy cannot hide behind
a timing.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest
import torch
from bench._lib import common

from bench import encoder_bucketing


@pytest.fixture(autouse=True)
def restore_torch_state():
    """The benchmark pins two threads and seeds the global RNG: give the other tests theirs back."""
    threads, rng = torch.get_num_threads(), torch.get_rng_state()
    yield
    torch.set_num_threads(threads)
    torch.set_rng_state(rng)


def test_lengths_are_long_tailed_fixed_and_reach_the_maximum() -> None:
    config = encoder_bucketing.FULL
    lengths = encoder_bucketing.document_lengths(config)
    assert lengths == encoder_bucketing.document_lengths(config)  # deterministic
    assert len(lengths) == config.batch and max(lengths) == config.max_len and min(lengths) >= config.min_len
    assert 90 <= statistics.median(lengths) <= 150
    assert sum(lengths) < config.batch * config.max_len / 3  # mostly padding in the peer's batch


def test_buckets_cover_every_document_once_sorted_by_length() -> None:
    batch = encoder_bucketing.make_batch(encoder_bucketing.FULL)
    order = encoder_bucketing.bucket_order(batch)
    assert sorted(order) == list(range(len(batch.lengths)))
    assert [batch.lengths[i] for i in order] == sorted(batch.lengths)


def test_parity_holds_and_a_broken_weight_copy_is_caught() -> None:
    torch.manual_seed(0)
    config = encoder_bucketing.QUICK
    ours, peer = encoder_bucketing.build_models(config)
    batch = encoder_bucketing.make_batch(config)
    diffs = encoder_bucketing.check_parity(ours, peer, batch)
    assert set(diffs) >= {"attnkit_packed_output", "attnkit_buckets_grad_input", "peer_nested_output"}
    assert all(diff <= 1e-5 for diff in diffs.values())
    assert ours.training and peer.training  # handed back in train mode
    with torch.no_grad():
        peer.layers[1].linear2.weight[0].add_(0.01)  # (a bias shift would vanish in the LayerNorm after it)
    with pytest.raises(AssertionError, match="not timing different computations"):
        encoder_bucketing.check_parity(ours, peer, batch)


def test_encoder_bucketing_quick_writes_rows_throughput_and_timings(tmp_path: Path, capsys) -> None:
    rows = encoder_bucketing.main(["--quick", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    assert "ratio" in printed and "tok/s" in printed
    document = json.loads((tmp_path / "encoder_bucketing.json").read_text())
    assert document["quick"] is True and document["machine"]["threads"] == common.THREADS
    assert len(rows) == len(document["rows"]) == 5
    targets = [row["target"] for row in document["rows"]]
    assert targets == [1 / 6, None, None, 1 / 4, None]
    for row in document["rows"]:
        assert row["ratio"] > 0 and math.isclose(row["ratio"], row["attnkit"] / row["peer"])
    assert document["real_tokens"] == sum(document["lengths"]) < document["padded_tokens"]
    details = document["details"]
    assert set(details["training"]["samples_s"]) == {"peer", "attnkit_packed", "attnkit_buckets", "attnkit_padded"}
    assert set(details["inference"]["samples_s"]) == {"peer", "attnkit_packed", "attnkit_buckets"}
    for phase in ("training", "inference"):
        assert common.all_finite_positive([v for s in details[phase]["samples_s"].values() for v in s])
        speedups = document["throughput"][f"{phase}_speedup"]
        assert speedups["peer"] == 1.0 and common.all_finite_positive(list(speedups.values()))
