"""One streaming reader for every training file: CSV, TSV, JSONL and Parquet records, line by line (layer 5).

:func:`iter_records` yields ``(line, record)`` from a file without reading it whole: memory stays bounded by
the longest record, whatever the file's size. The classification reader (:mod:`attnkit.data.classify.files`) and the
pair reader (:mod:`attnkit.data.seq2seq.files`) both read through it and only check the fields they need.

- CSV: standard quoting through :mod:`csv` (a quoted field may hold commas, quotes and newlines); a record's
  line is the line where it starts.
- TSV: verbatim, one record per line split at tabs; quotes are text.
- JSONL: one JSON value per line (the caller checks it is an object).
- Parquet: read in record batches by ``pyarrow``; a row's "line" is its 1-based row number plus one (as if the
  column names were line 1, like a CSV header), and records are dicts of the row's values.

Lines end at ``"\\n"`` only (the file is split in binary, a ``"\\r"`` before the ``"\\n"`` dropped), as
:mod:`attnkit.data.reading` promises. Bytes that are not UTF-8 raise :class:`DataError` naming the line and byte
column when the stream reaches them. Blank records are skipped.

Why not pyarrow's CSV/JSON readers for the text formats: they are faster, but they cannot name the line of a
bad row (the ``file:line`` promise every reader here keeps), and they split CSV rows at a bare ``"\\r"``.
"""

from __future__ import annotations

import csv
import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from attnkit.data.reading import DataError, not_utf8, open_binary

__all__ = ["BadRows", "Fingerprint", "Record", "check_delimiter", "fingerprint", "iter_records", "open_binary"]

Record = list[str] | dict | str  # table fields, a JSON value (or Parquet row dict), or a reason the row is bad
_BOM = b"\xef\xbb\xbf"
_BLOCK = 1 << 20  # bytes hashed at each end of a file for its fingerprint
_PROGRESS_LINES = 8192  # a progress callback hears the byte position this often
_progress: dict[int, Callable[[int], None]] = {}  # open handle -> its reader's progress callback


class BadRows:
    """Counts the rows ``--skip-bad-rows`` skipped, keeping the first ``keep`` messages (``file:line: reason``)."""

    def __init__(self, keep: int = 5) -> None:
        self.count, self.keep = 0, keep
        self.examples: list[str] = []

    def add(self, message: str) -> None:
        """Count one skipped row (and keep its message if fewer than ``keep`` are kept)."""
        self.count += 1
        if len(self.examples) < self.keep:
            self.examples.append(message)

    def summary(self) -> str:
        """One line: how many rows were skipped, and the first one's message."""
        first = f" (first: {self.examples[0]})" if self.examples else ""
        return f"skipped {self.count:,} bad row{'s' if self.count != 1 else ''}{first}"


def _text_lines(path: Path, handle) -> Iterator[tuple[int, str]]:
    """``(line, text)`` per physical line, decoded; the ``"\\n"`` kept (CSV needs it), the BOM dropped."""
    for number, raw in enumerate(handle, start=1):
        if number % _PROGRESS_LINES == 0 and _progress.get(id(handle)):
            _progress[id(handle)](handle.tell())
        skip = len(_BOM) if number == 1 and raw.startswith(_BOM) else 0
        try:
            yield number, raw[skip:].decode("utf-8")
        except UnicodeDecodeError as error:
            raise not_utf8(str(path), number, raw[error.start + skip], error.start + skip + 1) from None


def _strip_newline(text: str) -> str:
    if text.endswith("\n"):
        text = text[:-1]
    return text[:-1] if text.endswith("\r") else text


def _tsv(path: Path, handle) -> Iterator[tuple[int, Record]]:
    for line, text in _text_lines(path, handle):
        content = _strip_newline(text)
        if content.strip():
            yield line, content.split("\t")


def _jsonl(path: Path, handle) -> Iterator[tuple[int, Record]]:
    from attnkit.data.reading import parse_json_line

    for line, text in _text_lines(path, handle):
        content = _strip_newline(text)
        if not content.strip():
            continue
        try:
            yield line, parse_json_line(content)
        except ValueError as error:
            yield line, str(error)


