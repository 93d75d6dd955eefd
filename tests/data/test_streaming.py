"""Streamed batches: every row once per epoch, bounded shuffle, length buckets, equal strides per rank, and the
prefetching iterator equal to its in-thread reference."""

from __future__ import annotations

import pytest

from attnkit.data.streaming import StreamedBatches, StreamOptions, held_out


def stream(count: int, *, batch_size: int = 4, world: int = 1, rank: int = 0, **options) -> StreamedBatches:
    """Rows 0..count-1 whose 'length' is ``row % 7``; a batch is the list of its rows."""
    return StreamedBatches(
        lambda: iter(range(count)),
        count,
        encode=lambda rows: list(rows),
        length=lambda row: row % 7,
        collate=list,
        options=StreamOptions(batch_size=batch_size, **{"pool_rows": 8, "window_batches": 3, **options}),
        world=world,
        rank=rank,
    )


def rows_of(batches) -> list[int]:
    return [row for batch in batches for row in batch]


@pytest.mark.parametrize("count", [1, 5, 12, 13, 50])
def test_one_epoch_reads_every_row_once_in_the_announced_number_of_batches(count):
    batches = stream(count)
    epoch = list(batches(1))
    assert len(epoch) == len(batches) == -(-count // 4)
    assert sorted(rows_of(epoch)) == list(range(count))
    assert sum(len(batch) < 4 for batch in epoch) <= 1  # only the last window has a short batch


def test_order_depends_only_on_seed_and_epoch_and_prefetching_changes_nothing():
    first, again = stream(50, prefetch=4)(2), stream(50, prefetch=0)(2)
    assert list(first) == list(again)  # the background thread gives the reference's batches
    assert list(first) == list(first)  # an epoch can be read twice
    assert rows_of(stream(50)(3)) != rows_of(first)
    assert rows_of(stream(50, seed=1)(2)) != rows_of(first)


def test_the_shuffle_moves_rows_but_only_as_far_as_the_pool_allows():
    order = rows_of(stream(200, bucketed=False)(1))
    assert order != list(range(200))
    # a row cannot come out before it was read: at position p, at most pool + window rows have been read
    assert all(row <= position + 8 + 12 for position, row in enumerate(order))


def test_bucketing_sorts_each_window_into_batches_of_similar_length():
    spread = [max(r % 7 for r in batch) - min(r % 7 for r in batch) for batch in stream(120)(1)]
    unsorted = [max(r % 7 for r in batch) - min(r % 7 for r in batch) for batch in stream(120, bucketed=False)(1)]
    assert sum(spread) < sum(unsorted) / 2


@pytest.mark.parametrize(("count", "world"), [(7, 2), (10, 3), (9, 3), (2, 2)])
def test_ranks_read_disjoint_strides_and_run_the_same_number_of_steps(count, world):
    epochs = [list(stream(count, batch_size=2, world=world, rank=rank)(1)) for rank in range(world)]
    assert len({len(epoch) for epoch in epochs}) == 1  # no rank waits for another
    per_rank = -(-count // world)
    seen = []
    for rank, epoch in enumerate(epochs):
        rows = rows_of(epoch)
        assert len(rows) == per_rank
        own = list(range(rank, count, world))
        assert set(rows) == set(own)  # its stride, the first row repeated to fill a short stride
        seen.extend(set(rows))
    assert sorted(seen) == list(range(count))


def test_a_failing_reader_raises_in_the_consumer():
    def rows():
        yield from range(5)
        raise ValueError("big.csv:7: empty text in column 'text'")

    batches = StreamedBatches(
        rows, 10, encode=list, length=lambda r: 0, collate=list, options=StreamOptions(2, pool_rows=2, prefetch=2)
    )
    with pytest.raises(ValueError, match=r"big\.csv:7: empty text"):
        list(batches(1))


def test_stopping_early_stops_the_prefetch_thread():
    import threading

    iterator = iter(stream(10_000, batch_size=1, prefetch=4)(1))
    next(iterator)
    assert any(t.name == "attnkit-stream" and t.is_alive() for t in threading.enumerate())
    iterator.close()
    assert not any(t.name == "attnkit-stream" and t.is_alive() for t in threading.enumerate())


def test_held_out_rows_are_deterministic_and_about_the_fraction():
    chosen = [i for i in range(20_000) if held_out(i, 0.1)]
    assert chosen == [i for i in range(20_000) if held_out(i, 0.1)]
    assert 1800 < len(chosen) < 2200
    assert not any(held_out(i, 0.0) for i in range(1000))
    assert set(chosen) <= {i for i in range(20_000) if held_out(i, 0.2)}  # a larger fraction holds more


def test_a_short_stride_reads_its_first_rows_again_for_the_steps_left_over():
    batches = StreamedBatches(lambda: iter(range(10)), 13, encode=list, length=lambda row: 0, collate=list,
                              options=StreamOptions(batch_size=4, prefetch=0, pool_rows=1))  # fmt: skip
    assert list(batches.stride()) == [*range(10), 0, 1, 2]
    two = StreamedBatches(lambda: iter(range(3)), 9, encode=list, length=lambda row: 0, collate=list,
                          options=StreamOptions(batch_size=2, prefetch=0), world=2, rank=1)  # fmt: skip
    assert list(two.stride()) == [1, 1, 1, 1, 1]  # its one row, read five times
    options = StreamOptions(batch_size=2, prefetch=0)
    strided = StreamedBatches(lambda: iter([7, 8]), 10, encode=list, length=lambda row: 0, collate=list,
                              options=options, world=2, rank=0, strided=True)  # fmt: skip
    assert list(strided.stride()) == [7, 8, 7, 8, 7]


def test_the_prefetch_thread_is_started_only_where_more_than_one_core_may_run(monkeypatch):
    import os

    from attnkit.data.streaming import default_prefetch

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert default_prefetch() == 0 and StreamOptions(batch_size=1).prefetch == 0
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert default_prefetch() == 8 and StreamOptions(batch_size=1).prefetch == 8
