"""The texts a trained model reads from ``--file``: read the same way by ``predict``, ``explain``, ``translate`` and
``faithfulness`` (layer 5).

- A table (``.csv``, ``.tsv``/``.tab``, ``.jsonl``/``.ndjson``, ``.parquet``) gives the **input column** of
  every row, read as ``attnkit evaluate`` reads it: a classifier's text column (the checkpoint's unless told
  otherwise), a seq2seq model's source column. Its other columns — a gold label, a reference translation — are
  never part of a text, and a CSV/TSV header is never a text. A headerless two-column pair file (``source<TAB>
  target`` per line, as seq2seq training reads it) gives its first field.
- Anything else (``.txt``, no suffix) is one text per line, blank lines kept (so outputs line up with inputs).

Every problem is one :class:`~attnkit.data.reading.DataError` naming ``file:line``.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

from attnkit.data.classify.files import FORMATS, iter_rows
from attnkit.data.reading import DataError, read_lines, shown_json
from attnkit.data.records import iter_records

__all__ = ["is_table", "looks_like_header", "read_input_file", "read_pair_sources", "read_text_column"]

# names a pair file's header plausibly uses for its columns, besides the ones the reader was given
_COLUMN_NAMES = frozenset().union(
    ("src", "tgt", "trg", "input", "output", "inputs", "outputs", "from", "to", "text", "label", "id"),
    ("question", "answer", "prompt", "response", "sentence", "translation", "original"),
    ("word", "words", "pron", "pronunciation", "phonemes", "graphemes", "grapheme", "phoneme"),
    ("en", "de", "fr", "es", "it", "ja", "zh", "ru", "pt", "nl"),
    ("english", "german", "french", "spanish", "japanese", "chinese"),
    ("reference", "hypothesis", "orig", "ref", "hyp"),
)
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,39}")


def is_table(path: str | Path) -> bool:
    """True for a file whose suffix names a table format (CSV, TSV, JSONL, Parquet); False for ``.txt`` and the
    rest, which are one text per line."""
    return Path(path).suffix.lower() in FORMATS


def looks_like_header(fields: list[str]) -> bool:
    """True when a first line's fields read as column names rather than data: each a short identifier
    (``src``, ``source_text``), at least one of them a usual column name or snake_case."""
    names = [field.strip() for field in fields]
    if len(names) < 2 or not all(_NAME.fullmatch(name) for name in names):
        return False
    return any(name.lower() in _COLUMN_NAMES or "_" in name for name in names)


def warn_unnamed_header(path: Path, fields: list[str], wanted: tuple[str, ...]) -> None:
    """Warn that line 1 of ``path`` looks like a header naming none of the ``wanted`` columns (so it is read as
    data): the columns are probably named otherwise, and the options that name them say how."""
    if looks_like_header(fields):
        shown = "\t".join(field.strip() for field in fields)
        names = " and ".join(repr(name) for name in wanted)
        warnings.warn(
            f"{path}:1: the first line {shown!r} looks like a header, but it names no {names} column, so it is "
            "read as data; name the columns with --source-column/--target-column (or --text-column)",
            UserWarning,
            stacklevel=3,
        )


def read_text_column(path: str | Path, column: str, *, delimiter: str | None = None) -> list[str]:
    """The ``column`` of every row of a CSV, TSV, JSONL or Parquet file (a classifier's input), as
    ``attnkit evaluate`` reads it (:func:`attnkit.data.classify.files.iter_rows`): the header is not a text and no other
    column is read. Raises :class:`DataError` (``file:line: ...``): a missing column, an empty text, ..."""
    rows = iter_rows(path, text_column=column, label_column=None, delimiter=delimiter)
    return [text for _, text, _ in rows]


def read_pair_sources(
    path: str | Path, *, source_key: str = "source", target_key: str = "target", delimiter: str | None = None
) -> list[str]:
    """The source of every row of a pair file (a seq2seq model's input): the ``source_key`` column of a table
    whose header names it (a target column is not needed), the first field of a headerless CSV/TSV (a warning
    when its first line looks like a header naming neither key), the ``source_key`` field of a JSONL object.

    Raises:
        DataError: ``file:line: ...`` for a missing or non-string source, or a file with no rows.
    """
    path = Path(path)
    fmt = "csv" if delimiter is not None else FORMATS.get(path.suffix.lower(), "tsv")
    sources, column = [], None
    for line, record in iter_records(path, fmt, delimiter=delimiter or ","):
        if isinstance(record, str):
            raise DataError(f"{path}:{line}: {record}")
        if isinstance(record, list):
            if column is None:  # the first line: a header naming the source column, or the first pair
                names = [field.strip() for field in record]
                column = names.index(source_key) if source_key in names else 0
                if source_key in names:
                    continue
                warn_unnamed_header(path, record, (source_key, target_key))
            sources.append(_source(path, line, record[column] if column < len(record) else None, source_key))
        elif line == 0:  # Parquet column names
            if source_key not in record:
                raise DataError(f"{path}:1: no column {source_key!r} (columns: {', '.join(map(str, record))})")
        elif isinstance(record, dict):
            sources.append(_source(path, line, record.get(source_key), source_key))
        else:
            raise DataError(f"{path}:{line}: expected a JSON object with {source_key!r}, found {shown_json(record)}")
    if not sources:
        raise DataError(f"{path}: no rows found")
    return sources


def _source(path: Path, line: int, value: object, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{path}:{line}: the source in {key!r} must be a non-empty string, found {shown_json(value)}")
    return value.strip()


def read_input_file(path: str | Path, *, column: str, pairs: bool = False, delimiter: str | None = None) -> list[str]:
    """The texts of ``--file``: a table's ``column`` (with ``pairs``: a pair file's sources, ``column`` being the
    source key), else the file's lines, blank ones kept. See the module docstring."""
    if not is_table(path) and delimiter is None:
        return read_lines(path)
    if pairs:
        return read_pair_sources(path, source_key=column, delimiter=delimiter)
    return read_text_column(path, column, delimiter=delimiter)