def _csv(path: Path, handle, delimiter: str = ",") -> Iterator[tuple[int, Record]]:
    """CSV records; a parse error is yielded as ``(line, reason)`` and ends the file (it cannot be resynchronised)."""
    csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))  # long documents are normal here
    numbered = _text_lines(path, handle)
    position = [0]

    def lines() -> Iterator[str]:
        for line, text in numbered:
            position[0] = line
            yield text

    reader = csv.reader(lines(), dialect="excel", delimiter=delimiter)
    last_line = 0
    try:
        for fields in reader:
            start, last_line = last_line + 1, position[0]
            if not fields or not any(f.strip() for f in fields):
                continue  # blank line
            yield start, fields
    except csv.Error as error:
        yield last_line + 1, f"malformed CSV ({error})"


def _parquet(path: Path, handle) -> Iterator[tuple[int, Record]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is in the data extra
        raise DataError(f"{path}: reading Parquet needs pyarrow (pip install 'attnkit[data]')") from None
    try:
        parquet = pq.ParquetFile(handle)
    except Exception as error:  # pyarrow raises ArrowInvalid and friends
        raise DataError(f"{path}: not a readable Parquet file ({error})") from None
    names = parquet.schema_arrow.names
    yield 0, names
    row = 0
    for batch in parquet.iter_batches(batch_size=4096):
        columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        for values in zip(*columns, strict=True):
            row += 1
            yield row + 1, dict(zip(names, values, strict=True))


def check_delimiter(path: Path, fmt: str | None, delimiter: str) -> None:
    """Refuse (ValueError) a ``--delimiter`` that is not one character, or is a quote or a line break, or
    (DataError) one given for a file whose format ``fmt`` has no columns to separate (JSONL, Parquet)."""
    if len(delimiter) != 1 or delimiter in '\r\n"':
        raise ValueError(f"--delimiter must be one character (not a quote or line break), got {delimiter!r}")
    if fmt in ("jsonl", "parquet"):
        raise DataError(f"{path}: --delimiter is for CSV-like files; this file has no columns to separate")


_READERS = {"csv": _csv, "tsv": _tsv, "jsonl": _jsonl, "parquet": _parquet}


def iter_records(
    path: str | Path, fmt: str, *, progress: Callable[[int], None] | None = None, delimiter: str = ","
) -> Iterator[tuple[int, Record]]:
    """``(line, record)`` for each non-blank record of ``path`` in format ``fmt``, read as a stream.

    Records are lists of fields (CSV, TSV; the header is the first one, unmarked), parsed JSON values (JSONL)
    or row dicts (Parquet, preceded by ``(0, column_names)``). A record that cannot be parsed comes as its
    reason (a ``str``); after a malformed CSV record the file ends. ``progress`` hears the bytes read now and then.
    DataError: the file cannot be opened, or a line is not UTF-8 (``file:line: byte ...``).
    """
    path = Path(path)
    if fmt not in _READERS:
        raise DataError(f"{path}: unknown file format {fmt!r}; use csv, tsv, jsonl or parquet")
    with open_binary(path) as handle:
        if progress is not None:
            _progress[id(handle)] = progress
        try:
            if fmt == "csv":
                yield from _csv(path, handle, delimiter)
            else:
                yield from _READERS[fmt](path, handle)
        finally:
            _progress.pop(id(handle), None)


@dataclass(frozen=True)
class Fingerprint:
    """What identifies a file's content cheaply: its size, modification time and a hash of its first and last
    megabyte. Two files with the same fingerprint are taken to hold the same rows (a cache key)."""

    size: int
    mtime_ns: int
    ends_sha256: str

    def key(self, *options: object) -> str:
        """A short hex key of the fingerprint and ``options`` (whatever else the cached result depends on)."""
        text = repr((self.size, self.mtime_ns, self.ends_sha256, *options))
        return hashlib.sha256(text.encode()).hexdigest()[:24]


def fingerprint(path: str | Path) -> Fingerprint:
    """The :class:`Fingerprint` of ``path`` (reads at most two megabytes); DataError when it cannot be opened."""
    path = Path(path)
    with open_binary(path) as handle:
        stat = os.fstat(handle.fileno())
        digest = hashlib.sha256(handle.read(_BLOCK))
        if stat.st_size > _BLOCK:
            handle.seek(max(stat.st_size - _BLOCK, _BLOCK))
            digest.update(handle.read(_BLOCK))
    return Fingerprint(stat.st_size, stat.st_mtime_ns, digest.hexdigest())
