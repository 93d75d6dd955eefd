"""The id cache trusts nothing it reads: an entry damaged in place (its sizes kept), one whose values are out of
range though its checksums were made to match, and one made from a text since edited with its size and modification
time kept (``cp -p``, ``rsync -t``) are never used, but made again from the text and replaced; so is the scan a
stream caches beside them."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from attnkit.data.id_cache import LABELLED_IDS, EncodedStride, IdCache, file_content_key


def text_rows(count: int) -> list[str]:
    return [" ".join("w" * (1 + (i * 7) % 5) for _ in range(1 + (i * 3) % 6)) + f" {i % 3}" for i in range(count)]


def encode(rows: list[str]) -> list[tuple[list[int], int]]:
    """Word lengths as ids (below 6), the row's last word as the label (below 3)."""
    return [([len(word) for word in row.split()[:-1]], int(row.split()[-1])) for row in rows]


def stride(directory, rows, content=lambda: "text-1", reads=None) -> EncodedStride:
    def read():
        if reads is not None:
            reads.append(1)
        return iter(rows)

    return EncodedStride(read, encode, LABELLED_IDS, directory, limit=len(rows), content=content, limits=(6, 3))


def test_an_entry_damaged_in_place_is_never_used_and_is_replaced(tmp_path):
    rows, reads = text_rows(12), []
    first = stride(tmp_path / "e", rows, reads=reads)
    assert list(first()) == encode(rows) and first.cached()
    scalars = tmp_path / "e" / "scalars.i64"
    data = bytearray(scalars.read_bytes())
    data[8] ^= 1  # the second row's label flipped 0 <-> 1: the same size, in range
    scalars.write_bytes(bytes(data))
    again = stride(tmp_path / "e", rows, reads=reads)
    assert not again.cached()
    assert list(again()) == encode(rows) and len(reads) == 2  # read from the text, not from the damaged entry
    assert again.cached() and list(IdCache(tmp_path / "e", LABELLED_IDS).read()) == encode(rows)  # replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e"]  # the damaged one deleted, no temporary left


def rewrite_checksums(directory) -> None:
    """What a hostile writer does: values changed and the checksums made to match them."""
    meta = json.loads((directory / "meta.json").read_text())
    for name in meta["sha256"]:
        meta["sha256"][name] = hashlib.sha256((directory / name).read_bytes()).hexdigest()
    (directory / "meta.json").write_text(json.dumps(meta))


@pytest.mark.parametrize(
    ("name", "offset", "value"), [("scalars.i64", 8, 7), ("tokens.i32", 4, 99), ("tokens.i32", 0, -1)]
)
def test_values_out_of_range_are_never_used_though_the_checksums_match(tmp_path, name, offset, value):
    rows = text_rows(12)
    list(stride(tmp_path / "e", rows)())
    path = tmp_path / "e" / name
    data = bytearray(path.read_bytes())
    width = 8 if name.endswith("i64") else 4
    data[offset : offset + width] = value.to_bytes(width, "little", signed=True)
    path.write_bytes(bytes(data))
    rewrite_checksums(tmp_path / "e")
    checked = IdCache(tmp_path / "e", LABELLED_IDS, limits=(6, 3))
    assert checked.meta() is not None and checked.verified() is None
    with pytest.raises(ValueError, match="outside"):
        list(checked.read())
    again = stride(tmp_path / "e", rows)
    assert not again.cached() and list(again()) == encode(rows) and again.cached()


def test_an_entry_made_from_other_content_is_stale_and_made_again(tmp_path):
    rows, reads = text_rows(9), []
    list(stride(tmp_path / "e", rows, reads=reads)())
    edited = [row.replace(" 1", " 2") for row in rows]
    later = stride(tmp_path / "e", edited, content=lambda: "text-2", reads=reads)
    assert not later.cached()
    assert list(later()) == encode(edited) and len(reads) == 2
    assert later.cached() and list(later()) == encode(edited) and len(reads) == 2


def test_the_content_key_sees_an_edit_that_keeps_size_and_modification_time(tmp_path):
    text = tmp_path / "train.csv"
    text.write_text("text,label\ngood film,pos\nbad film,neg\n")
    before = file_content_key(text)
    stat = text.stat()
    text.write_text("text,label\ngood film,neg\nbad film,pos\n")  # labels swapped: the same size
    os.utime(text, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # as cp -p / rsync -t leave it
    assert text.stat().st_size == stat.st_size and text.stat().st_mtime_ns == stat.st_mtime_ns
    assert file_content_key(text) != before
    assert file_content_key(text) == file_content_key(text)


def test_a_scan_cached_for_a_file_since_edited_in_place_is_made_again(tmp_path, monkeypatch):
    from attnkit.data import records
    from attnkit.data.classify.text_stream import TextFileStream
    from attnkit.data.seq2seq.pair_stream import PairFileStream

    monkeypatch.setenv("ATTNKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(records, "_BLOCK", 64)  # the fingerprint hashes 64 bytes at each end: a large file's
    options = {"kind": "word", "vocab_size": 100, "min_frequency": 1}
    texts = tmp_path / "train.csv"
    texts.write_text("text,label\n" + "".join(f"good film {i},pos\nbad film {i},neg\n" for i in range(20)))
    first, _ = TextFileStream(texts, progress=False).scan(options)
    stat = texts.stat()
    edited = texts.read_text().splitlines(keepends=True)
    edited[10:30] = [line.replace(",neg", ",bad") for line in edited[10:30]]  # in the middle: the same size
    texts.write_text("".join(edited))
    os.utime(texts, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # as cp -p / rsync -t leave it
    again, _ = TextFileStream(texts, progress=False).scan(options)
    assert first.label_names == ["neg", "pos"] and again.label_names == ["bad", "neg", "pos"] and not again.cached
    assert TextFileStream(texts, progress=False).scan(options)[0].cached  # unchanged since: read from the cache

    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"w{i}\tW{i}\n" for i in range(40)))
    before = PairFileStream(pairs, progress=False, valid_fraction=0.5).scan(vocab_size=50)[2]
    stat = pairs.stat()
    lines = pairs.read_text().splitlines(keepends=True)
    pairs.write_text("".join(lines[:10] + [line.replace("W", "X") for line in lines[10:30]] + lines[30:]))
    os.utime(pairs, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    scan, _, after = PairFileStream(pairs, progress=False, valid_fraction=0.5).scan(vocab_size=50)
    assert not scan.cached and before.encode("X11") != after.encode("X11")
