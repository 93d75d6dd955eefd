"""A sampled scan (#25): the first pass reads only a prefix of a large file for its tokeniser and labels, and
counts the rest's rows by their lines; the held-out share of them is counted with numpy, equal to the per-row
hash."""

from __future__ import annotations

import json

import pytest

from attnkit.data.classify.text_stream import TextFileStream
from attnkit.data.streaming import _mix, count_lines, held_out, held_out_count

OPTIONS = {"kind": "word", "vocab_size": 200, "min_frequency": 1}


def test_splitmix_matches_its_published_first_output_and_the_count_matches_the_per_row_hash():
    assert _mix(0) == 0xE220A8397B1DCDAF  # SplitMix64 from state 0
    for start, stop, fraction in [(0, 1000, 0.1), (12_345, 20_000, 0.3), (2**40, 2**40 + 5000, 0.05), (7, 7, 0.5)]:
        expected = sum(held_out(i, fraction) for i in range(start, stop))
        assert held_out_count(start, stop, fraction, chunk=777) == expected
    assert held_out_count(0, 1000, 0.0) == 0


def test_count_lines_counts_a_last_line_without_newline(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_bytes(b"a\nb\nc")
    assert count_lines(path) == 3 and count_lines(path, 1) == 2 and count_lines(path, 5) == 0
    path.write_bytes(b"a\nb\n")
    assert count_lines(path, block=1) == 2


def write_jsonl(path, rows: int, late_label: str | None = None):
    with path.open("w", encoding="utf-8") as handle:
        for i in range(rows):
            label = late_label if late_label and i == rows - 1 else "pn"[i % 3 == 0]
            handle.write(json.dumps({"text": f"{'good' if i % 3 else 'bad'} text w{i % 50}", "label": label}) + "\n")
    return path


def test_a_sampled_scan_learns_from_the_prefix_and_counts_every_row(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNKIT_CACHE", str(tmp_path / "cache"))
    path = write_jsonl(tmp_path / "big.jsonl", 30_000)
    sampled = TextFileStream(path, valid_fraction=0.1, progress=False, sample_bytes=1)
    scan, _ = sampled.scan(OPTIONS)
    whole, _ = TextFileStream(path, valid_fraction=0.1, progress=False, sample_bytes=None).scan(OPTIONS)
    assert 0 < scan.sampled_bytes < path.stat().st_size and whole.sampled_bytes == 0
    assert (scan.train_rows, scan.valid_rows) == (whole.train_rows, whole.valid_rows)  # exact: one good row a line
    assert sum(scan.label_counts.values()) < 9000 < sum(whole.label_counts.values())  # the prefix's counts
    assert scan.train_rows == sum(1 for _ in sampled.training_rows())
    assert sampled.cache_key(OPTIONS) != TextFileStream(path, progress=False, sample_bytes=None).cache_key(OPTIONS)
    limited, _ = TextFileStream(path, valid_fraction=0.1, progress=False, sample_bytes=1, limit=20_000).scan(OPTIONS)
    assert limited.train_rows + limited.valid_rows == 20_000


def test_a_small_file_is_scanned_whole_whatever_the_sample(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNKIT_CACHE", str(tmp_path / "cache"))
    path = write_jsonl(tmp_path / "small.jsonl", 300)
    assert TextFileStream(path, progress=False).scan(OPTIONS)[0].sampled_bytes == 0


@pytest.mark.parametrize("late", ["label", "bad row"])
def test_a_new_label_or_a_bad_row_after_the_sample_stops_training_with_one_line(tmp_path, monkeypatch, capsys, late):
    from attnkit.cli import main

    monkeypatch.setenv("ATTNKIT_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "big.jsonl"
    write_jsonl(path, 40_000, late_label="x" if late == "label" else None)
    if late == "bad row":
        with path.open("a", encoding="utf-8") as handle:
            handle.write('{"text": 3, "label": "p"}\n')
    assert path.stat().st_size > 2**20
    argv = ["train", "classify", "--data", str(path), "--out", str(tmp_path / "run"), "--model", "pooled",
            "--encoder", "none", "--embed-dim", "8", "--batch-size", "256", "--threads", "1", "--no-progress",
            "--streaming", "always", "--scan-mb", "1", "--epochs", "1"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    expected = (
        "label 'x' first occurs after the rows the scan read (its labels: n, p); the scan saw only the first 1 MB "
        "of the file: give a larger --scan-mb"
        if late == "label"
        else "big.jsonl:40001: text"
    )
    assert err.startswith("attnkit: error:") and expected in err and len(err.splitlines()) == 1


def test_a_prefix_of_one_label_is_not_reported_as_the_files_content_and_names_scan_mb(tmp_path, monkeypatch):
    from attnkit.data.reading import DataError

    monkeypatch.setenv("ATTNKIT_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "sorted.jsonl"  # sorted by label: the prefix holds only 'n'
    with path.open("w", encoding="utf-8") as handle:
        for i in range(30_000):
            handle.write(json.dumps({"text": f"some text w{i % 50}", "label": "np"[i >= 25_000]}) + "\n")
    with pytest.raises(DataError) as caught:
        TextFileStream(path, progress=False, sample_bytes=1).scan(OPTIONS)
    message = str(caught.value)
    assert "every row the scan read has the label 'n'" in message and "every row has" not in message
    assert "the scan saw only the first" in message and "give a larger --scan-mb" in message
    whole, _ = TextFileStream(path, progress=False, sample_bytes=None).scan(OPTIONS)
    assert whole.label_names == ["n", "p"]
