"""Labelled text from user files: CSV, TSV and JSONL (layer 5).

Every problem with the input — a missing column, an empty text or label, bytes that are not UTF-8, a
malformed row, a training file with a single label, a label that appears in the test file but never in the
training file — raises one :class:`DataError` whose one-line message starts with ``file:line`` (or ``file:``
when no line applies). Files are read completely and checked before anything is returned, and this module
writes nothing, so a caller that writes outputs only after loading leaves nothing behind on error.

Formats:
    - CSV: standard quoting (a quoted field may hold commas, quotes and newlines).
    - TSV: read verbatim, one row per line split at tabs, as the sequence-to-sequence reader does: quotes are
      text (natural text is full of them), so a field cannot hold a tab or a newline; use CSV or JSONL for those.
    - JSONL: one JSON object per line.
Lines end at ``"\\n"`` only (see :mod:`attnkit.data.reading`): U+2028, NEL and the like stay inside their line.
Line numbers are 1-based physical lines: line 1 of a CSV/TSV file is its header, and a quoted CSV field that
spans several lines is reported at the line where its record starts.

The low-level readers (:class:`DataError`, :func:`read_utf8`, :func:`read_lines`, :func:`split_lines`) live in
:mod:`attnkit.data.reading` and are re-exported here.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from attnkit.data.classification import TextClassificationData
from attnkit.data.field_rules import capped_text, label_text
from attnkit.data.reading import (
    DataError,
    parse_json_line,
    read_lines,
    read_utf8,
    shown_json,
    split_lines,
    unicode_problem,
)

__all__ = [
    "FORMATS",
    "DataError",
    "FileRows",
    "detect_format",
    "load_files",
    "read_lines",
    "read_rows",
    "read_utf8",
    "split_lines",
]

# file suffix -> format name
FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


@dataclass
class FileRows:
    """The rows read from one file.

    Attributes:
        path: the file read.
        texts: one text per data row, never empty.
        labels: one label per row (as a string), or ``None`` when no label column was asked for.
        lines: the 1-based line where each row starts, for messages about a particular row.
    """

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


def read_rows(
    path: str | Path,
    *,
    text_column: str = "text",
    label_column: str | None = "label",
    file_format: str | None = None,
    max_chars: int | None = None,
) -> FileRows:
    """Read and check every row of a CSV, TSV or JSONL file.

    Args:
        path: the file; its suffix picks the format unless ``file_format`` is given.
        text_column: column (CSV/TSV header name) or key (JSONL) holding the text.
        label_column: column or key holding the label, or ``None`` to read texts only (prediction).
        file_format: ``"csv"``, ``"tsv"`` or ``"jsonl"`` to override the suffix.
        max_chars: cut each text to this many characters (None: keep it whole); see
            :mod:`attnkit.data.field_rules`.

    Blank lines are skipped. Labels follow :data:`attnkit.data.field_rules.LABEL_RULE` (a JSON ``1``, ``1.0`` and
    ``"1"`` are the same label; ``1.5``, ``true`` and ``null`` are refused).

    Raises:
        DataError: ``file:line: ...`` for the first problem found.
        ValueError: ``text_column`` and ``label_column`` name the same column.
    """
    path = Path(path)
    if text_column == label_column:
        raise ValueError(f"text_column and label_column are both {text_column!r}; they must name different columns")
    fmt = file_format or detect_format(path)
    if fmt not in ("csv", "tsv", "jsonl"):
        raise DataError(f"{path}: unknown file format {fmt!r}; use csv, tsv or jsonl")
    text = read_utf8(path)
    records = _jsonl_records(path, text) if fmt == "jsonl" else _table_records(path, text, fmt)
    columns = [text_column] if label_column is None else [text_column, label_column]
    rows = FileRows(path=path, texts=[], labels=None if label_column is None else [], lines=[])
    header = None
    for line, record in records:
        if line == 0:  # header of a CSV/TSV file: check the columns once
            _check_header(path, record, columns)
            header = record
            continue
        if header is not None:
            record = _table_row(path, line, header, record)
        rows.texts.append(capped_text(_text_field(path, line, record, text_column, "text"), max_chars))
        rows.lines.append(line)
        if label_column is not None:
            rows.labels.append(_text_field(path, line, record, label_column, "label"))
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
    max_chars: int | None = None,
) -> TextClassificationData:
    """Load a training file (and optionally a test file) as :class:`TextClassificationData`.

    Label names are the sorted distinct training labels; labels are their indices. Without a test file the
    test lists are empty. Texts are treated as punctuated (sentence splitting uses a real segmenter).

    Args:
        min_labels: the fewest distinct labels the training file may hold: 2 by default, since a classifier
            trained on one label is "100% accurate" and useless; 1 reads a file to evaluate a model on.
        max_chars: cut each text to this many characters (the most a classifier reads; None: whole texts).

    Raises:
        DataError: ``file:line: ...`` for any bad row, ``file: ...`` when the training file holds fewer than
            ``min_labels`` labels, or at the first test row whose label never occurs in the training file.
    """
    kwargs = {"text_column": text_column, "label_column": label_column, "file_format": file_format}
    kwargs["max_chars"] = max_chars
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


def _table_records(path: Path, text: str, fmt: str) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line, fields)``; the header comes first with line 0. Blank lines are skipped."""
    records = _tsv_records(text) if fmt == "tsv" else _csv_records(path, text)
    seen_header = False
    for line, fields in records:
        yield (line if seen_header else 0), fields
        seen_header = True
    if not seen_header:
        raise DataError(f"{path}:1: the file is empty; expected a header line naming the columns")


def _tsv_records(text: str) -> Iterator[tuple[int, list[str]]]:
    """TSV verbatim: one record per line, fields split at tabs, quotes kept as text."""
    for line, content in enumerate(split_lines(text), start=1):
        if content.strip():
            yield line, content.split("\t")


def _csv_records(path: Path, text: str) -> Iterator[tuple[int, list[str]]]:
    """CSV with standard quoting; a record's line is the line where it starts."""
    csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))  # long documents are normal here
    reader = csv.reader(io.StringIO(text, newline=""), dialect="excel")
    last_line = 0
    try:
        for fields in reader:
            start, last_line = last_line + 1, reader.line_num
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue  # blank line
            yield start, fields
    except csv.Error as error:
        raise DataError(f"{path}:{last_line + 1}: malformed CSV ({error})") from None


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


def _jsonl_records(path: Path, text: str) -> Iterator[tuple[int, dict]]:
    for line, content in enumerate(split_lines(text), start=1):
        if not content.strip():
            continue
        try:
            record = parse_json_line(content)
        except ValueError as error:
            raise DataError(f"{path}:{line}: {error}") from None
        if not isinstance(record, dict):
            raise DataError(f"{path}:{line}: expected a JSON object, found {type(record).__name__}")
        yield line, record


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
