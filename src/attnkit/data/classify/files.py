"""Labelled text from user files: CSV, TSV and JSONL (layer 5).

Every problem with the input — a missing column, an empty text or label, bytes that are not UTF-8, a
malformed row, a training file with a single label, a label that appears in the test file but never in the
training file — raises one :class:`DataError` whose one-line message starts with ``file:line`` (or ``file:``
when no line applies). Files are read as a stream by :mod:`attnkit.data.records` (formats and line numbers are
described there; line 1 of a CSV/TSV file is its header); :func:`read_rows` and :func:`load_files` check every row
before returning anything. :class:`DataError`, :func:`read_utf8`, :func:`read_lines` and :func:`split_lines` are
re-exported from :mod:`attnkit.data.reading`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from attnkit.data.classification import TextClassificationData
from attnkit.data.classify.field_rules import capped_text, label_text
from attnkit.data.reading import DataError, read_lines, read_utf8, shown_json, split_lines, unicode_problem
from attnkit.data.records import BadRows, check_delimiter, iter_records

__all__ = [
    "FORMATS",
    "BadRows",
    "DataError",
    "FileRows",
    "detect_format",
    "iter_rows",
    "load_files",
    "read_lines",
    "read_rows",
    "read_utf8",
    "split_lines",
]

# file suffix -> format name
FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}


@dataclass
class FileRows:
    """The rows read from one file: texts (never empty), labels (strings; None when no label column was asked for)
    and the 1-based line where each row starts."""

    path: Path
    texts: list[str]
    labels: list[str] | None
    lines: list[int]


def detect_format(path: str | Path) -> str:
    """Return ``"csv"``, ``"tsv"`` or ``"jsonl"`` from the file's suffix, else raise :class:`DataError`."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        known = ", ".join(sorted(FORMATS))
        raise DataError(f"{path}: cannot tell the file type from suffix {suffix!r}; use one of {known}")
    return FORMATS[suffix]


def iter_rows(
    path: str | Path,
    *,
    text_column: str = "text",
    label_column: str | None = "label",
    file_format: str | None = None,
    bad_rows: BadRows | None = None,
    progress: Callable[[int], None] | None = None,
    delimiter: str | None = None,
    max_chars: int | None = None,
) -> Iterator[tuple[int, str, str | None]]:
    """``(line, text, label)`` for each row of a CSV, TSV, JSONL or Parquet file, read as a stream (one row in memory)
    and checked; ``label`` is None when ``label_column`` is.

    With ``bad_rows``, a bad row is counted there and skipped instead of raising (problems with the file itself,
    such as a missing column in the header, still raise). ``delimiter``: the file is read as CSV with it, whatever
    its suffix (``;`` for European spreadsheets); not for JSONL or Parquet. ``max_chars`` and labels follow
    :mod:`attnkit.data.classify.field_rules`.

    Raises:
        DataError: ``file:line: ...`` for the first problem found.
        ValueError: ``text_column`` and ``label_column`` name the same column.
    """
    path = Path(path)
    if text_column == label_column:
        raise ValueError(f"text_column and label_column are both {text_column!r}; they must name different columns")
    if delimiter is not None:
        check_delimiter(path, file_format or FORMATS.get(path.suffix.lower()), delimiter)
    fmt = "csv" if delimiter is not None else file_format or detect_format(path)
    if fmt not in ("csv", "tsv", "jsonl", "parquet"):
        raise DataError(f"{path}: unknown file format {fmt!r}; use csv, tsv, jsonl or parquet")
    columns = [text_column] if label_column is None else [text_column, label_column]
    header = None
    for line, record in iter_records(path, fmt, progress=progress, delimiter=delimiter or ","):
        try:
            if header is None and fmt in ("csv", "tsv", "parquet"):  # the first record names the columns
                _check_header(path, record, columns)
                header = record
                continue
            if isinstance(record, str):  # the reader could not parse the row
                raise DataError(f"{path}:{line}: {record}")
            if header is not None and isinstance(record, list):  # CSV/TSV fields; Parquet rows come as dicts
                record = _table_row(path, line, header, record)
            elif not isinstance(record, dict):
                raise DataError(f"{path}:{line}: expected a JSON object, found {type(record).__name__}")
            text = capped_text(_text_field(path, line, record, text_column, "text"), max_chars)
            label = None if label_column is None else _text_field(path, line, record, label_column, "label")
        except DataError as error:
            file_level = (header is None and fmt != "jsonl") or "malformed CSV" in str(error)
            if bad_rows is None or file_level:
                raise
            bad_rows.add(str(error))
            continue
        yield line, text, label
    if header is None and fmt != "jsonl":
        raise DataError(f"{path}:1: the file is empty; expected a header line naming the columns")


