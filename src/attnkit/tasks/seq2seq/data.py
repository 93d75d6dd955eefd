"""The pairs a seq2seq run trains and is evaluated on (layer 5): a built-in data set (``cmudict``, ``dates``,
``bible-en-es``) or the user's TSV/CSV/JSONL pair files, and the references each source is scored against."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from attnkit.data.seq2seq import Seq2SeqData, data_set_names, load_data_set, load_pair_files, read_pairs
from attnkit.data.seq2seq.dataset import Pair
from attnkit.tasks.seq2seq.config import Seq2SeqConfig

__all__ = ["LEVELS", "evaluation_data", "load_data", "pairs_with_references", "subset"]

LEVELS = ("char", "symbol", "subword")


def load_data(
    data: str,
    *,
    valid: str | None = None,
    test: str | None = None,
    source_column: str = "source",
    target_column: str = "target",
    source_level: str = "char",
    target_level: str = "char",
    delimiter: str | None = None,
) -> Seq2SeqData:
    """A built-in data set by name (``cmudict``, ``dates``, ``bible-en-es``) or a TSV/CSV/JSONL pair file (without
    ``valid``, a hashed 5% of the training sources is held out; without ``test`` nothing is tested)."""
    if data in data_set_names():
        if delimiter is not None:
            raise ValueError(f"--delimiter is for pair files; the built-in data set {data!r} needs none")
        given = [flag for flag, value in (("--valid", valid), ("--test", test)) if value is not None]
        if given:
            raise ValueError(
                f"{' and '.join(given)} are for pair files; the built-in data set {data!r} has its own splits"
            )
        return load_data_set(data)
    check_levels(source_level, target_level)
    if not Path(data).exists():
        raise FileNotFoundError(f"{data}: neither a built-in data set ({', '.join(data_set_names())}) nor a file")
    levels = {"source_level": source_level, "target_level": target_level}
    keys = {"source_key": source_column, "target_key": target_column, "delimiter": delimiter}
    return load_pair_files(data, valid, test, **levels, **keys)


def check_levels(source: str, target: str, *names: str) -> None:
    """Refuse a source or target level that is not one of :data:`LEVELS` (``names``: how the message calls them)."""
    for name, level in zip(names or ("source_level", "target_level"), (source, target), strict=True):
        if level not in LEVELS:
            raise ValueError(f"{name} must be one of {', '.join(LEVELS)}, got {level!r}")


def subset(data: Seq2SeqData, limit: int) -> Seq2SeqData:
    """The first ``limit`` training pairs and at most ``max(limit // 4, 1)`` validation and test pairs (smoke runs)."""
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    held = max(limit // 4, 1)
    return dataclasses.replace(data, train=data.train[:limit], valid=data.valid[:held], test=data.test[:held])


def pairs_with_references(pairs: Sequence[Pair]) -> tuple[list[Pair], list[list[str]]]:
    """One pair per distinct source (its first), and every target the pairs give that source, in order."""
    references: dict[str, list[str]] = {}
    for source, target in pairs:
        targets = references.setdefault(source, [])
        if target not in targets:
            targets.append(target)
    return [(source, targets[0]) for source, targets in references.items()], list(references.values())


def evaluation_data(
    config: Seq2SeqConfig,
    data: str | None = None,
    *,
    split: str | None = None,
    source_column: str = "source",
    target_column: str = "target",
    delimiter: str | None = None,
) -> tuple[list[Pair], list[list[str]], str]:
    """The pairs to evaluate a checkpoint on, each one's acceptable references, and a label for them: a built-in
    data set's ``split`` (default test), or every distinct source of a pair file with all its targets; ``data`` None
    means the data set the checkpoint was trained on."""
    name = config.data if data is None else data
    if name in data_set_names():
        split = split or "test"
        if split not in ("valid", "test"):
            raise ValueError(f"split must be 'valid' or 'test', got {split!r}")
        if delimiter is not None:
            raise ValueError(f"--delimiter is for pair files; the built-in data set {name!r} needs none")
        built_in = load_data_set(name)
        return built_in.split(split), built_in.references_for(split), f"{name} {split} split"
    if data is None:
        raise ValueError(
            f"the checkpoint was trained on {config.data!r}, not a built-in data set: give the pairs with --data FILE"
        )
    if split is not None:
        raise ValueError(f"--split is for built-in data sets; the file {data} is evaluated whole")
    keys = {"source_key": source_column, "target_key": target_column, "delimiter": delimiter}
    pairs, references = pairs_with_references(read_pairs(data, **keys))
    return pairs, references, data
