"""A stream's training rows tokenised once and kept on disk as ids, read instead of the text at every later
epoch (layer 5).

A streamed file used to be read and tokenised again at every epoch, inside the training loop
(``docs/benchmarks.md``). :class:`EncodedStride` does it once: the first epoch reads this rank's rows from the text, encodes
them a chunk at a time in file order and writes their ids to an entry beside the scan's cache; once the stride has
been read to its end the entry is committed (a directory renamed into place), and every later epoch, and every
later run with the same key (a resumed one, a warm re-run), reads the ids instead. This is fairseq's binarised
shard, made by the first epoch instead of a preprocessing step, so the first optimiser step does not wait for it.

An entry (all integers little-endian)::

    meta.json      {"version": 1, "rows": N, "sequences": K, "scalars": M, "tokens": sum of lengths}
    tokens.i32     every row's K sequences, concatenated in row order           int32 [tokens]
    lengths.i32    each row's K sequence lengths                                int32 [N, K]
    scalars.i64    each row's M integers (a label, a flag)                      int64 [N, M]

An entry is written in a temporary folder beside it (``.ids-HASH.PID.RANDOM.tmp``), renamed into place when whole;
a writer stopped in its middle deletes it, and a killed one's (``kill -9``) is deleted by the next writer in that
folder once its process is gone. The files are read a chunk of rows at a time with plain sequential reads, not mapped: a mapping's pages would
count against the process's resident memory up to the size of the file. A :class:`Codec` turns an encoded item
into its sequences and integers and back (:data:`LABELLED_IDS`, :data:`LABELLED_DOCUMENTS`, :data:`PAIR_IDS`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "LABELLED_DOCUMENTS",
    "LABELLED_IDS",
    "PAIR_IDS",
    "Codec",
    "EncodedStride",
    "IdCache",
    "id_cache_dir",
    "remove_stale_temporaries",
]

VERSION = 1
META = "meta.json"
TOKENS, LENGTHS, SCALARS = "tokens.i32", "lengths.i32", "scalars.i64"

Record = tuple[tuple[list[int], ...], tuple[int, ...]]


@dataclass(frozen=True)
class Codec:
    """How an encoded item is stored: ``sequences`` id lists and ``scalars`` integers per row.

    Attributes:
        name: part of the cache key.
        sequences, scalars: how many of each a row has (``K`` and ``M``).
        to_record: item -> ``(K id lists, M integers)``.
        from_record: ``(K id lists, M integers)`` -> the item, equal to the one stored.
    """

    name: str
    sequences: int
    scalars: int
    to_record: Callable[[Any], Record]
    from_record: Callable[[tuple[list[int], ...], Sequence[int]], Any]


def _documents_to_record(item: tuple[list[list[int]], int]) -> Record:
    sentences, label = item  # [S][W] ids
    return ([token for sentence in sentences for token in sentence], [len(s) for s in sentences]), (label,)


def _documents_from_record(sequences: tuple[list[int], ...], scalars: Sequence[int]) -> tuple[list, int]:
    flat, lengths = sequences
    sentences, start = [], 0
    for length in lengths:
        sentences.append(flat[start : start + length])
        start += length
    return sentences, scalars[0]


# A pooled classifier's ``(ids [T], label)``.
LABELLED_IDS = Codec("labelled-ids", 1, 1, lambda item: ((item[0],), (item[1],)), lambda s, x: (s[0], x[0]))
# A HAN's ``(ids [S][W], label)``: the words of every sentence in one sequence, the sentence lengths in another.
LABELLED_DOCUMENTS = Codec("labelled-documents", 2, 1, _documents_to_record, _documents_from_record)
# A pair's ``(source ids, target ids, cut)``, ``cut`` 1 when either side was cut to its maximum length.
PAIR_IDS = Codec("pair-ids", 2, 1, lambda item: ((item[0], item[1]), (item[2],)), lambda s, x: (s[0], s[1], x[0]))


def id_cache_dir(scan_dir: Path, *parts: object) -> Path:
    """The entry for a scan cached in ``scan_dir`` and encoded as ``parts`` say (tokeniser, encoding options,
    codec, world and rank): ``scan_dir/ids-HASH``."""
    return scan_dir / ("ids-" + hashlib.sha256(repr(parts).encode()).hexdigest()[:24])


class IdCache:
    """One entry's directory: :meth:`complete` says whether it can be read, :meth:`read` reads it."""

    def __init__(self, directory: Path, codec: Codec) -> None:
        self.directory, self.codec = Path(directory), codec

    def meta(self) -> dict | None:
        """The entry's ``meta.json`` if the entry is whole (files of the sizes it announces), else None."""
        try:
            meta = json.loads((self.directory / META).read_text(encoding="utf-8"))
            expected = {TOKENS: 4 * meta["tokens"], LENGTHS: 4 * meta["rows"] * meta["sequences"],
                        SCALARS: 8 * meta["rows"] * meta["scalars"]}  # fmt: skip
            shape = (meta["version"], meta["sequences"], meta["scalars"])
            if shape != (VERSION, self.codec.sequences, self.codec.scalars):
                return None
            if any((self.directory / name).stat().st_size != size for name, size in expected.items()):
                return None
            return meta
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def complete(self) -> bool:
        """Whether the entry is committed and whole."""
        return self.meta() is not None

    def read(self, chunk_rows: int = 4096) -> Iterator[Any]:
        """The stored items in order, ``chunk_rows`` rows read at a time."""
        import numpy as np

        meta = self.meta()
        if meta is None:
            raise ValueError(f"{self.directory}: not a whole id cache entry")
        rows, k, m = meta["rows"], meta["sequences"], meta["scalars"]
        decode = self.codec.from_record
        with (
            (self.directory / TOKENS).open("rb") as tokens,
            (self.directory / LENGTHS).open("rb") as lengths,
            (self.directory / SCALARS).open("rb") as scalars,
        ):
            for start in range(0, rows, chunk_rows):
                count = min(chunk_rows, rows - start)
                sizes = np.fromfile(lengths, dtype="<i4", count=count * k)  # [count·K]
                numbers = np.fromfile(scalars, dtype="<i8", count=count * m).reshape(count, m).tolist()  # [count, M]
                ids = np.fromfile(tokens, dtype="<i4", count=int(sizes.sum(dtype=np.int64))).tolist()
                bounds = [0, *np.cumsum(sizes, dtype=np.int64).tolist()]  # [count·K + 1]
                if k == 1:  # the common case, without the inner loop
                    for (begin, end), number in zip(itertools.pairwise(bounds), numbers, strict=True):
                        yield decode((ids[begin:end],), number)
                    continue
                for row, number in enumerate(numbers):
                    edges = bounds[row * k : (row + 1) * k + 1]
                    yield decode(tuple(ids[a:b] for a, b in itertools.pairwise(edges)), number)


