"""The id cache of a stream: items stored and read back equal, batches read as ids equal to the text path's
(every rank, every epoch, strides that do not divide evenly), nothing kept from an epoch stopped early or failed,
a damaged entry read as text again (tests/data/test_id_cache_checks.py: checksums, ranges, stale content)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnkit.data.id_cache import LABELLED_DOCUMENTS, LABELLED_IDS, PAIR_IDS, EncodedStride, IdCache
from attnkit.data.streaming import StreamedBatches, StreamOptions

ids = st.lists(st.integers(0, 2**31 - 1), max_size=12)


def stored(tmp_path, codec, items):
    """``items`` written through an :class:`EncodedStride` with identity encoding, then read back."""
    directory = tmp_path / "entry"
    stride = EncodedStride(lambda: iter(items), list, codec, directory, limit=len(items), chunk_rows=3)
    assert list(stride()) == items  # the text path hands the items out as it writes them
    assert stride.cached()
    return list(IdCache(directory, codec).read(chunk_rows=2))


@settings(max_examples=25, deadline=None)
@given(items=st.lists(st.tuples(ids, st.integers(0, 9)), min_size=1, max_size=9))
def test_labelled_ids_come_back_equal(tmp_path_factory, items):
    assert stored(tmp_path_factory.mktemp("c"), LABELLED_IDS, items) == items


@settings(max_examples=25, deadline=None)
@given(items=st.lists(st.tuples(st.lists(ids, max_size=4), st.integers(0, 9)), min_size=1, max_size=9))
def test_documents_of_sentences_come_back_equal_even_empty_ones(tmp_path_factory, items):
    assert stored(tmp_path_factory.mktemp("c"), LABELLED_DOCUMENTS, items) == items


def test_pairs_come_back_equal_by_hand(tmp_path):
    items = [([5, 6, 7], [8], 0), ([], [1, 2], 1), ([3], [], 0)]
    assert stored(tmp_path, PAIR_IDS, items) == items
    meta = IdCache(tmp_path / "entry", PAIR_IDS).meta()
    assert {k: meta[k] for k in ("version", "rows", "sequences", "scalars", "tokens")} == {
        "version": 2, "rows": 3, "sequences": 2, "scalars": 1, "tokens": 7}  # fmt: skip
    assert set(meta["sha256"]) == {"tokens.i32", "lengths.i32", "scalars.i64"}


def text_rows(count: int) -> list[str]:
    return [" ".join("w" * (1 + (i * 7) % 5) for _ in range(1 + (i * 3) % 6)) + f" {i}" for i in range(count)]


def encode(rows: list[str]) -> list[tuple[list[int], int]]:
    """A row-wise 'tokeniser': word lengths as ids, the row number as the label."""
    return [([len(word) for word in row.split()[:-1]], int(row.split()[-1])) for row in rows]


def batches(stream: StreamedBatches, epoch: int) -> list:
    return list(stream(epoch))


@pytest.mark.parametrize(("count", "world"), [(1, 1), (37, 1), (64, 1), (37, 2), (38, 3)])
def test_batches_read_as_ids_equal_the_text_paths_on_every_rank_and_epoch(tmp_path, count, world):
    rows = text_rows(count)
    options = StreamOptions(batch_size=4, pool_rows=8, window_batches=3, prefetch=2, seed=5)
    for rank in range(world):
        reference = StreamedBatches(lambda: iter(rows), count, encode=encode, length=lambda item: len(item[0]),
                                    collate=list, options=options, world=world, rank=rank)  # fmt: skip
        ids = EncodedStride(lambda: iter(rows), encode, LABELLED_IDS, tmp_path / f"r{rank}", world=world, rank=rank,
                            limit=reference.rows_per_rank, chunk_rows=5)  # fmt: skip
        streamed = StreamedBatches(ids, count, encode=list, length=lambda item: len(item[0]), collate=list,
                                   options=options, world=world, rank=rank, strided=True)  # fmt: skip
        assert len(streamed) == len(reference)
        for epoch in range(3):  # epoch 0 reads the text and writes the ids; 1 and 2 read the ids
            assert batches(streamed, epoch) == batches(reference, epoch)
        assert ids.epochs_from_cache == 2


def test_an_epoch_stopped_early_or_failing_keeps_no_entry_and_no_temporary_files(tmp_path):
    rows = text_rows(30)
    stride = EncodedStride(lambda: iter(rows), encode, LABELLED_IDS, tmp_path / "e", limit=30, chunk_rows=4)
    iterator = stride()
    next(iterator)
    iterator.close()  # the time budget ran out mid-epoch
    assert not stride.cached() and list(tmp_path.iterdir()) == []

    def failing(batch: list[str]) -> list:
        if any(row.endswith(" 17") for row in batch):
            raise ValueError("file.csv:19: a label first seen after the sample")
        return encode(batch)

    broken = EncodedStride(lambda: iter(rows), failing, LABELLED_IDS, tmp_path / "e", limit=30, chunk_rows=4)
    with pytest.raises(ValueError, match=":19:"):
        list(broken())
    assert not broken.cached() and list(tmp_path.iterdir()) == []
    assert list(stride()) == encode(rows) and stride.cached()  # a whole epoch commits it


def test_the_entry_is_committed_when_the_stride_is_full_though_the_reader_stops_there(tmp_path):
    rows = text_rows(10)  # rank 0 of 2 takes 5 rows; its last (row 8) is followed by rank 1's row 9
    stride = EncodedStride(lambda: iter(rows), encode, LABELLED_IDS, tmp_path / "e", world=2, rank=0, limit=5)
    iterator = stride()
    assert [next(iterator) for _ in range(5)] == encode(rows[0::2])
    assert stride.cached()


def test_a_damaged_entry_is_read_as_text_again(tmp_path):
    rows = text_rows(12)
    stride = EncodedStride(lambda: iter(rows), encode, LABELLED_IDS, tmp_path / "e", limit=12)
    list(stride())
    tokens = tmp_path / "e" / "tokens.i32"
    tokens.write_bytes(tokens.read_bytes()[:-4])  # one id short
    assert not stride.cached()
    assert list(stride()) == encode(rows) and stride.epochs_from_cache == 0


def test_without_a_directory_every_epoch_reads_the_text(tmp_path):
    reads = []
    stride = EncodedStride(lambda: reads.append(1) or iter(text_rows(6)), encode, LABELLED_IDS, None, limit=6)
    assert list(stride()) == list(stride()) == encode(text_rows(6))
    assert len(reads) == 2 and not stride.cached()


def test_the_next_writer_removes_what_a_killed_writer_left_and_leaves_a_live_ones(tmp_path):
    # kill -9 runs no clean-up: the folder of a writer that died mid-epoch stays until the next writer comes.
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(finished.stdout)  # that process has exited
    killed = tmp_path / f".ids-0123.{dead_pid}.deadbeef.tmp"
    live = tmp_path / f".ids-4567.{os.getppid()}.cafef00d.tmp"  # the process that started this one is running
    for folder in (killed, live):
        folder.mkdir()
        (folder / "tokens.i32").write_bytes(b"\0" * 1024)
    rows = text_rows(10)
    stride = EncodedStride(lambda: iter(rows), encode, LABELLED_IDS, tmp_path / "ids-89ab", limit=10)
    assert len(list(stride())) == 10 and stride.cached()
    assert not killed.exists() and live.exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == [live.name, "ids-89ab"]
