"""Source/target pairs from user files: TSV, CSV and JSONL (layer 5).

- TSV (``.tsv``, ``.tab``, ``.txt``) and CSV (``.csv``): two columns, source then target, one pair per line. A
  first line that names the columns (``source<TAB>target``, or the names given) is a header and is skipped; with
  a header, extra columns are allowed and the named ones are used.
- JSONL (``.jsonl``, ``.ndjson``): one object per line with string fields ``source`` and ``target`` (or the
  names given); other fields are ignored.
- ``delimiter`` (``--delimiter``): one character separating the columns; the file is then read as CSV (standard
  quoting) with it, whatever its suffix (``;``, ``|``, a tab). Not for JSONL or Parquet.

Lines end at ``"\\n"`` only (:mod:`attnkit.data.reading`). Blank lines are skipped and fields are stripped. Every
bad row is reported — one line ``file:line: what is wrong`` each, 1-based physical lines — in a single
:class:`PairFileError` (a :class:`DataError`), so a user fixes the whole file in one go.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from attnkit.data.reading import DataError, shown_json, unicode_problem
from attnkit.data.records import Record, check_delimiter, iter_records
from attnkit.data.seq2seq.dataset import Level, Pair, PairFile, Seq2SeqData, hash_order

__all__ = [
    "FORMATS",
    "DataError",
    "PairFileError",
    "iter_pairs",
    "load_pair_files",
    "pair_line",
    "read_numbered_pairs",
    "read_pairs",
]

FORMATS = {
    ".tsv": "tsv",
    ".tab": "tsv",
    ".txt": "tsv",
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
}
MAX_SHOWN = 20


class PairFileError(DataError):
    """One or more bad rows in a pair file; ``problems`` holds one ``"file:line: reason"`` per bad row (all of them,
    even beyond the first ``MAX_SHOWN`` the message shows)."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = problems[:MAX_SHOWN]
        more = len(problems) - len(shown)
        super().__init__("\n".join(shown) + (f"\n... and {more} more bad rows" if more else ""))


def read_pairs(
    path: str | Path,
    *,
    source_key: str = "source",
    target_key: str = "target",
    file_format: str | None = None,
    delimiter: str | None = None,
) -> list[Pair]:
    """Read every ``(source, target)`` pair of a TSV, CSV or JSONL file (by its suffix unless ``file_format``),
    checking each row; ``source_key``/``target_key`` are JSONL keys or header names.

    Raises:
        DataError: ``file: ...`` when the file cannot be read or holds no pairs.
        PairFileError: listing every bad row as ``file:line: reason``.
        ValueError: ``delimiter`` is not one character.
    """
    keys = {"source_key": source_key, "target_key": target_key}
    return [pair for _, pair in read_numbered_pairs(path, **keys, file_format=file_format, delimiter=delimiter)]


def read_numbered_pairs(
    path: str | Path,
    *,
    source_key: str = "source",
    target_key: str = "target",
    file_format: str | None = None,
    delimiter: str | None = None,
) -> list[tuple[int, Pair]]:
    """As :func:`read_pairs`, each pair with the 1-based line it starts on: ``[(line, (source, target)), ...]``."""
    pairs, problems = [], []
    keys = {"source_key": source_key, "target_key": target_key}
    for line, row in iter_pairs(path, **keys, file_format=file_format, delimiter=delimiter):
        if isinstance(row, str):
            problems.append(f"{path}:{line}: {row}")
        else:
            pairs.append((line, row))
    if problems:
        raise PairFileError(problems)
    if not pairs:
        raise DataError(f"{path}: no pairs found")
    return pairs


def iter_pairs(
    path: str | Path,
    *,
    source_key: str = "source",
    target_key: str = "target",
    file_format: str | None = None,
    progress: Callable[[int], None] | None = None,
    delimiter: str | None = None,
) -> Iterator[tuple[int, Pair | str]]:
    """``(line, pair)`` for each row of a pair file, read as a stream (one row in memory at a time); a bad row
    comes as ``(line, reason)`` for the caller to report or skip.

    Raises:
        DataError: ``file: ...`` when the file cannot be read or its type told (or ``delimiter`` is given for a
            JSONL or Parquet file); ``file:line: ...`` for bytes that are not UTF-8.
        ValueError: ``delimiter`` is not one character (or is a quote or a line break).
    """
    path = Path(path)
    fmt = file_format or FORMATS.get(path.suffix.lower())
    if delimiter is not None:
        check_delimiter(path, fmt, delimiter)
        fmt = "csv"
    if fmt not in ("tsv", "csv", "jsonl", "parquet"):
        known = ", ".join(FORMATS)
        raise DataError(f"{path}: cannot tell the file type from suffix {path.suffix!r}; use one of {known}")
    records = iter_records(path, fmt, progress=progress, delimiter=delimiter or ",")
    if fmt in ("jsonl", "parquet"):
        yield from _object_rows(path, records, source_key, target_key)
    else:
        separator = {None: "comma-separated", "\t": "tab-separated"}.get(delimiter, f"{delimiter!r}-separated")
        shown = "tab-separated" if fmt == "tsv" else separator
        yield from _table_rows(records, shown, source_key, target_key, path)


