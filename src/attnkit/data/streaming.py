"""Batches from a stream of rows: a bounded shuffle pool, length buckets, rank strides, a prefetch thread (layer 5).

For training files larger than memory. Each epoch re-reads the rows (``rows()`` opens the file again) and holds
at most a fixed number of them: the shuffle pool (``pool_rows``) plus one bucketing window
(``window_batches × batch_size`` rows, encoded) plus the prefetched batches. The pipeline, for one rank::

    rows() ─ keep every world-th row (rank's stride) ─ shuffle pool ─ windows of W rows ─ encode ─
        sort by length, cut into batches (bucketed) ─ shuffle the window's batches ─ collate ─ prefetch queue

Every rank reads a disjoint stride of the rows and yields exactly ``ceil(ceil(count / world) / batch_size)``
batches per epoch, so no rank waits for another at a collective (a rank whose stride is short, by one row of an
uneven split or by the rows a sampled scan's count overestimated, reads its first rows again for the rest).
The order depends only on ``(seed, epoch, rank)``: a run resumed at an epoch boundary reads the
same batches as an uninterrupted one, and one resumed in the middle of an epoch (``from_batch``) reads the rows
again, skips the batches it had done without collating them, and goes on with the same batches. The shuffle is
the bounded one OpenNMT-py and WebDataset use: rows move at most about ``pool_rows`` places from their place in the
file, so a file sorted by label should be shuffled once on disk first.

:func:`held_out` carves validation rows by a hash of the row's index, the same on every run and rank. What the
first pass over a streamed file needs is here too: :data:`SAMPLE_BYTES`, :func:`count_lines`, :class:`ReadProgress`.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
import os
import queue
import random
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from attnkit.data.id_cache_entry import content_matches, record_content

__all__ = [
    "SAMPLE_BYTES",
    "ReadProgress",
    "StreamOptions",
    "StreamedBatches",
    "count_lines",
    "held_out",
    "held_out_count",
    "read_scan",
    "save_scan",
    "scan_prefix_note",
]

Row = TypeVar("Row")
_DONE = object()
_MASK = 2**64 - 1


@functools.lru_cache(maxsize=64)
def _salt_key(salt: str) -> int:
    return int.from_bytes(hashlib.blake2b(salt.encode(), digest_size=8).digest(), "big")


def _mix(value: int) -> int:
    """SplitMix64's output function of a 64-bit ``value`` (its first output from state 0 is 0xE220A8397B1DCDAF)."""
    z = (value + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def _threshold(fraction: float) -> int:
    return min(int(fraction * 2**64), _MASK)


def held_out(index: int, fraction: float, *, salt: str = "attnkit-valid") -> bool:
    """Whether row ``index`` (0-based, counted over the file's good rows) belongs to the validation split:
    SplitMix64 of the index plus a key hashed from ``salt``, below ``fraction`` of its range."""
    if fraction <= 0:
        return False
    return _mix((index + _salt_key(salt)) & _MASK) < _threshold(fraction)


def held_out_count(start: int, stop: int, fraction: float, *, salt: str = "attnkit-valid", chunk: int = 1 << 20) -> int:
    """How many indices in ``[start, stop)`` :func:`held_out` holds out, computed with numpy a chunk at a time."""
    import numpy as np

    if fraction <= 0 or stop <= start:
        return 0
    key, threshold, held = np.uint64(_salt_key(salt)), np.uint64(_threshold(fraction)), 0
    with np.errstate(over="ignore"):
        for low in range(start, stop, chunk):
            z = np.arange(low, min(low + chunk, stop), dtype=np.uint64) + key + np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            held += int(np.count_nonzero((z ^ (z >> np.uint64(31))) < threshold))
    return held


SAMPLE_BYTES = 64 * 2**20  # the default prefix a sampled scan reads


def scan_prefix_note(sampled_bytes: int) -> str:
    """What a message drawn from a first pass's rows must add when that pass read only a prefix of the file:
    "" after a whole-file scan, else ``"; the scan saw only the first N MB ..."``, naming ``--scan-mb``."""
    if not sampled_bytes:
        return ""
    return (f"; the scan saw only the first {sampled_bytes / 2**20:.0f} MB of the file: give a larger --scan-mb, or "
            "--scan-mb 0 to scan the whole file")  # fmt: skip


def count_lines(path: Path, start_line: int = 0, block: int = 16 * 2**20) -> int:
    """The lines of ``path`` after line ``start_line`` (a last line without a newline counts), by counting
    newline bytes a block at a time."""
    lines, last = 0, b"\n"
    with path.open("rb") as handle:
        while chunk := handle.read(block):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return max(lines + (last != b"\n") - start_line, 0)


def read_scan(
    directory: Path, filename: str, result_type: type, content: str, load: Callable[[Path], tuple]
) -> tuple | None:
    """A first pass's cached ``(result, *tokenisers)``, the result marked ``cached``; None when the entry is missing,
    made from other content (:func:`~attnkit.data.id_cache_entry.content_matches`) or damaged."""
    if not (directory / filename).exists() or not content_matches(directory, content):
        return None
    try:
        result = result_type(**json.loads((directory / filename).read_text(encoding="utf-8")))
        result.cached, result.seconds = True, 0.0
        return (result, *load(directory))
    except (ValueError, TypeError, OSError):  # a damaged entry: scan again
        return None


def save_scan(directory: Path, filename: str, result: Any, content: str, save: Callable[[Path], object]) -> None:
    """Write a first pass's cache entry: the tokenisers (``save``), the content key, then the result (last, so a
    half-written entry is never read). A read-only cache costs the next run a scan, nothing more."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        save(directory)
        record_content(directory, content)
        temporary = directory / (filename + ".tmp")
        temporary.write_text(json.dumps(dataclasses.asdict(result)), encoding="utf-8")
        temporary.replace(directory / filename)
    except OSError:
        pass


class ReadProgress:
    """A progress line on stderr while a file is read: ``reading big.csv: 412,000 rows, 120 MB/s, 35%``."""

    def __init__(self, path: Path, *, enabled: bool, every: float = 0.5) -> None:
        self.path, self.enabled, self.every = path, enabled, every
        self.size = max(path.stat().st_size, 1) if enabled else 1
        self.started = self.shown = time.monotonic()
        self.rows = self.position = 0

    def bytes_read(self, position: int) -> None:
        """The reader's byte position (a :func:`~attnkit.data.records.iter_records` progress callback)."""
        self.position = position
        now = time.monotonic()
        if self.enabled and now - self.shown >= self.every:
            self.shown = now
            print("\r" + self.line(now), end="", file=sys.stderr, flush=True)

    def line(self, now: float | None = None) -> str:
        """The progress line as it stands."""
        seconds = max((now or time.monotonic()) - self.started, 1e-9)
        share = min(self.position / self.size, 1.0)
        return f"reading {self.path.name}: {self.rows:,} rows, {self.position / seconds / 1e6:.0f} MB/s, {share:.0%}"

    def done(self, note: str = "") -> None:
        """End the line with the totals."""
        if self.enabled:
            self.position = self.size
            seconds = time.monotonic() - self.started
            print(f"\r{self.line()} in {seconds:.1f} s{note}", file=sys.stderr, flush=True)


def default_prefetch(depth: int = 8) -> int:
    """``depth`` if this process may run on more than one core, else 0 (see :class:`StreamOptions`)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity on this platform
        cores = os.cpu_count() or 1
    return depth if cores > 1 else 0


@dataclass(frozen=True)
class StreamOptions:
    """How a stream is batched: ``batch_size`` items per batch on each rank; ``bucketed`` sorts each window of
    ``window_batches`` batches by length before cutting it; ``pool_rows`` rows in the shuffle pool; ``seed`` (with
    the epoch and rank) seeds the shuffle. ``prefetch``: batches a background thread keeps ready, by default 8 when
    the process may run on more than one core, else 0 (no thread: on one core it only takes turns with the loop)."""

    batch_size: int
    bucketed: bool = True
    pool_rows: int = 16_384
    window_batches: int = 64
    prefetch: int = field(default_factory=lambda: default_prefetch())
    seed: int = 0


class StreamedBatches(Generic[Row]):
    """``batches(epoch)`` over a stream of ``count`` rows: sized (``len``: batches per epoch on each rank) and
    iterable, as :func:`attnkit.training.loop.fit` wants ``train_batches(epoch)`` to be.

    ``rows()`` opens the stream afresh, in file order; ``encode`` maps a window of rows to one item each, in order.
    With ``strided``, ``rows()`` gives this rank's rows only (rows ``rank, rank + world, ...``, e.g. an
    :class:`~attnkit.data.id_cache.EncodedStride` reading them as ids), not every row.
    """

    def __init__(
        self,
        rows: Callable[[], Iterable[Row]],
        count: int,
        *,
        encode: Callable[[list[Row]], Sequence[Any]],
        length: Callable[[Any], int],
        collate: Callable[[list[Any]], Any],
        options: StreamOptions,
        world: int = 1,
        rank: int = 0,
        strided: bool = False,
    ) -> None:
        if count < 1:
            raise ValueError(f"a stream needs at least one row, got count={count}")
        if world < 1 or not 0 <= rank < world:
            raise ValueError(f"need world >= 1 and 0 <= rank < world, got {world}, {rank}")
        if options.batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {options.batch_size}")
        self.rows, self.count = rows, count
        self.encode, self.length, self.collate = encode, length, collate
        self.options, self.world, self.rank, self.strided = options, world, rank, strided

    @property
    def rows_per_rank(self) -> int:
        """Rows each rank trains on per epoch: ``ceil(count / world)``."""
        return -(-self.count // self.world)

    def __len__(self) -> int:
        return -(-self.rows_per_rank // self.options.batch_size)

    def __call__(self, epoch: int = 0) -> _Epoch:
        """Epoch ``epoch``'s batches (an iterable; each ``iter`` reads the stream again)."""
        return _Epoch(self, epoch)

    def stride(self) -> Iterator[Row]:
        """This rank's rows in file order, exactly :attr:`rows_per_rank` of them: a short stride is followed by
        its first rows again (read anew), as many as the steps need."""
        taken = 0
        while taken < self.rows_per_rank:
            before = taken
            for row in itertools.islice(self._mine(), self.rows_per_rank - taken):
                yield row
                taken += 1
            if taken == before:
                raise ValueError(f"rank {self.rank} got no rows: the stream gave fewer than {self.world} rows")

    def _mine(self) -> Iterator[Row]:
        return iter(self.rows()) if self.strided else itertools.islice(self.rows(), self.rank, None, self.world)

    def batches(self, epoch: int, skip: int = 0) -> Iterator[Any]:
        """Epoch ``epoch``'s collated batches, computed in the calling thread; ``skip`` leaves out the first batches
        without collating them (a run resumed mid-epoch: the rows are read and shuffled as before)."""
        opts = self.options
        generator = random.Random(f"{opts.seed}:{epoch}:{self.rank}")
        window = opts.window_batches * opts.batch_size
        shuffled = _pool_shuffle(self.stride(), opts.pool_rows, generator)
        left = [skip]
        while pending := list(itertools.islice(shuffled, window)):
            yield from self._window(pending, generator, left)

    def _window(self, rows: list[Row], generator: random.Random, left: list[int]) -> Iterator[Any]:
        """A window's batches; ``left[0]`` counts down the batches still to skip."""
        size = self.options.batch_size
        items = list(self.encode(rows))
        order = list(range(len(items)))
        if self.options.bucketed:
            lengths = [self.length(item) for item in items]
            order.sort(key=lengths.__getitem__)
        groups = [order[start : start + size] for start in range(0, len(order), size)]
        generator.shuffle(groups)
        for group in groups:
            if left[0] > 0:
                left[0] -= 1
                continue
            yield self.collate([items[i] for i in group])


