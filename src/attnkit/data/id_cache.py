"""A stream's training rows tokenised once and kept on disk as ids, read instead of the text at every later
epoch (layer 5).

:class:`EncodedStride`: the first epoch reads this rank's rows from the text, encodes them a chunk at a time and
writes their ids to an entry beside the scan's cache, committed (renamed into place) once the stride has been read
to its end; every later epoch and run with the same key reads the ids instead. This is fairseq's binarised shard,
made by the first epoch instead of a preprocessing step. The entry's format and checks are in
:mod:`attnkit.data.id_cache_entry`: a damaged or stale entry is never read but made again.

A writer works in a temporary folder beside the entry (``.ids-HASH.PID.RANDOM.tmp``); a killed writer's folder is
deleted by the next writer once its process is gone. The files are read with plain sequential reads, not mapped:
a mapping's pages would count against the process's resident memory up to the size of the file.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from attnkit.data.id_cache_entry import (
    LENGTHS,
    META,
    SCALARS,
    TOKENS,
    VERSION,
    Codec,
    IdCache,
    Record,
    file_content_key,
)

__all__ = [
    "LABELLED_DOCUMENTS",
    "LABELLED_IDS",
    "PAIR_IDS",
    "Codec",
    "EncodedStride",
    "IdCache",
    "file_content_key",
    "id_cache_dir",
    "remove_stale_temporaries",
]


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


def remove_stale_temporaries(scan_dir: Path) -> list[Path]:
    """Delete and return the temporary entries (``.ids-*.PID.RANDOM.tmp``) in ``scan_dir`` whose writer process is
    no longer running here (a ``kill -9`` runs no clean-up); a live writer's folder is left alone."""
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
    except OSError:  # someone else's process, or no way to tell: leave its folder
        return True
    return True


class _Writer:
    """Writes an entry into a temporary directory named after its process; :meth:`commit` renames it into place."""

    def __init__(self, directory: Path, codec: Codec, content: str) -> None:
        self.directory, self.codec, self.content = directory, codec, content
        if directory.parent.is_dir():
            remove_stale_temporaries(directory.parent)
        self.temporary = directory.parent / f".{directory.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
        self.temporary.mkdir(parents=True)
        self.handles = [(self.temporary / name).open("wb") for name in (TOKENS, LENGTHS, SCALARS)]
        self.digests = [hashlib.sha256() for _ in self.handles]
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
        scalars = [record[1] for record in records]
        arrays = [np.asarray(flat, dtype="<i4"), np.asarray(lengths, dtype="<i4"), np.asarray(scalars, dtype="<i8")]
        for array, handle, digest in zip(arrays, self.handles, self.digests, strict=True):
            data = array.reshape(-1).tobytes()
            handle.write(data)
            digest.update(data)
        self.rows += len(records)
        self.tokens += len(flat)

    def commit(self, content: str) -> None:
        """Close the files and rename the entry into place, replacing a damaged or stale one; nothing is kept if
        the text's content key is no longer the one it was read under (``content``: the file changed meanwhile)."""
        if self.failed:
            return
        if content != self.content:
            self.discard()
            return
        sha256 = {
            name: digest.hexdigest() for name, digest in zip((TOKENS, LENGTHS, SCALARS), self.digests, strict=True)
        }
        meta = {"version": VERSION, "rows": self.rows, "sequences": self.codec.sequences,
                "scalars": self.codec.scalars, "tokens": self.tokens, "content": content, "sha256": sha256}  # fmt: skip
        try:
            for handle in self.handles:
                handle.close()
            (self.temporary / META).write_text(json.dumps(meta), encoding="utf-8")
            if self.directory.exists():  # damaged or stale (a whole one was read instead): moved aside, deleted
                aside = self.directory.parent / f".{self.directory.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
                self.directory.rename(aside)
                shutil.rmtree(aside, ignore_errors=True)
            self.temporary.rename(self.directory)
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

    ``encode`` must map each row alone. ``directory`` None: no cache. ``limit``: the most rows a rank reads; the
    entry is committed when it is reached or the text ends. ``content`` gives the text's content key (None: not
    checked); ``limits`` bound the stored values (:class:`IdCache`). ``epochs_from_cache`` counts the whole passes
    read from the cache.
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
        content: Callable[[], str] | None = None,
        limits: Sequence[int | None] | None = None,
    ) -> None:
        self.rows, self.encode, self.codec, self.directory = rows, encode, codec, directory
        self.world, self.rank, self.limit, self.chunk_rows = world, rank, limit, chunk_rows
        self.content, self.limits = content or (lambda: ""), limits
        self.epochs_from_cache = 0
        self._verified: tuple | None = None  # the entry's files' signature when last verified

    def _cache(self) -> IdCache:
        return IdCache(self.directory, self.codec, content=self.content(), limits=self.limits)  # type: ignore[arg-type]

    def _signature(self) -> tuple:
        """What changes when any of the entry's files is rewritten (their change times cannot be set back)."""
        stats = [(self.directory / name).stat() for name in (META, TOKENS, LENGTHS, SCALARS)]  # type: ignore[operator]
        return tuple((s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns) for s in stats)

    def cached(self) -> bool:
        """Whether the next call reads ids from the cache: the entry is whole, its checksums and ranges hold and
        it was made from the text as it is now (checked once per process while its files stay unchanged)."""
        if self.directory is None:
            return False
        try:
            signature = self._signature()
        except OSError:
            return False
        if signature != self._verified:
            self._verified = signature if self._cache().verified() is not None else None
        return self._verified is not None and self._cache().meta() is not None

    def __call__(self) -> Iterator[Any]:
        """This rank's items, at most ``limit``, in file order."""
        if self.cached():
            return self._from_cache()
        return self._from_text()

    def _from_cache(self) -> Iterator[Any]:
        cache = self._cache()
        rows = cache.meta()["rows"]  # type: ignore[index]
        for number, item in enumerate(cache.read(self.chunk_rows), 1):
            if number == rows:  # a whole pass (a short stride's re-read of its first rows is not one)
                self.epochs_from_cache += 1
            yield item

    def _from_text(self) -> Iterator[Any]:
        writer = None
        if self.directory is not None:
            with contextlib.suppress(OSError):  # a read-only cache: every epoch reads the text
                writer = _Writer(self.directory, self.codec, self.content())
        # this rank's rows (rank, rank + world, ...), at most limit of them
        rows = itertools.islice(itertools.islice(self.rows(), self.rank, None, self.world), self.limit)
        taken = 0
        try:
            while True:
                chunk = list(itertools.islice(rows, self.chunk_rows))
                taken += len(chunk)
                last = len(chunk) < self.chunk_rows or taken == self.limit
                items = self._encoded(chunk, writer, last=last)
                if last:
                    writer = None
                yield from items
                if last:
                    return
        finally:
            if writer is not None:  # stopped early or failed: nothing half-written is kept
                writer.discard()

    def _encoded(self, rows: list[Any], writer: _Writer | None, *, last: bool) -> list[Any]:
        items = list(self.encode(rows)) if rows else []
        if writer is not None:
            writer.add(items)
            if last:  # before the last items are handed out: the consumer may stop right after them
                writer.commit(self.content())
        return items
