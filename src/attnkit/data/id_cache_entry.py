"""One entry of the id cache (:mod:`attnkit.data.id_cache`) on disk: its format, its checks, and the content key of
the text it was made from (layer 5; imports nothing of attnkit).

An entry (all integers little-endian)::

    meta.json      {"version": 2, "rows": N, "sequences": K, "scalars": M, "tokens": sum of lengths,
                    "content": the text's content key, "sha256": {file name: SHA-256 of the file}}
    tokens.i32     every row's K sequences, concatenated in row order           int32 [tokens]
    lengths.i32    each row's K sequence lengths                                int32 [N, K]
    scalars.i64    each row's M integers (a label, a flag)                      int64 [N, M]

An entry is used only when it is whole, made from the text as it is now and intact: :meth:`IdCache.verified`
reads it through once before use, checking each file's SHA-256 and every value's range (an id below the
vocabulary's size, a label below the number of labels).

The content key is the SHA-256 of the text file's **whole bytes** (:func:`file_content_key`), not of sampled blocks:
a sample misses a label flipped in place with the file's size and modification time kept (``cp -p``, ``rsync -t``,
``tar x``). A stream's cached scan records the same key (:func:`record_content`, :func:`content_matches`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CONTENT_FILE", "Codec", "IdCache", "content_matches", "file_content_key", "record_content"]

VERSION = 2
META = "meta.json"
TOKENS, LENGTHS, SCALARS = "tokens.i32", "lengths.i32", "scalars.i64"
CONTENT_FILE = "content.key"  # beside a scan's cached result: the content key of the file it scanned

Record = tuple[tuple[list[int], ...], tuple[int, ...]]


@dataclass(frozen=True)
class Codec:
    """How an encoded item is stored: ``sequences`` (K) id lists and ``scalars`` (M) integers per row;
    ``to_record`` maps an item to ``(K id lists, M integers)``, ``from_record`` back; ``name`` is part of the key."""

    name: str
    sequences: int
    scalars: int
    to_record: Callable[[Any], Record]
    from_record: Callable[[tuple[list[int], ...], Sequence[int]], Any]


class IdCache:
    """One entry's directory: :meth:`verified` says whether it can be used, :meth:`read` reads it.

    ``content``: the key of the text it must have been made from (None: any). ``limits``: the exclusive upper bound
    of each of the K sequences' values and M scalars (None: no bound), every value also at least 0.
    """

    def __init__(
        self, directory: Path, codec: Codec, *, content: str | None = None, limits: Sequence[int | None] | None = None
    ) -> None:
        self.directory, self.codec, self.content = Path(directory), codec, content
        if limits is not None and len(limits) != codec.sequences + codec.scalars:
            raise ValueError(f"limits must have {codec.sequences + codec.scalars} bounds, got {len(limits)}")
        self.limits = limits

    def meta(self) -> dict | None:
        """The entry's ``meta.json`` if it is committed, of this codec and content, its files of the sizes it
        announces (the values are not read: :meth:`verified` does), else None."""
        try:
            meta = json.loads((self.directory / META).read_text(encoding="utf-8"))
            expected = {TOKENS: 4 * meta["tokens"], LENGTHS: 4 * meta["rows"] * meta["sequences"],
                        SCALARS: 8 * meta["rows"] * meta["scalars"]}  # fmt: skip
            shape = (meta["version"], meta["sequences"], meta["scalars"])
            if shape != (VERSION, self.codec.sequences, self.codec.scalars) or set(meta["sha256"]) != set(expected):
                return None
            if self.content is not None and meta["content"] != self.content:
                return None  # made from another text: stale
            if any((self.directory / name).stat().st_size != size for name, size in expected.items()):
                return None
            return meta
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def verified(self) -> dict | None:
        """:meth:`meta` if every file also matches its checksum and every value its range, else None (a damaged
        or stale entry is never used). Reads the whole entry."""
        meta = self.meta()
        if meta is None:
            return None
        digests = {name: hashlib.sha256() for name in (TOKENS, LENGTHS, SCALARS)}
        try:
            for sizes, numbers, ids in self._chunks(meta, 1 << 16):
                digests[LENGTHS].update(sizes.tobytes())
                digests[SCALARS].update(numbers.tobytes())
                digests[TOKENS].update(ids.tobytes())
        except (OSError, ValueError):
            return None
        if any(digest.hexdigest() != meta["sha256"][name] for name, digest in digests.items()):
            return None
        return meta

    def complete(self) -> bool:
        """Whether the entry is committed, whole and verified."""
        return self.verified() is not None

    def _chunks(self, meta: dict, chunk_rows: int) -> Iterator[tuple[Any, Any, Any]]:
        """``(lengths [n·K], scalars [n, M], ids)`` arrays of ``chunk_rows`` rows at a time, each range-checked.

        Raises:
            ValueError: a length or value out of its range, or a file shorter than announced.
        """
        import numpy as np

        rows, k, m = meta["rows"], meta["sequences"], meta["scalars"]
        with (
            (self.directory / TOKENS).open("rb") as tokens,
            (self.directory / LENGTHS).open("rb") as lengths,
            (self.directory / SCALARS).open("rb") as scalars,
        ):
            for start in range(0, rows, chunk_rows):
                count = min(chunk_rows, rows - start)
                sizes = np.fromfile(lengths, dtype="<i4", count=count * k)  # [count·K]
                numbers = np.fromfile(scalars, dtype="<i8", count=count * m).reshape(count, m)  # [count, M]
                if sizes.size != count * k or (sizes < 0).any():
                    raise ValueError(f"{self.directory}: damaged lengths")
                ids = np.fromfile(tokens, dtype="<i4", count=int(sizes.sum(dtype=np.int64)))
                if ids.size != int(sizes.sum(dtype=np.int64)):
                    raise ValueError(f"{self.directory}: damaged ids")
                self._check_ranges(sizes, numbers, ids)
                yield sizes, numbers, ids

    def _check_ranges(self, sizes: Any, numbers: Any, ids: Any) -> None:
        """Raise ValueError unless every id of sequence ``j`` and every scalar ``j`` lies in ``[0, limits[j])``."""
        import numpy as np

        if self.limits is None:
            return
        k = self.codec.sequences
        column = np.repeat(np.tile(np.arange(k), len(sizes) // k), sizes) if k > 1 else None  # each id's sequence
        for j, limit in enumerate(self.limits[:k]):
            values = ids[column == j] if k > 1 else ids
            if values.size and (values.min() < 0 or (limit is not None and values.max() >= limit)):
                raise ValueError(f"{self.directory}: sequence {j} holds a value outside [0, {limit})")
        for j, limit in enumerate(self.limits[k:]):
            values = numbers[:, j]
            if values.size and (values.min() < 0 or (limit is not None and values.max() >= limit)):
                raise ValueError(f"{self.directory}: scalar {j} holds a value outside [0, {limit})")

    def read(self, chunk_rows: int = 4096) -> Iterator[Any]:
        """The stored items in order, ``chunk_rows`` rows read (and range-checked) at a time.

        Raises:
            ValueError: the entry is not whole, or a value is out of range (call :meth:`verified` first).
        """
        import numpy as np

        meta = self.meta()
        if meta is None:
            raise ValueError(f"{self.directory}: not a whole id cache entry")
        k = meta["sequences"]
        decode = self.codec.from_record
        for sizes, numbers, ids in self._chunks(meta, chunk_rows):
            ids, numbers = ids.tolist(), numbers.tolist()
            bounds = [0, *np.cumsum(sizes, dtype=np.int64).tolist()]  # [count·K + 1]
            if k == 1:  # the common case, without the inner loop
                for (begin, end), number in zip(itertools.pairwise(bounds), numbers, strict=True):
                    yield decode((ids[begin:end],), number)
                continue
            for row, number in enumerate(numbers):
                edges = bounds[row * k : (row + 1) * k + 1]
                yield decode(tuple(ids[a:b] for a, b in itertools.pairwise(edges)), number)


_CONTENT_KEYS: dict[tuple, str] = {}


def file_content_key(path: str | Path) -> str:
    """The SHA-256 of the whole file ``path`` (with its size), computed again only when its device, inode, size,
    modification or change time moves (``ctime`` cannot be set back, so any rewrite computes it again)."""
    stat = os.stat(path)
    signature = (str(path), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    if signature not in _CONTENT_KEYS:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _CONTENT_KEYS[signature] = f"{stat.st_size}:{digest.hexdigest()}"
    return _CONTENT_KEYS[signature]


def record_content(directory: Path, key: str) -> None:
    """Write the content key ``key`` of the file whose scan is cached in ``directory`` (what tells a stale entry)."""
    (directory / CONTENT_FILE).write_text(key, encoding="ascii")


def content_matches(directory: Path, key: str) -> bool:
    """Whether the scan cached in ``directory`` was made from content ``key`` (False when not recorded)."""
    try:
        return (directory / CONTENT_FILE).read_text(encoding="ascii") == key
    except (OSError, ValueError):
        return False
