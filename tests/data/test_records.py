"""The streaming record reader and the file scan: file:line errors deep in a file without loading it, Parquet,
bad rows skipped and counted, and a cached scan that starts the next run at once."""

from __future__ import annotations

import json

import pytest

from attnkit.data.classify.files import BadRows, iter_rows, read_rows
from attnkit.data.classify.text_stream import TextFileStream
from attnkit.data.reading import DataError
from attnkit.data.records import fingerprint, iter_records
from attnkit.data.seq2seq.files import iter_pairs, read_pairs


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_bad_row_deep_in_a_file_is_reported_before_the_rest_is_read(tmp_path):
    path = tmp_path / "big.jsonl"
    rows = [{"text": f"row {i}", "label": "ab"[i % 2]} for i in range(5000)]
    rows[3999] = {"text": "", "label": "a"}
    write_jsonl(path, rows)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("not json at all\n" * 10)
    reader = iter_rows(path)
    seen = 0
    with pytest.raises(DataError, match=r"big\.jsonl:4000: empty text in column 'text'"):
        for _ in reader:
            seen += 1
    assert seen == 3999  # the rows before it came through one at a time


def test_bytes_that_are_not_utf8_name_their_line_and_column_when_reached(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_bytes(b"\xef\xbb\xbfsource\ttarget\nab\tcd\nx\xffy\tz\n")
    lines = []
    with pytest.raises(DataError, match=r"t\.tsv:3: byte 0xff at column 2 is not valid UTF-8"):
        for line, _ in iter_records(path, "tsv"):
            lines.append(line)
    assert lines == [1, 2]
    first = tmp_path / "bom.csv"
    first.write_bytes(b"\xef\xbb\xbfte\xfe,label\n")
    with pytest.raises(DataError, match=r"bom\.csv:1: byte 0xfe at column 6"):  # columns count the BOM's bytes
        list(iter_records(first, "csv"))


def test_csv_records_spanning_lines_start_where_they_start_and_lines_end_at_newline_only(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('text,label\n"two\nlines",a\nsep\u2028arated,b\n\n"x",c\n', encoding="utf-8")
    assert list(iter_records(path, "csv")) == [
        (1, ["text", "label"]),
        (2, ["two\nlines", "a"]),
        (4, ["sep\u2028arated", "b"]),
        (6, ["x", "c"]),
    ]


def test_parquet_files_read_as_named_columns_for_both_tasks(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({"text": ["good film", "bad film", "fine"], "label": ["pos", "neg", "pos"], "id": [1, 2, 3]})
    pq.write_table(table, tmp_path / "t.parquet")
    rows = read_rows(tmp_path / "t.parquet")
    assert (rows.texts, rows.labels, rows.lines) == (
        ["good film", "bad film", "fine"],
        ["pos", "neg", "pos"],
        [2, 3, 4],
    )
    with pytest.raises(DataError, match=r"t\.parquet:1: no column 'body' in the header"):
        read_rows(tmp_path / "t.parquet", text_column="body")
    pairs = pa.table({"source": ["a", "b"], "target": ["x", None]})
    pq.write_table(pairs, tmp_path / "p.parquet")
    assert list(iter_pairs(tmp_path / "p.parquet")) == [(2, ("a", "x")), (3, "'target' must be a string, found null")]
    with pytest.raises(DataError, match=r"p\.parquet:3: 'target' must be a string"):
        read_pairs(tmp_path / "p.parquet")


def test_skip_bad_rows_counts_them_and_keeps_the_first_messages(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("text,label\ngood,a\n,b\nfine,b\nthree,fields,here\nok,a\n", encoding="utf-8")
    bad = BadRows(keep=1)
    rows = list(iter_rows(path, bad_rows=bad))
    assert [line for line, _, _ in rows] == [2, 4, 6]
    assert bad.count == 2
    assert bad.examples == [f"{path}:3: empty text in column 'text'"]
    assert bad.summary().startswith("skipped 2 bad rows (first: ")
    broken_header = tmp_path / "h.csv"
    broken_header.write_text("body,label\nx,a\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"h\.csv:1: no column 'text'"):  # a file-level problem still stops
        list(iter_rows(broken_header, bad_rows=BadRows()))


def test_the_fingerprint_changes_with_the_content_and_the_options(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("text,label\na,b\n", encoding="utf-8")
    before = fingerprint(path)
    assert before.key(1) == fingerprint(path).key(1) != before.key(2)
    path.write_text("text,label\na,c\n", encoding="utf-8")
    assert fingerprint(path) != before


def scan_file(tmp_path, rows: int = 400):
    path = tmp_path / "train.jsonl"
    write_jsonl(path, [{"text": f"{'good' if i % 3 else 'bad'} text {i % 17}", "label": "pn"[i % 3 == 0]}
                       for i in range(rows)])  # fmt: skip
    return path


def test_the_scan_counts_labels_holds_out_by_hash_and_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNKIT_CACHE", str(tmp_path / "cache"))
    path = scan_file(tmp_path)
    options = {"kind": "word", "vocab_size": 100, "min_frequency": 1}
    stream = TextFileStream(path, valid_fraction=0.25, progress=False)
    scan, tokenizer = stream.scan(options)
    assert not scan.cached
    assert scan.train_rows + scan.valid_rows == 400 and 70 < scan.valid_rows < 130
    assert scan.label_counts == {"p": sum(1 for i in range(400) if i % 3 and not held(i)),
                                 "n": sum(1 for i in range(400) if i % 3 == 0 and not held(i))}  # fmt: skip
    assert len(scan.valid_texts) == scan.valid_rows
    assert list(stream.training_rows()) == [
        (f"{'good' if i % 3 else 'bad'} text {i % 17}", "pn"[i % 3 == 0]) for i in range(400) if not held(i)
    ]
    again, cached_tokenizer = stream.scan(options)
    assert again.cached and again.train_rows == scan.train_rows and again.valid_texts == scan.valid_texts
    assert cached_tokenizer.to_str() == tokenizer.to_str()
    assert not TextFileStream(path, valid_fraction=0.25, limit=100, progress=False).scan(options)[0].cached


def held(index: int) -> bool:
    from attnkit.data.streaming import held_out

    return held_out(index, 0.25)


def test_the_scan_refuses_a_single_label_and_stops_at_a_bad_row(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNKIT_CACHE", str(tmp_path / "cache"))
    one = write_jsonl(tmp_path / "one.jsonl", [{"text": f"t{i}", "label": "a"} for i in range(50)])
    with pytest.raises(DataError, match=r"one\.jsonl: every row has the label 'a'"):
        TextFileStream(one, progress=False).scan({"kind": "word"})
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"text": f"t{i}", "label": "ab"[i % 2]} for i in range(50)])
    with bad.open("a") as handle:
        handle.write('{"text": 3, "label": "a"}\n')
    with pytest.raises(DataError, match=r"bad\.jsonl:51: text in 'text' must be a string, found 3"):
        TextFileStream(bad, progress=False).scan({"kind": "word"})
    scan, _ = TextFileStream(bad, skip_bad_rows=True, progress=False).scan({"kind": "word"})
    assert scan.bad_rows == 1 and scan.train_rows + scan.valid_rows == 50
