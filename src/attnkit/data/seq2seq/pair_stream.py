"""A pair file too large for memory: a streaming pass for its tokenisers and validation pairs, cached; then its
training pairs as a stream, epoch after epoch (layer 5).

    stream = PairFileStream("pairs.tsv", source_level="subword", target_level="subword")
    scan, source_tok, target_tok = stream.scan(vocab_size=8000)
    for source, target in stream.training_pairs(): ...

Validation pairs are chosen by a hash of their *source* (:func:`attnkit.data.streaming.held_out` on the text), so
every target of a held-out source is held out with it and scored as one of its references, as
:func:`~attnkit.data.seq2seq.files.load_pair_files` does in memory. The tokenisers learn from the training pairs
while they stream by: one pass for a shared tokeniser or for character/symbol vocabularies (which count symbols
as they go); a second pass for a separate subword target tokeniser (``train_from_iterator`` takes one stream).
The result is cached under ``$ATTNKIT_CACHE/streams/KEY/``, KEY made of the file's fingerprint and the options.

**Sampled scan** (a file larger than ``sample_bytes``, 64 MB by default): as for labelled texts
(:mod:`attnkit.data.classify.text_stream`), the tokenisers and the validation pairs come from the file's first
``sample_bytes``. The rest's lines are counted and the training pairs among them bounded by
:func:`training_pairs_bound` (the held-out share of the rest is not known without hashing each source). The carve
itself is unchanged (the hash of each source, in every epoch), so a held-out source never reaches training.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from attnkit.data.cache import stream_cache_dir
from attnkit.data.id_cache_entry import file_content_key
from attnkit.data.reading import DataError
from attnkit.data.records import BadRows, check_delimiter, fingerprint
from attnkit.data.seq2seq.dataset import Pair
from attnkit.data.seq2seq.files import FORMATS, iter_pairs
from attnkit.data.seq2seq.tokenization import Tokenizer, build_tokenizer, load_tokenizers, save_tokenizers
from attnkit.data.seq2seq.vocab import Vocab
from attnkit.data.streaming import (
    SAMPLE_BYTES,
    ReadProgress,
    count_lines,
    held_out,
    read_scan,
    save_scan,
    scan_prefix_note,
)

__all__ = ["PairFileStream", "PairScan", "training_pairs_bound"]

SCAN_FILE = "pairs_scan.json"


@dataclass
class PairScan:
    """What the first pass learnt: pair counts and the held-out pairs kept for validation (at most
    ``max_valid_pairs``), the bad rows skipped, and how long it took (0 from the cache). ``sampled_bytes``: the
    prefix a sampled scan read (0: the whole file); the counts then include the rest's lines, estimated (see
    :func:`training_pairs_bound`)."""

    train_pairs: int
    valid_pairs: int
    valid: list[list[str]]
    bad_rows: int = 0
    bad_examples: list[str] = field(default_factory=list)
    seconds: float = 0.0
    cached: bool = False
    sampled_bytes: int = 0


class PairFileStream:
    """A TSV/CSV/JSONL/Parquet pair file read as a stream (see the module docstring); ``limit``: only the first
    good pairs; ``delimiter`` as :func:`~attnkit.data.seq2seq.files.iter_pairs` reads it."""

    def __init__(
        self,
        path: str | Path,
        *,
        source_key: str = "source",
        target_key: str = "target",
        source_level: str = "char",
        target_level: str = "char",
        valid_fraction: float = 0.05,
        limit: int | None = None,
        skip_bad_rows: bool = False,
        max_valid_pairs: int = 5_000,
        progress: bool = True,
        delimiter: str | None = None,
        sample_bytes: int | None = SAMPLE_BYTES,
    ) -> None:
        if not 0 < valid_fraction < 1:
            raise ValueError(f"valid_fraction must lie in (0, 1) for a streamed file, got {valid_fraction}")
        self.path = Path(path)
        if delimiter is not None:  # refused now, before a run writes anything
            check_delimiter(self.path, FORMATS.get(self.path.suffix.lower()), delimiter)
        self.source_key, self.target_key, self.delimiter = source_key, target_key, delimiter
        self.source_level, self.target_level = source_level, target_level
        self.valid_fraction, self.limit, self.skip_bad_rows = valid_fraction, limit, skip_bad_rows
        self.max_valid_pairs, self.progress = max_valid_pairs, progress
        self.sample_bytes = sample_bytes if sample_bytes and self.path.stat().st_size > sample_bytes else None

    @property
    def shared_vocab(self) -> bool:
        """Both sides share one subword tokeniser (as a pair file read in memory does)."""
        return self.source_level == self.target_level == "subword"

    def _pairs(self, bad: BadRows | None, reporter: ReadProgress | None = None) -> Iterator[tuple[int, int, Pair]]:
        """``(index, line, pair)`` for every good pair up to ``limit``; a bad row raises ``file:line: reason``."""
        index = 0
        progress = reporter.bytes_read if reporter is not None else None
        keys = {"source_key": self.source_key, "target_key": self.target_key, "delimiter": self.delimiter}
        for line, row in iter_pairs(self.path, **keys, progress=progress):
            if isinstance(row, str):
                message = f"{self.path}:{line}: {row}"
                if bad is None:
                    raise DataError(message)
                bad.add(message)
                continue
            if self.limit is not None and index >= self.limit:
                return
            if reporter is not None:
                reporter.rows = index + 1
            yield index, line, row
            index += 1

    def is_held_out(self, source: str) -> bool:
        """Whether pairs with this source belong to the validation split."""
        return held_out(0, self.valid_fraction, salt=f"attnkit-pairs:{source}")

    def training_pairs(self) -> Iterator[Pair]:
        """The training pairs in file order (held-out sources left out)."""
        bad = BadRows() if self.skip_bad_rows else None
        for _, _, pair in self._pairs(bad):
            if not self.is_held_out(pair[0]):
                yield pair

    def cache_key(self, vocab_size: int) -> str:
        """The cache key of a scan with tokenisers of ``vocab_size``."""
        options = (self.source_key, self.target_key, self.delimiter, self.source_level, self.target_level,
                   self.valid_fraction)  # fmt: skip
        return fingerprint(self.path).key(*options, self.limit, self.skip_bad_rows, self.max_valid_pairs, vocab_size,
                                          self.sample_bytes)  # fmt: skip

    def scan(self, *, vocab_size: int = 8000, cache: bool = True) -> tuple[PairScan, Tokenizer, Tokenizer]:
        """The first pass (or its cached result) and the ``(source, target)`` tokenisers (one object twice when
        shared); DataError for a bad row (without ``skip_bad_rows``), no training pair or no validation pair."""
        directory = stream_cache_dir() / self.cache_key(vocab_size)
        content = file_content_key(self.path) if cache else ""  # an edit keeping size and mtime: a stale entry
        cached = read_scan(directory, SCAN_FILE, PairScan, content, load_tokenizers) if cache else None
        if cached is not None:
            return cached
        started = time.monotonic()
        result, source, target = self._scan(vocab_size)
        result.seconds = time.monotonic() - started
        if cache:
            save_scan(directory, SCAN_FILE, result, content, lambda d: save_tokenizers(d, source, target))
        return result, source, target

    def _scan(self, vocab_size: int) -> tuple[PairScan, Tokenizer, Tokenizer]:
        bad = BadRows() if self.skip_bad_rows else None
        reporter = ReadProgress(self.path, enabled=self.progress)
        valid: list[list[str]] = []
        counts = {"train": 0, "valid": 0, "index": -1, "line": 0, "cut": 0}
        symbols: Counter[str] = Counter()  # the target side's, when it is characters or symbols
        repeats: Counter[int] = Counter()  # pairs per source in a sampled prefix (by the source's hash)

        def texts() -> Iterator[str]:
            for index, line, (source, target) in self._pairs(bad, reporter):
                if self.sample_bytes is not None:
                    if reporter.position >= self.sample_bytes:
                        counts["cut"] = reporter.position  # the rest is counted by its lines, not read
                        return
                    repeats[hash(source)] += 1
                counts["index"], counts["line"] = index, line
                if self.is_held_out(source):
                    counts["valid"] += 1
                    if len(valid) < self.max_valid_pairs:
                        valid.append([source, target])
                    continue
                counts["train"] += 1
                yield source
                if self.shared_vocab:
                    yield target
                elif self.target_level != "subword":
                    Vocab.count_into(symbols, target, self.target_level)  # type: ignore[arg-type]

        source_tok = build_tokenizer(texts(), self.source_level, vocab_size=vocab_size)  # type: ignore[arg-type]
        learnt = counts["train"]
        if counts["cut"]:
            start = counts["index"] + 1
            stop = start + count_lines(self.path, counts["line"])
            stop = stop if self.limit is None else min(stop, self.limit)
            multiplicity = sum(c * c for c in repeats.values()) / max(sum(repeats.values()), 1)
            counts["train"] += training_pairs_bound(stop - start, self.valid_fraction, multiplicity=multiplicity)
            counts["valid"] += round((stop - start) * self.valid_fraction)
            reporter.rows = stop
        note = f"; {bad.summary()}" if bad is not None and bad.count else ""
        cut = f"; the pairs after the first {counts['cut'] / 2**20:.0f} MB counted, not read" if counts["cut"] else ""
        reporter.done(note + cut)
        if counts["train"] == 0:
            raise DataError(f"{self.path}: no training pairs" + (" left after holding out" if counts["valid"] else ""))
        if not valid:
            raise DataError(f"{self.path}: holding out {self.valid_fraction:.0%} of its sources left no validation "
                            f"pair; give more pairs{scan_prefix_note(counts['cut'])}")  # fmt: skip
        if self.shared_vocab:
            target_tok = source_tok
        elif self.target_level != "subword":
            target_tok = Vocab.from_counts(symbols, level=self.target_level)  # type: ignore[arg-type]
        else:  # a separate subword target tokeniser: a second pass over the sample's training targets
            targets = (t for s, t in itertools.islice(self.training_pairs(), learnt))
            target_tok = build_tokenizer(targets, "subword", vocab_size=vocab_size)
        examples = list(bad.examples) if bad is not None else []
        result = PairScan(counts["train"], counts["valid"], valid, bad.count if bad is not None else 0, examples,
                          sampled_bytes=counts["cut"])  # fmt: skip
        return result, source_tok, target_tok


def training_pairs_bound(lines: int, fraction: float, *, multiplicity: float = 1.0, deviations: float = 6.0) -> int:
    """How many training pairs ``lines`` unread lines are taken to hold: the lines less the share ``fraction`` the
    source hash is expected to hold out, plus ``deviations`` standard deviations of that share. Sources are held
    out whole, so the variance is the binomial one of the lines times ``multiplicity``, the pairs a source has on
    average over the pairs (Σc²/Σc, measured on the prefix). The bound is above the true count unless the sources
    repeat much more in the rest than in the prefix; a rank's stride reads its first pairs again to fill it."""
    if lines <= 0:
        return 0
    spread = deviations * math.sqrt(lines * fraction * (1 - fraction) * max(multiplicity, 1.0))
    return min(lines, math.ceil(lines * (1 - fraction) + spread))
