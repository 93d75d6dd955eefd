"""Pair files read as a stream: sources held out with all their targets, tokenisers equal to the in-memory ones,
a cached scan, bad rows as one file:line error or skipped, and ``attnkit train seq2seq --streaming always``."""

from __future__ import annotations

import json
import random

import pytest

from attnkit.cli import main
from attnkit.data.reading import DataError
from attnkit.data.seq2seq.pair_stream import PairFileStream, training_pairs_bound
from attnkit.data.seq2seq.tokenization import build_tokenizer


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNKIT_CACHE", str(tmp_path / "cache"))


def write_pairs(path, count: int = 300, *, repeats: int = 2):
    generator = random.Random(0)
    lines = ["source\ttarget"]
    for _ in range(count):
        word = "".join(generator.choice("abcdef") for _ in range(generator.randint(2, 7)))
        lines += [f"{word}\t{word[::-1]}{'x' * k}" for k in range(repeats)]  # one source, several targets
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_held_out_source_takes_every_target_with_it(tmp_path):
    stream = PairFileStream(write_pairs(tmp_path / "p.tsv"), valid_fraction=0.2, progress=False)
    scan, source, target = stream.scan()
    held = {s for s, _ in scan.valid}
    training = list(stream.training_pairs())
    assert held and not held & {s for s, _ in training}
    assert scan.train_pairs == len(training) and scan.train_pairs + scan.valid_pairs == 600
    in_file = [line.split("\t")[0] for line in (tmp_path / "p.tsv").read_text().splitlines()[1:]]
    assert all(sum(1 for s, _ in scan.valid if s == h) == in_file.count(h) for h in held)
    # the vocabularies are those the in-memory path builds from the same training pairs
    assert source == build_tokenizer([s for s, _ in training], "char")
    assert target == build_tokenizer([t for _, t in training], "char")
    again = stream.scan()
    assert again[0].cached and again[1] == source and again[2] == target


def test_subword_sides_share_one_tokeniser_trained_on_the_stream(tmp_path):
    stream = PairFileStream(write_pairs(tmp_path / "p.tsv"), source_level="subword", target_level="subword",
                            valid_fraction=0.2, progress=False)  # fmt: skip
    _, source, target = stream.scan(vocab_size=60)
    assert source is target and source.vocab_size <= 60


def test_a_bad_row_stops_the_scan_at_its_line_or_is_skipped(tmp_path):
    path = write_pairs(tmp_path / "p.tsv", 50, repeats=1)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("only-one-field\n")
    with pytest.raises(DataError, match=r"p\.tsv:52: expected 2 tab-separated fields as in the header"):
        PairFileStream(path, valid_fraction=0.2, progress=False).scan()
    scan, _, _ = PairFileStream(path, valid_fraction=0.2, skip_bad_rows=True, progress=False).scan()
    assert scan.bad_rows == 1 and scan.train_pairs + scan.valid_pairs == 50


def test_train_seq2seq_streamed_from_the_command_line(tmp_path):
    data = write_pairs(tmp_path / "p.tsv", 150, repeats=1)
    out = tmp_path / "run"
    argv = ["train", "seq2seq", "--data", str(data), "--streaming", "always", "--model", "rnn", "--epochs", "1",
            "--batch-size", "16", "--threads", "1", "--no-progress", "--out", str(out), "--limit", "120"]  # fmt: skip
    assert main(argv) == 0
    details = json.loads((out / "metrics.json").read_text())["details"]
    assert details["streamed"] and details["sizes"]["train"] + details["held_out_pairs"] == 120
    assert details["steps_per_epoch"] == -(-details["sizes"]["train"] // 16)
    assert (out / "best" / "model.safetensors").exists()


def test_a_second_epoch_reads_the_pairs_as_ids_and_counts_the_cuts_again(tmp_path):
    data = write_pairs(tmp_path / "p.tsv", 150, repeats=1)
    argv = ["train", "seq2seq", "--data", str(data), "--streaming", "always", "--model", "rnn", "--batch-size", "16",
            "--threads", "1", "--no-progress", "--max-source-length", "5", "--no-test"]  # fmt: skip
    assert main([*argv, "--epochs", "1", "--out", str(tmp_path / "one")]) == 0
    assert main([*argv, "--epochs", "2", "--out", str(tmp_path / "two"), "--overwrite"]) == 0
    one = json.loads((tmp_path / "one" / "metrics.json").read_text())["details"]
    two = json.loads((tmp_path / "two" / "metrics.json").read_text())["details"]
    assert one["epochs_read_as_ids"] == 0 and two["epochs_read_as_ids"] == 2  # the first run kept the ids
    assert one["truncated_pairs"] > 0 and two["truncated_pairs"] == 2 * one["truncated_pairs"]


def test_the_bound_on_unread_training_pairs_by_hand():
    assert training_pairs_bound(0, 0.05) == 0
    assert training_pairs_bound(100, 0.05) == 100  # 95 + 6·√4.75 = 108.1, and never more than the lines
    assert training_pairs_bound(1_000_000, 0.05) == 951_308  # 950,000 + 6·√47,500 = 951,307.7
    assert training_pairs_bound(1_000_000, 0.05, multiplicity=4) == 952_616  # twice the spread: 6·√190,000


def test_a_sampled_pair_scan_reads_the_prefix_and_bounds_the_rest(tmp_path):
    data = write_pairs(tmp_path / "p.tsv", 15_000)  # 30,000 pairs, two targets a source
    sampled = PairFileStream(data, source_level="char", target_level="char", progress=False, sample_bytes=1)
    scan, _, _ = sampled.scan()
    whole, _, _ = PairFileStream(data, progress=False, sample_bytes=None).scan()
    assert 0 < scan.sampled_bytes < data.stat().st_size and whole.sampled_bytes == 0
    assert 0 < len(scan.valid) < len(whole.valid) and scan.valid == whole.valid[: len(scan.valid)]
    actual = sum(1 for _ in sampled.training_pairs())
    assert actual == whole.train_pairs  # the carve is the same pair by pair: the epochs read it
    assert actual <= scan.train_pairs <= actual + 0.05 * 30_000  # short sources repeat often: a wide bound
    first = PairFileStream(data, progress=False, sample_bytes=1, limit=20_000)
    limited, _, _ = first.scan()
    assert sum(1 for _ in first.training_pairs()) <= limited.train_pairs < scan.train_pairs