def read_rows(
    path: str | Path,
    *,
    text_column: str = "text",
    label_column: str | None = "label",
    file_format: str | None = None,
    delimiter: str | None = None,
    max_chars: int | None = None,
) -> FileRows:
    """Read and check every row of a CSV, TSV, JSONL or Parquet file, in memory (:func:`iter_rows` streams, and
    says what the options mean); ``label_column=None`` reads texts only (prediction).

    Raises:
        DataError: ``file:line: ...`` for the first problem found.
        ValueError: ``text_column`` and ``label_column`` name the same column.
    """
    rows = FileRows(path=Path(path), texts=[], labels=None if label_column is None else [], lines=[])
    options = {"file_format": file_format, "delimiter": delimiter, "max_chars": max_chars}
    for line, text, label in iter_rows(path, text_column=text_column, label_column=label_column, **options):
        rows.texts.append(text)
        rows.lines.append(line)
        if rows.labels is not None:
            rows.labels.append(label)
    if not rows.texts:
        raise DataError(f"{path}:1: no data rows")
    return rows


def load_files(
    train_path: str | Path,
    test_path: str | Path | None = None,
    *,
    text_column: str = "text",
    label_column: str = "label",
    file_format: str | None = None,
    min_labels: int = 2,
    delimiter: str | None = None,
    max_chars: int | None = None,
) -> TextClassificationData:
    """Load a training file (and optionally a test file) as :class:`TextClassificationData`.

    Label names are the sorted distinct training labels; labels are their indices. Without a test file the
    test lists are empty. Texts are treated as punctuated. ``min_labels`` is 2 by default, since a classifier
    trained on one label is "100% accurate" and useless; 1 reads a file to evaluate a model on.

    Raises:
        DataError: ``file:line: ...`` for any bad row, ``file: ...`` when the training file holds fewer than
            ``min_labels`` labels, or at the first test row whose label never occurs in the training file.
    """
    kwargs = {"text_column": text_column, "label_column": label_column, "file_format": file_format}
    kwargs |= {"delimiter": delimiter, "max_chars": max_chars}
    train = read_rows(train_path, **kwargs)
    label_names = sorted(set(train.labels))
    if len(label_names) < min_labels:
        raise DataError(
            f"{train.path}: every row has the label {label_names[0]!r} in column {label_column!r}; "
            f"a classifier needs at least {min_labels} different labels to learn from"
        )
    test = read_rows(test_path, **kwargs) if test_path is not None else None
    index = {name: i for i, name in enumerate(label_names)}
    if test is not None:
        for label, line in zip(test.labels, test.lines, strict=True):
            if label not in index:
                shown = ", ".join(repr(n) for n in label_names[:10]) + (", ..." if len(label_names) > 10 else "")
                raise DataError(
                    f"{test.path}:{line}: label {label!r} does not occur in the training file "
                    f"{train.path} (training labels: {shown})"
                )
    return TextClassificationData(
        name=Path(train_path).stem,
        train_texts=train.texts,
        train_labels=[index[label] for label in train.labels],
        test_texts=test.texts if test is not None else [],
        test_labels=[index[label] for label in test.labels] if test is not None else [],
        label_names=label_names,
        punctuated=True,
    )


def _check_header(path: Path, header: list[str], columns: list[str]) -> None:
    names = [h.strip() for h in header]
    for column in columns:
        count = names.count(column)
        if count == 0:
            raise DataError(f"{path}:1: no column {column!r} in the header (columns: {', '.join(names)})")
        if count > 1:
            raise DataError(f"{path}:1: column {column!r} appears {count} times in the header")


def _table_row(path: Path, line: int, header: list[str], fields: list[str]) -> dict[str, str]:
    if len(fields) != len(header):
        raise DataError(f"{path}:{line}: expected {len(header)} fields as in the header, found {len(fields)}")
    return {name.strip(): value for name, value in zip(header, fields, strict=True)}


def _text_field(path: Path, line: int, record: dict, column: str, what: str) -> str:
    if column not in record:
        raise DataError(f"{path}:{line}: no {column!r} field (fields: {', '.join(map(str, record))})")
    value = record[column]
    if what == "label":
        try:
            value = label_text(value)
        except ValueError as error:
            raise DataError(f"{path}:{line}: the label in {column!r} {error}") from None
    elif not isinstance(value, str):
        raise DataError(f"{path}:{line}: {what} in {column!r} must be a string, found {shown_json(value)}")
    if not value.strip():
        raise DataError(f"{path}:{line}: empty {what} in column {column!r}")
    problem = unicode_problem(value)
    if problem is not None:
        raise DataError(f"{path}:{line}: the {what} in {column!r} {problem}")
    return value if what == "text" else value.strip()
