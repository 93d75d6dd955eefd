"""Pair files read as a stream: sources held out with all their targets, tokenisers equal to the in-memory ones,
a cached scan, bad rows as one file:line error or skipped, and ``attnkit train seq2seq --streaming always``."""

from __future__ import annotations

import json
import random

import pytest

from attnkit.cli import main
from attnkit.data.reading import DataError
from attnkit.data.seq2seq.pair_stream import PairFileStream
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