def remove_stale_temporaries(scan_dir: Path) -> list[Path]:
    """Delete the temporary entries (``.ids-*.PID.RANDOM.tmp``) that writers killed before their commit left in
    ``scan_dir`` (a ``kill -9`` runs no clean-up), and return them: those whose process is no longer running on
    this machine. A live writer's folder is left alone."""
    removed = []
    for path in Path(scan_dir).glob(".ids-*.tmp"):
        parts = path.name.split(".")  # ["", "ids-HASH", PID, RANDOM, "tmp"]
        if len(parts) == 5 and parts[2].isdigit() and _running(int(parts[2])):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists here (this process counts as running)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):  # someone else's process, or no way to tell: leave its folder
        return True
    return True


class _Writer:
    """Writes an entry into a private temporary directory; :meth:`commit` renames it into place. The directory
    is named after the writing process (``.ids-HASH.PID.RANDOM.tmp``), so that the next writer in that folder can
    tell a killed writer's leftovers (:func:`remove_stale_temporaries`) from a live one's."""

    def __init__(self, directory: Path, codec: Codec) -> None:
        self.directory, self.codec = directory, codec
        if directory.parent.is_dir():
            remove_stale_temporaries(directory.parent)
        self.temporary = directory.parent / f".{directory.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
        self.temporary.mkdir(parents=True)
        self.handles = [(self.temporary / name).open("wb") for name in (TOKENS, LENGTHS, SCALARS)]
        self.rows = self.tokens = 0
        self.failed = False

    def add(self, items: Sequence[Any]) -> None:
        """Append ``items``; a write that fails (a full disk) drops the entry, and the run goes on."""
        if self.failed:
            return
        try:
            self._add(items)
        except OSError:
            self.discard()

    def _add(self, items: Sequence[Any]) -> None:
        import numpy as np

        records = [self.codec.to_record(item) for item in items]
        sequences = [sequence for record in records for sequence in record[0]]
        lengths = [len(sequence) for sequence in sequences]
        flat = [token for sequence in sequences for token in sequence]
        np.asarray(flat, dtype="<i4").tofile(self.handles[0])
        np.asarray(lengths, dtype="<i4").tofile(self.handles[1])
        np.asarray([record[1] for record in records], dtype="<i8").reshape(-1).tofile(self.handles[2])
        self.rows += len(records)
        self.tokens += len(flat)

    def commit(self) -> None:
        """Close the files and rename the entry into place (unless another process did first)."""
        if self.failed:
            return
        meta = {"version": VERSION, "rows": self.rows, "sequences": self.codec.sequences,
                "scalars": self.codec.scalars, "tokens": self.tokens}  # fmt: skip
        try:
            for handle in self.handles:
                handle.close()
            (self.temporary / META).write_text(json.dumps(meta), encoding="utf-8")
            self.temporary.rename(self.directory)  # fails if another process committed it first: theirs stays
        except OSError:
            self.discard()
        self.failed = True  # done: nothing more is written

    def discard(self) -> None:
        """Close and delete the temporary entry."""
        self.failed = True
        for handle in self.handles:
            handle.close()
        shutil.rmtree(self.temporary, ignore_errors=True)