def load_pair_files(
    train: str | Path,
    valid: str | Path | None = None,
    test: str | Path | None = None,
    *,
    source_level: Level = "char",
    target_level: Level = "char",
    valid_fraction: float = 0.05,
    source_key: str = "source",
    target_key: str = "target",
    delimiter: str | None = None,
) -> Seq2SeqData:
    """A task from the user's files. Without a validation file, ``valid_fraction`` of the training sources
    (chosen by a salted hash, so the same file always gives the same split) become the validation set; without
    a test file the test set is empty. A source with several targets in one file keeps them all as references.

    Raises:
        ValueError: ``valid_fraction`` outside ``[0, 1)``.
        DataError / PairFileError: as :func:`read_pairs`, and when carving the validation set leaves no
            training pair.
    """
    if not 0 <= valid_fraction < 1:
        raise ValueError(f"valid_fraction must lie in [0, 1), got {valid_fraction}")
    keys = {"source_key": source_key, "target_key": target_key, "delimiter": delimiter}
    train_pairs = read_pairs(train, **keys)
    if valid is not None:
        valid_pairs = read_pairs(valid, **keys)
    else:
        train_pairs, valid_pairs = _hold_out_sources(train, train_pairs, valid_fraction)
    test_pairs = read_pairs(test, **keys) if test is not None else []
    files = {
        "train": PairFile(str(train), **keys),
        "valid": PairFile(str(valid if valid is not None else train), **keys),
    }
    if test is not None:
        files["test"] = PairFile(str(test), **keys)
    references: dict[str, list[str]] = {}
    for source, target in (*valid_pairs, *test_pairs):
        targets = references.setdefault(source, [])
        if target not in targets:
            targets.append(target)
    return Seq2SeqData(
        name=Path(train).stem,
        train=train_pairs,
        valid=_first_per_source(valid_pairs),
        test=_first_per_source(test_pairs),
        source_level=source_level,
        target_level=target_level,
        shared_vocab=source_level == target_level == "subword",
        references={s: t for s, t in references.items() if len(t) > 1},
        files=files,
    )


def _hold_out_sources(train: str | Path, pairs: list[Pair], fraction: float) -> tuple[list[Pair], list[Pair]]:
    """``(training, validation)`` pairs: ``fraction`` of the sources (by a salted hash) and all their targets held
    out; DataError when no training pair is left."""
    sources = hash_order((s for s, _ in pairs), "attnkit-pairs")
    held = set(sources[: round(fraction * len(sources))])
    kept = [p for p in pairs if p[0] not in held]
    if not kept:
        raise DataError(
            f"{train}: holding out {fraction:.0%} of its {len(sources)} sources for validation "
            "leaves no training pair; give more pairs or a validation file"
        )
    return kept, [p for p in pairs if p[0] in held]


def pair_line(file: PairFile, pair: Pair) -> int | None:
    """The first line of ``file`` that holds ``pair`` (re-reading the file), or ``None`` if none does now."""
    try:
        keys = {"source_key": file.source_key, "target_key": file.target_key}
        numbered = read_numbered_pairs(file.path, **keys, delimiter=file.delimiter)
    except DataError:  # the file changed or vanished since it was loaded
        return None
    return next((line for line, found in numbered if found == pair), None)


def _first_per_source(pairs: list[Pair]) -> list[Pair]:
    first: dict[str, Pair] = {}
    for source, target in pairs:
        first.setdefault(source, (source, target))
    return list(first.values())


def _pair(source: object, target: object, source_name: str, target_name: str) -> Pair | str:
    """The checked pair, or the reason it is bad."""
    for value, name in ((source, source_name), (target, target_name)):
        if not isinstance(value, str):
            return f"{name} must be a string, found {shown_json(value)}"
        if not value.strip():
            return f"empty {name}"
        problem = unicode_problem(value)
        if problem is not None:
            return f"{name} {problem}"
    return source.strip(), target.strip()


def _table_rows(
    records: Iterator[tuple[int, Record]],
    separator: str,
    source_key: str,
    target_key: str,
    path: Path | None = None,
) -> Iterator[tuple[int, Pair | str]]:
    """TSV is split on tabs with no quoting (natural text is full of quotes); CSV follows the usual quoting rules.
    ``separator`` names the columns' separator in messages (``"comma-separated"``)."""
    columns: tuple[int, int] | None = None  # positions of source and target when the file has a header
    width = 2
    for number, (line, fields) in enumerate(records):
        if isinstance(fields, str):  # malformed CSV: the file cannot be read further
            yield line, fields
            return
        names = [f.strip() for f in fields]
        if number == 0 and source_key in names and target_key in names:
            columns, width = (names.index(source_key), names.index(target_key)), len(names)
            continue
        if number == 0 and path is not None:
            from attnkit.data.input_files import warn_unnamed_header

            warn_unnamed_header(path, fields, (source_key, target_key))
        if len(fields) != width:
            expected = f"{width} {separator} fields as in the header" if columns else f"2 {separator} fields"
            yield line, f"expected {expected} (source, target), found {len(fields)}"
            continue
        i, j = columns or (0, 1)
        yield line, _pair(fields[i], fields[j], "source", "target")


def _object_rows(
    path: Path, records: Iterator[tuple[int, Record]], source_key: str, target_key: str
) -> Iterator[tuple[int, Pair | str]]:
    """JSONL objects, or Parquet rows (after their column names, which must hold both keys)."""
    for line, record in records:
        if line == 0:  # Parquet column names
            missing = [k for k in (source_key, target_key) if k not in record]
            if missing:
                names = ", ".join(map(str, record))
                raise DataError(f"{path}:1: no column {' or '.join(map(repr, missing))} (columns: {names})")
            continue
        if isinstance(record, str):
            yield line, record
            continue
        if not isinstance(record, dict):
            yield line, f"expected a JSON object with {source_key!r} and {target_key!r}, found {type(record).__name__}"
            continue
        missing = [k for k in (source_key, target_key) if k not in record]
        if missing:
            yield line, f"no {' or '.join(repr(k) for k in missing)} field (fields: {', '.join(map(str, record))})"
            continue
        yield line, _pair(record[source_key], record[target_key], repr(source_key), repr(target_key))
