"""A classifier's training file read as a stream: the rows ``attnkit train classify --data big.csv`` trains on when
the file is large (or ``--streaming always``) (layer 5).

The file is read once for its tokeniser, label counts and validation rows (cached), then the training rows are
encoded once and kept on disk as ids (:class:`~attnkit.data.id_cache.EncodedStride`): memory holds the model, a
shuffle pool and a window, never the file. Under torchrun each rank trains on its own stride of rows, every rank
the same number of steps.

Shape glossary:
    B  documents   S  sentences   W  words of a sentence   T  tokens
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

from attnkit.data.batching import EncodedDataset
from attnkit.data.cache import stream_cache_dir
from attnkit.data.classify.text_stream import TextFileStream
from attnkit.data.classify.tokenization import TextTokenizer
from attnkit.data.id_cache import LABELLED_DOCUMENTS, LABELLED_IDS, EncodedStride, file_content_key, id_cache_dir
from attnkit.data.reading import DataError
from attnkit.data.streaming import StreamedBatches, StreamOptions, scan_prefix_note
from attnkit.runtime.devices import autocast, device_of, on_device
from attnkit.tasks.classify.config import ClassifierConfig
from attnkit.tasks.classify.encoding import TextEncoder, make_batches
from attnkit.tasks.classify.objective import classification_objective
from attnkit.training.run_report import replica

__all__ = ["StreamedRows", "evaluate_file"]

SELF_TRAINED = ("word2vec", "fasttext")


class StreamedRows:
    """``stream``'s rows for :func:`~attnkit.tasks.classify.training.train_classifier`; ``test_path`` is evaluated
    a chunk at a time after training. Self-trained embeddings (word2vec, fasttext) need the texts in memory."""

    def __init__(self, stream: TextFileStream, *, test_path: str | Path | None = None) -> None:
        self.stream, self.name, self.test_path = stream, stream.name, test_path
        self.texts: list[str] = []  # self-trained vectors are refused

    def open(self, config: ClassifierConfig) -> tuple[list[str], bool]:
        if config.embeddings in SELF_TRAINED:
            raise ValueError(
                f"--embeddings {config.embeddings} trains vectors on the texts in memory; with a streamed file use "
                "glove, a vector file or random, or --streaming never"
            )
        started = time.monotonic()
        self.options = dict(kind=config.tokenizer, vocab_size=config.vocab_size, min_frequency=config.min_frequency)
        self.scan, self.scanned = self.stream.scan(self.options)
        self.load_seconds = time.monotonic() - started
        self.index = {name: i for i, name in enumerate(self.scan.label_names)}
        return self.scan.label_names, True

    def tokenizer(self, config: ClassifierConfig) -> TextTokenizer:
        return self.scanned

    def describe(self) -> None:
        if replica()[0] != 0:
            return
        scan, say = self.scan, functools.partial(print, flush=True)
        source = "from the cache" if scan.cached else f"in {scan.seconds:.1f} s"
        say(f"{self.stream.path}: {scan.train_rows:,} training rows, {scan.valid_rows:,} held out ({source})")
        if scan.valid_rows > len(scan.valid_texts):  # the hash holds rows out; memory caps what validation reads
            say(f"validation reads {len(scan.valid_texts):,} of the {scan.valid_rows:,} held-out rows (the first it "
                "met); the others are neither trained on nor validated on")  # fmt: skip
        say(scan.counts_line())
        if scan.bad_rows:
            say(f"skipped {scan.bad_rows:,} bad rows (first: {scan.bad_examples[0]})")

    def batches(
        self, encoder: TextEncoder, *, batch_size: int, bucketed: bool, seed: int
    ) -> tuple[Callable, Callable | None]:
        """``(train, valid)``: the training rows as ids on disk, batched on the stream; the validation rows (this
        rank's share) encoded when first validated, after step 1."""
        rank, world = replica()
        scan, config, tokenizer, collate = self.scan, encoder.config, encoder.tokenizer, encoder.collate()
        codec, length = _STREAMED_FORMS[config.model]
        directory = _id_dir(self.stream, self.options, config, tokenizer, codec, world=world, rank=rank)
        limits = (tokenizer.vocab_size, *([None] * (codec.sequences - 1)), len(scan.label_names))  # ids, lengths, label
        self.ids = EncodedStride(self.stream.training_rows, lambda rows: self._encode(encoder, rows), codec, directory,
                                 world=world, rank=rank, limit=-(-scan.train_rows // world),
                                 content=lambda: file_content_key(self.stream.path), limits=limits)  # fmt: skip
        options = StreamOptions(batch_size=batch_size, bucketed=bucketed, seed=seed)
        self.train = StreamedBatches(self.ids, scan.train_rows, encode=list, length=length, collate=collate,
                                     options=options, world=world, rank=rank, strided=True)  # fmt: skip
        valid = zip(scan.valid_texts, scan.valid_labels, strict=True)
        kept = [(t, self.index[y]) for t, y in valid if y in self.index][rank::world]
        encoded: list = []

        def valid_batches(epoch: int = 0):
            if not encoded:
                valid_set = EncodedDataset(encoder.encode([t for t, _ in kept]), [y for _, y in kept])
                encoded.append(make_batches(valid_set, collate, 2 * batch_size, shuffle=False))
            return encoded[0](epoch)

        return self.train, valid_batches

    def _encode(self, encoder: TextEncoder, rows: list[tuple[str, str]]) -> list:
        """``rows`` (text, label) as (ids, label id) items."""
        for _, label in rows:
            if label not in self.index:  # a sampled scan saw only the file's first megabytes
                raise DataError(
                    f"{self.stream.path}: label {label!r} first occurs after the rows the scan read (its labels: "
                    f"{', '.join(self.scan.label_names)}){scan_prefix_note(self.scan.sampled_bytes)}"
                )
        labels = [self.index[label] for _, label in rows]
        return list(zip(encoder.encode([text for text, _ in rows]), labels, strict=True))

    def test_metrics(
        self, model: torch.nn.Module, encoder: TextEncoder, *, batch_size: int, precision: str
    ) -> dict[str, float] | None:
        if self.test_path is None:
            return None
        return evaluate_file(model, encoder, self.test_path, self.stream, self.index, batch_size=batch_size,
                             precision=precision)  # fmt: skip

    def details(self, *, bucketed: bool) -> dict:
        scan = self.scan
        return {
            "streamed": True,
            "load_seconds": round(self.load_seconds, 2),
            "scan_cached": scan.cached,
            "train_documents": scan.train_rows,
            "valid_documents": len(scan.valid_texts),
            "held_out_rows": scan.valid_rows,
            "bad_rows_skipped": scan.bad_rows,
            "label_counts": scan.label_counts,
            "bucketed": bucketed,
            "steps_per_epoch": len(self.train),
            "scan_sampled_bytes": scan.sampled_bytes,
            "epochs_read_as_ids": self.ids.epochs_from_cache,
        }


def evaluate_file(
    model: torch.nn.Module,
    encoder: TextEncoder,
    path: str | Path,
    stream: TextFileStream,
    index: dict[str, int],
    *,
    batch_size: int = 64,
    precision: str = "fp32",
    chunk_rows: int = 8192,
) -> dict[str, float]:
    """Accuracy, loss and count of ``model`` on every row of the file ``path`` (``stream``'s columns), read and
    scored ``chunk_rows`` at a time."""
    from attnkit.data.classify.files import iter_rows

    def batches() -> Iterator:
        chunk: list[tuple[str, int]] = []
        columns = {"text_column": stream.text_column, "label_column": stream.label_column}
        rows = iter_rows(path, **columns, delimiter=stream.delimiter, max_chars=stream.max_chars)
        for line, text, label in rows:
            if label not in index:
                raise DataError(f"{path}:{line}: label {label!r} does not occur in the training file {stream.path}")
            chunk.append((text, index[label]))
            if len(chunk) == chunk_rows:
                yield from _chunk_batches(encoder, chunk, batch_size)
                chunk = []
        if chunk:
            yield from _chunk_batches(encoder, chunk, batch_size)

    device = device_of(model)
    with autocast(device, precision):
        return classification_objective(model).evaluate(on_device(batches(), device))


def _id_dir(
    stream: TextFileStream, options: dict, config: ClassifierConfig, tokenizer: TextTokenizer, codec, *, world: int,
    rank: int,
) -> Path:  # fmt: skip
    """Where this rank's training rows are kept as ids: beside the scan, keyed by everything the ids depend on."""
    reading = (config.model, config.max_tokens, config.max_sentences, config.max_words, config.punctuated,
               config.words_per_pseudo_sentence, tuple(config.label_names))  # fmt: skip
    scan_dir = stream_cache_dir() / stream.cache_key(options)
    return id_cache_dir(scan_dir, tokenizer.to_str(), codec.name, reading, world, rank)


def _flat_length(item: tuple[list[int], int]) -> int:
    """Tokens in a pooled classifier's item: ``[T]`` ids."""
    return len(item[0])


def _document_length(item: tuple[list[list[int]], int]) -> int:
    """Tokens in a HAN's item: ``[S][W]`` ids."""
    return sum(len(sentence) for sentence in item[0])


def _chunk_batches(encoder: TextEncoder, chunk: list[tuple[str, int]], batch_size: int) -> Iterator:
    dataset = EncodedDataset(encoder.encode([t for t, _ in chunk]), [y for _, y in chunk])
    return iter(make_batches(dataset, encoder.collate(), batch_size, shuffle=False)(0))


# How each model family's encoded rows are stored in the id cache and measured for bucketing, by
# ``ClassifierConfig.model`` (as ``encoding.FAMILIES`` holds how they are encoded).
_STREAMED_FORMS = {"han": (LABELLED_DOCUMENTS, _document_length), "pooled": (LABELLED_IDS, _flat_length)}