class EncodedStride:
    """This rank's encoded rows in file order, from the id cache when it is whole, else from the text (writing the
    cache as they go by): the ``rows`` of a :class:`~attnkit.data.streaming.StreamedBatches` built with
    ``strided=True``.

    Args:
        rows: opens the text stream afresh: every training row, in file order.
        encode: a list of rows -> their encoded items, one per row, each depending on its row alone.
        codec: how an item is stored.
        directory: the cache entry (:func:`id_cache_dir`); None: no cache (every call reads the text).
        world, rank: the ranks sharing the stream, and this one: rows ``rank, rank + world, ...`` are this rank's.
        limit: the most rows a rank reads (``StreamedBatches.rows_per_rank``); the entry is committed when it is
            reached or the text ends.
        chunk_rows: rows encoded (or read from the cache) at a time.

    ``epochs_from_cache`` counts the whole passes read from the cache.
    """

    def __init__(
        self,
        rows: Callable[[], Iterable[Any]],
        encode: Callable[[list[Any]], Sequence[Any]],
        codec: Codec,
        directory: Path | None,
        *,
        world: int = 1,
        rank: int = 0,
        limit: int,
        chunk_rows: int = 2048,
    ) -> None:
        self.rows, self.encode, self.codec, self.directory = rows, encode, codec, directory
        self.world, self.rank, self.limit, self.chunk_rows = world, rank, limit, chunk_rows
        self.epochs_from_cache = 0

    def cached(self) -> bool:
        """Whether the next call reads ids from the cache."""
        return self.directory is not None and IdCache(self.directory, self.codec).complete()

    def __call__(self) -> Iterator[Any]:
        """This rank's items, at most ``limit``, in file order."""
        if self.cached():
            return self._from_cache()
        return self._from_text()

    def _from_cache(self) -> Iterator[Any]:
        cache = IdCache(self.directory, self.codec)  # type: ignore[arg-type]
        rows = cache.meta()["rows"]  # type: ignore[index]
        for number, item in enumerate(cache.read(self.chunk_rows), 1):
            if number == rows:  # a whole pass (a short stride's re-read of its first rows is not one)
                self.epochs_from_cache += 1
            yield item

    def _from_text(self) -> Iterator[Any]:
        writer = None
        if self.directory is not None:
            try:
                writer = _Writer(self.directory, self.codec)
            except OSError:  # a read-only cache: every epoch reads the text
                writer = None
        pending: list[Any] = []
        taken = 0
        try:
            for index, row in enumerate(self.rows()):
                if index % self.world != self.rank:
                    continue
                pending.append(row)
                taken += 1
                last = taken == self.limit
                if len(pending) == self.chunk_rows or last:
                    items = self._encoded(pending, writer, last=last)
                    writer = None if last else writer
                    pending = []
                    yield from items
                    if last:
                        return
            items = self._encoded(pending, writer, last=True)
            writer = None
            yield from items
        finally:
            if writer is not None:  # stopped early or failed: nothing half-written is kept
                writer.discard()

    def _encoded(self, rows: list[Any], writer: _Writer | None, *, last: bool) -> list[Any]:
        items = list(self.encode(rows)) if rows else []
        if writer is not None:
            writer.add(items)
            if last:  # before the last items are handed out: the consumer may stop right after them
                writer.commit()
        return items
