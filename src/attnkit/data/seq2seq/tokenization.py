"""Tokenisers for a task's two sides: built from the training split, saved and loaded as JSON (layer 5).

    source_tok, target_tok = build_tokenizers(data)   # at the task's levels: char, symbol or subword
    save_tokenizers(run_dir, source_tok, target_tok)  # tokenizer.json, or source_/target_tokenizer.json

A task whose sides share one tokeniser (``bible-en-es``) is saved as a single ``tokenizer.json``. Both kinds,
:class:`~attnkit.data.seq2seq.vocab.Vocab` and :class:`~attnkit.data.seq2seq.subword.SubwordTokenizer`, share the
special ids and the ``encode``/``encode_batch``/``decode``/``tokens``/``save`` methods.
"""

from __future__ import annotations

import json
from pathlib import Path

from attnkit.data.reading import DataError
from attnkit.data.seq2seq.dataset import Level, Seq2SeqData
from attnkit.data.seq2seq.subword import SubwordTokenizer
from attnkit.data.seq2seq.vocab import Vocab

__all__ = [
    "SHARED_FILENAME",
    "SOURCE_FILENAME",
    "TARGET_FILENAME",
    "Tokenizer",
    "build_tokenizer",
    "build_tokenizers",
    "load_tokenizer",
    "load_tokenizers",
    "save_tokenizers",
    "tokenizer_text",
]

Tokenizer = Vocab | SubwordTokenizer
SHARED_FILENAME = "tokenizer.json"
SOURCE_FILENAME = "source_tokenizer.json"
TARGET_FILENAME = "target_tokenizer.json"


def build_tokenizer(texts: list[str], level: Level, *, vocab_size: int = 8000) -> Tokenizer:
    """A tokeniser of ``level`` trained on ``texts``; ``vocab_size`` applies to subwords only."""
    if level == "subword":
        return SubwordTokenizer.train(texts, vocab_size=vocab_size)
    return Vocab.build(texts, level=level)


def build_tokenizers(data: Seq2SeqData, *, vocab_size: int = 8000) -> tuple[Tokenizer, Tokenizer]:
    """``(source, target)`` tokenisers from the training split, at the task's levels; with ``data.shared_vocab``
    one tokeniser trained on both sides, returned twice (the same object)."""
    sources = [s for s, _ in data.train]
    targets = [t for _, t in data.train]
    if data.shared_vocab:
        if data.source_level != data.target_level:
            raise ValueError(f"a shared vocabulary needs one level, got {data.source_level}/{data.target_level}")
        shared = build_tokenizer(sources + targets, data.source_level, vocab_size=vocab_size)
        return shared, shared
    return (
        build_tokenizer(sources, data.source_level, vocab_size=vocab_size),
        build_tokenizer(targets, data.target_level, vocab_size=vocab_size),
    )


def load_tokenizer(path: str | Path) -> Tokenizer:
    """Read a tokeniser file of either kind (an attnkit vocabulary or a Hugging Face ``tokenizer.json``);
    DataError ``file: ...`` when the file is missing or is neither."""
    path = Path(path)
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DataError(f"{path}: not a tokenizer file ({error})") from None
    try:
        if isinstance(content, dict) and "model" in content:
            return SubwordTokenizer.from_dict(content)
        return Vocab.from_dict(content)
    except Exception as error:  # ValueError/KeyError from ours; tokenizers raises a bare Exception
        raise DataError(f"{path}: not a usable tokenizer ({error})") from None


def save_tokenizers(directory: str | Path, source: Tokenizer, target: Tokenizer) -> list[Path]:
    """Write the tokenisers into ``directory``: one ``tokenizer.json`` if ``source is target``, else two files."""
    directory = Path(directory)
    if source is target:
        return [source.save(directory / SHARED_FILENAME)]
    return [source.save(directory / SOURCE_FILENAME), target.save(directory / TARGET_FILENAME)]


def tokenizer_text(tokenizer: Tokenizer) -> str:
    """The tokeniser as one canonical JSON string (what a cache of its ids is keyed by)."""
    return json.dumps(tokenizer.to_dict(), sort_keys=True)


def load_tokenizers(directory: str | Path) -> tuple[Tokenizer, Tokenizer]:
    """Inverse of :func:`save_tokenizers` (a shared tokeniser comes back as the same object twice); DataError when
    ``directory`` holds neither layout."""
    directory = Path(directory)
    if (directory / SOURCE_FILENAME).is_file() or (directory / TARGET_FILENAME).is_file():
        return load_tokenizer(directory / SOURCE_FILENAME), load_tokenizer(directory / TARGET_FILENAME)
    if (directory / SHARED_FILENAME).is_file():
        shared = load_tokenizer(directory / SHARED_FILENAME)
        return shared, shared
    raise DataError(f"{directory}: no {SHARED_FILENAME} or {SOURCE_FILENAME}/{TARGET_FILENAME}")