class _Epoch:
    """One epoch of a :class:`StreamedBatches`: ``len`` known up front, batches made by a background thread."""

    def __init__(self, stream: StreamedBatches, epoch: int) -> None:
        self.stream, self.epoch = stream, epoch

    def __len__(self) -> int:
        return len(self.stream)

    def __iter__(self) -> Iterator[Any]:
        return self.from_batch(0)

    def from_batch(self, skip: int) -> Iterator[Any]:
        """The epoch's batches after the first ``skip`` (which are not collated): where a resumed run goes on."""
        batches, depth = self.stream.batches(self.epoch, skip), self.stream.options.prefetch
        yield from batches if depth < 1 else _prefetched(batches, depth)


def _pool_shuffle(rows: Iterator[Row], size: int, generator: random.Random) -> Iterator[Row]:
    """A bounded shuffle: fill a pool of ``size`` rows, then emit a random pool slot for each row that comes in
    (the newcomer takes its place); the pool is emitted in random order at the end."""
    pool: list[Row] = []
    for row in rows:
        if len(pool) < size:
            pool.append(row)
            continue
        slot = generator.randrange(size)
        yield pool[slot]
        pool[slot] = row
    generator.shuffle(pool)
    yield from pool


def _prefetched(batches: Iterator[Any], depth: int) -> Iterator[Any]:
    """``batches`` made by a daemon thread, at most ``depth`` ahead; its exceptions re-raised here. Stopping early
    (the loop's time budget) stops the thread."""
    ready: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for batch in batches:
                if not put(batch):
                    return
            put(_DONE)
        except BaseException as error:  # handed to the consumer, who re-raises it
            put(error)

    thread = threading.Thread(target=work, name="attnkit-stream", daemon=True)
    thread.start()
    try:
        while True:
            item = ready.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        thread.join(timeout=5)
