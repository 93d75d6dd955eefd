"""A labelled text file too large for memory: one streaming pass for its counts, validation rows and tokeniser,
cached; then its training rows as a stream, epoch after epoch (layer 5).

    stream = TextFileStream("big.csv", valid_fraction=0.1)
    scan, tokenizer = stream.scan({"kind": "word", "vocab_size": 30000, "min_frequency": 2})
    for text, label in stream.training_rows(): ...

The first pass (:meth:`TextFileStream.scan`) reads every row once: it checks it, holds it out for validation when
a hash of its index says so (:func:`attnkit.data.streaming.held_out`), counts the labels, and feeds the training
texts to the tokeniser's trainer as they go by. Its result is cached under ``$ATTNKIT_CACHE/streams/KEY/``, KEY made
of the file's :class:`~attnkit.data.records.Fingerprint` and every option the result depends on.

**Sampled scan** (a file larger than ``sample_bytes``, 64 MB by default): the pass reads only the rows of the
file's first ``sample_bytes``, so the tokeniser, the labels and the validation rows come from that prefix. The
rest's rows are counted as its remaining lines (Parquet files are always read whole), an upper bound that is exact
when every row is one line and good. A bad row after the prefix stops the first epoch with its ``file:line`` error
(or is skipped with ``skip_bad_rows``), and a label first seen after the prefix stops training with an error naming
it (``sample_bytes=None`` scans the whole file first).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from attnkit.data.cache import stream_cache_dir
from attnkit.data.classify.files import FORMATS, BadRows, detect_format, iter_rows
from attnkit.data.classify.tokenization import TextTokenizer
from attnkit.data.id_cache_entry import file_content_key
from attnkit.data.reading import DataError
from attnkit.data.records import check_delimiter, fingerprint
from attnkit.data.streaming import (
    SAMPLE_BYTES,
    ReadProgress,
    count_lines,
    held_out,
    held_out_count,
    read_scan,
    save_scan,
    scan_prefix_note,
)

__all__ = ["ScanResult", "TextFileStream"]

SCAN_FILE = "scan.json"


@dataclass
class ScanResult:
    """What the first pass learnt about the file. ``valid_rows`` counts every held-out row, ``valid_texts`` and
    ``valid_labels`` (label names) keep at most ``max_valid_rows`` of them; ``seconds`` is 0 from the cache.
    ``sampled_bytes``: the prefix a sampled scan read (0: the whole file); ``train_rows`` and ``valid_rows`` then
    count the rest's lines."""

    label_names: list[str]
    label_counts: dict[str, int]
    train_rows: int
    valid_rows: int
    valid_texts: list[str]
    valid_labels: list[str]
    bad_rows: int = 0
    bad_examples: list[str] = field(default_factory=list)
    seconds: float = 0.0
    cached: bool = False
    sampled_bytes: int = 0

    def counts_line(self, limit: int = 8) -> str:
        """``labels: pos 512,004 · neg 487,996`` (the most frequent ``limit``)."""
        shown = sorted(self.label_counts.items(), key=lambda item: -item[1])[:limit]
        more = len(self.label_counts) - len(shown)
        text = " · ".join(f"{name} {count:,}" for name, count in shown)
        where = f" (in the first {self.sampled_bytes / 2**20:.0f} MB)" if self.sampled_bytes else ""
        return f"labels{where}: {text}" + (f" and {more} more" if more else "")


