"""Generated training files for ``bench.data_scale`` (#25), from fixed seeds: labelled texts as CSV or JSONL and
sentence pairs as TSV, of a given number of rows or bytes.

Texts draw 10-60 words from a 5,000-word Zipf vocabulary with one cue word per label (about 200 bytes a row).
Large files repeat rows drawn at random from a pool of 100,000 distinct ones, which costs the reader and the
tokeniser the same per byte as fresh rows and writes a gigabyte in about a minute. A pair's target "translates" its source word by word (``w12`` -> ``v12``) in reverse order.
"""

from __future__ import annotations

import csv
import itertools
import json
import random
from collections.abc import Iterator
from pathlib import Path

__all__ = ["write_csv", "write_jsonl", "write_pairs"]

_WORDS = 5000
_CUES = {"pos": ["good", "great", "love"], "neg": ["bad", "awful", "hate"]}


def _labelled(generator: random.Random) -> Iterator[tuple[str, str]]:
    """``(text, label)`` rows, each drawn afresh."""
    vocabulary = [f"w{i}" for i in range(_WORDS)]
    cumulative = list(itertools.accumulate(1 / (i + 1) for i in range(_WORDS)))
    while True:
        label = "pos" if generator.random() < 0.5 else "neg"
        words = generator.choices(vocabulary, cum_weights=cumulative, k=generator.randint(10, 60))
        words[generator.randrange(len(words))] = generator.choice(_CUES[label])
        yield " ".join(words), label


def write_csv(path: Path, rows: int, seed: int = 0, pool: int = 100_000) -> Path:
    """A two-label CSV (header ``text,label``) of ``rows`` rows (drawn from a pool of ``pool`` distinct rows when
    ``rows`` is larger)."""
    generator = random.Random(seed)
    distinct = list(itertools.islice(_labelled(generator), min(rows, pool)))
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        writer.writerows(distinct)
        for start in range(len(distinct), rows, 10_000):
            writer.writerows(generator.choices(distinct, k=min(10_000, rows - start)))
    return path


def _until(path: Path, size: int, lines: list[str], generator: random.Random, header: str = "") -> Path:
    """Write ``header`` then lines picked at random from ``lines`` until the file holds ``size`` bytes."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        handle.write(header)
        written = len(header.encode())
        while written < size:
            chunk = "".join(generator.choices(lines, k=10_000))
            handle.write(chunk)
            written += len(chunk.encode())
    return path


def write_jsonl(path: Path, size: int, seed: int = 0, pool: int = 100_000) -> Path:
    """A two-label JSONL file (``{"text": ..., "label": ...}`` per line) of about ``size`` bytes."""
    generator = random.Random(seed)
    rows = itertools.islice(_labelled(generator), pool)
    lines = [json.dumps({"text": text, "label": label}) + "\n" for text, label in rows]
    return _until(path, size, lines, generator)


def write_pairs(path: Path, size: int, seed: int = 0, pool: int = 100_000) -> Path:
    """A TSV of sentence pairs (header ``source<TAB>target``) of about ``size`` bytes (or ``size`` rows when
    ``size`` is under a million: a slice that fits in memory)."""
    generator = random.Random(seed)
    texts = (text for text, _ in _labelled(generator))
    lines = []
    for text in itertools.islice(texts, pool):
        words = text.split()[: generator.randint(5, 30)]
        lines.append(f"{' '.join(words)}\t{' '.join('v' + w[1:] for w in reversed(words))}\n")
    if size >= 1_000_000:
        return _until(path, size, lines, generator, header="source\ttarget\n")
    with path.open("w", encoding="utf-8", newline="") as handle:
        handle.write("source\ttarget\n" + "".join(generator.choices(lines, k=size)))
    return path