class TextFileStream:
    """A labelled CSV/TSV/JSONL/Parquet file read as a stream (see the module docstring); ``limit``: only the first
    good rows; ``delimiter`` and ``max_chars`` as :func:`~attnkit.data.classify.files.iter_rows` reads them."""

    def __init__(
        self,
        path: str | Path,
        *,
        text_column: str = "text",
        label_column: str = "label",
        valid_fraction: float = 0.1,
        limit: int | None = None,
        skip_bad_rows: bool = False,
        max_valid_rows: int = 20_000,
        progress: bool = True,
        delimiter: str | None = None,
        max_chars: int | None = None,
        sample_bytes: int | None = SAMPLE_BYTES,
    ) -> None:
        if not 0 <= valid_fraction < 1:
            raise ValueError(f"valid_fraction must lie in [0, 1), got {valid_fraction}")
        self.path = Path(path)
        if delimiter is not None:  # refused now, before a run writes anything
            check_delimiter(self.path, FORMATS.get(self.path.suffix.lower()), delimiter)
        self.format = "csv" if delimiter is not None else detect_format(self.path)
        self.delimiter, self.max_chars = delimiter, max_chars
        self.text_column, self.label_column = text_column, label_column
        self.valid_fraction, self.limit, self.skip_bad_rows = valid_fraction, limit, skip_bad_rows
        self.max_valid_rows, self.progress = max_valid_rows, progress
        self.sample_bytes = sample_bytes if sample_bytes and self.path.stat().st_size > sample_bytes else None

    @property
    def name(self) -> str:
        """The data set's name: the file's stem."""
        return self.path.stem

    def _rows_with_lines(
        self, bad: BadRows | None, progress: Callable[[int], None] | None
    ) -> Iterator[tuple[int, str, str, int]]:
        """``(index, text, label, line)`` for every good row, up to ``limit``."""
        rows = iter_rows(
            self.path,
            text_column=self.text_column,
            label_column=self.label_column,
            file_format=self.format,
            bad_rows=bad,
            progress=progress,
            delimiter=self.delimiter,
            max_chars=self.max_chars,
        )
        for index, (line, text, label) in enumerate(rows):
            if self.limit is not None and index >= self.limit:
                return
            yield index, text, label, line

    def training_rows(self) -> Iterator[tuple[str, str]]:
        """``(text, label name)`` for each training row, in file order (the held-out rows left out)."""
        bad = BadRows() if self.skip_bad_rows else None
        for index, text, label, _ in self._rows_with_lines(bad, None):
            if not held_out(index, self.valid_fraction):
                yield text, label

    def cache_key(self, tokenizer_options: dict) -> str:
        """The cache key of a scan with these tokeniser options."""
        options = (self.text_column, self.label_column, self.valid_fraction, self.limit, self.skip_bad_rows)
        reading = (self.delimiter, self.max_chars, self.max_valid_rows, self.sample_bytes)
        return fingerprint(self.path).key(*options, *reading, sorted(tokenizer_options.items()))

    def scan(self, tokenizer_options: dict, *, cache: bool = True) -> tuple[ScanResult, TextTokenizer]:
        """The first pass (or its cached result) and the tokeniser trained on the training texts with
        ``tokenizer_options`` (:meth:`TextTokenizer.train`'s keyword arguments); DataError for a bad row (without
        ``skip_bad_rows``), no training rows, or fewer than two labels."""
        directory = stream_cache_dir() / self.cache_key(tokenizer_options)
        content = file_content_key(self.path) if cache else ""  # an edit keeping size and mtime: a stale entry
        cached = (
            read_scan(directory, SCAN_FILE, ScanResult, content, lambda d: (TextTokenizer.load(d),)) if cache else None
        )
        if cached is not None:
            return cached
        started = time.monotonic()
        result, tokenizer = self._scan(tokenizer_options)
        result.seconds = time.monotonic() - started
        if cache:
            save_scan(directory, SCAN_FILE, result, content, tokenizer.save)
        return result, tokenizer

    def _scan(self, tokenizer_options: dict) -> tuple[ScanResult, TextTokenizer]:
        bad = BadRows() if self.skip_bad_rows else None
        reporter = ReadProgress(self.path, enabled=self.progress)
        counts: Counter[str] = Counter()
        valid_texts: list[str] = []
        valid_labels: list[str] = []
        held, last = [0], {"index": -1, "line": 0, "cut": False}
        positions: list[int] = []

        def heard(position: int) -> None:
            positions.append(position)
            reporter.bytes_read(position)

        def train_texts() -> Iterator[str]:
            for index, text, label, line in self._rows_with_lines(bad, heard):
                if self.sample_bytes is not None and positions and positions[-1] >= self.sample_bytes:
                    last["cut"] = True
                    return
                last["index"], last["line"] = index, line
                reporter.rows = index + 1
                if held_out(index, self.valid_fraction):
                    held[0] += 1
                    if len(valid_texts) < self.max_valid_rows:
                        valid_texts.append(text)
                        valid_labels.append(label)
                    continue
                counts[label] += 1
                yield text

        tokenizer = TextTokenizer.train(train_texts(), **tokenizer_options)
        total, sampled = sum(counts.values()), 0
        if last["cut"]:  # the rest of the file: its lines counted, not parsed
            sampled = positions[-1]
            rest = count_lines(self.path, last["line"])
            start = last["index"] + 1
            stop = start + rest if self.limit is None else min(start + rest, self.limit)
            tail_held = held_out_count(start, stop, self.valid_fraction)
            held[0] += tail_held
            total += stop - start - tail_held
            reporter.rows = stop
        note = f"; {bad.summary()}" if bad is not None and bad.count else ""
        reporter.done(
            note + (f"; the rows after the first {sampled / 2**20:.0f} MB counted, not read" if sampled else "")
        )
        self._check_scan(total, held[0], counts, valid_texts, sampled)
        result = ScanResult(
            label_names=sorted(counts),
            label_counts=dict(counts),
            train_rows=total,
            valid_rows=held[0],
            valid_texts=valid_texts,
            valid_labels=valid_labels,
            bad_rows=bad.count if bad is not None else 0,
            bad_examples=list(bad.examples) if bad is not None else [],
            sampled_bytes=sampled,
        )
        return result, tokenizer

    def _check_scan(
        self, total: int, held: int, counts: Counter[str], valid_texts: list[str], sampled: int = 0
    ) -> None:
        """Refuse a scan with no training row, a single label, or no validation row; a sampled scan's message
        says that it read only the first ``sampled`` bytes (:func:`scan_prefix_note`)."""
        if total == 0:
            raise DataError(f"{self.path}:1: no data rows" + (" left for training" if held else ""))
        rows, note = ("every row the scan read", scan_prefix_note(sampled)) if sampled else ("every row", "")
        if len(counts) < 2:
            (label,) = counts
            raise DataError(
                f"{self.path}: {rows} has the label {label!r} in column {self.label_column!r}; "
                f"a classifier needs at least 2 different labels to learn from{note}"
            )
        if not valid_texts:
            raise DataError(
                f"{self.path}: holding out {self.valid_fraction:.0%} of its rows left no validation row{note}"
            )
