"""Train a classifier on a file read as a stream: what ``attnkit train classify --data big.csv`` runs when the
file is large (or ``--streaming always``) (layer 5).

The file is read once for its tokeniser, label counts and validation rows
(:class:`~attnkit.data.classify.text_stream.TextFileStream`, cached), then once per epoch for the training rows, which
are encoded once, kept on disk as ids (:class:`~attnkit.data.id_cache.EncodedStride`: the first epoch reads the
text and writes them, later epochs and runs read them), and batched by
:class:`~attnkit.data.streaming.StreamedBatches`: memory holds the model, a shuffle pool and a window, never the
file. Under torchrun each rank trains on its own stride of rows,
every rank the same number of steps. The model, the loop, the checkpoints and ``metrics.json`` are those of
:func:`~attnkit.tasks.classify.training.train_classifier`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
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
from attnkit.tasks.classify.training import TOKENIZER_DIR, fit_classifier, prepared_model, run_report, run_tokenizer
from attnkit.training.init_from import InitFrom
from attnkit.training.loop import FitConfig
from attnkit.training.run_report import TrainReport, replica

__all__ = ["evaluate_file", "train_classifier_streamed"]

SELF_TRAINED = ("word2vec", "fasttext")


def _say(message: str) -> None:
    if replica()[0] == 0:
        print(message, flush=True)


def train_classifier_streamed(
    stream: TextFileStream,
    config: ClassifierConfig,
    fit_config: FitConfig,
    *,
    out_dir: str | Path,
    batch_size: int = 32,
    resume: bool = False,
    bucketed: bool = True,
    device: str | torch.device = "auto",
    test_path: str | Path | None = None,
    stream_options: StreamOptions | None = None,
    init_from: InitFrom | None = None,
) -> TrainReport:
    """Train ``config``'s model on ``stream``'s training rows; keep the best checkpoint by validation accuracy.

    Writes what :func:`~attnkit.tasks.classify.training.train_classifier` writes; ``metrics.json``'s details add
    ``load_seconds`` (the first pass, 0 from the cache), the row counts and the bad rows skipped. ``test_path``
    is evaluated a chunk at a time after training (read with ``stream``'s columns and delimiter). ``init_from``
    starts from a checkpoint's weights and tokeniser, as in memory (``config`` must be its config; the file must
    have its labels).

    Raises:
        ValueError: self-trained embeddings (word2vec, fasttext need the texts in memory: use
            ``--streaming never``), or ``init_from``'s labels are not the file's.
        DataError: as :meth:`TextFileStream.scan`.
    """
    if config.embeddings in SELF_TRAINED:
        raise ValueError(
            f"--embeddings {config.embeddings} trains vectors on the texts in memory; with a streamed file use "
            "glove, a vector file or random, or --streaming never"
        )
    started = time.monotonic()
    out_dir = Path(out_dir)
    rank, world = replica()
    tokenizer_dir = out_dir / TOKENIZER_DIR
    options = {"kind": config.tokenizer, "vocab_size": config.vocab_size, "min_frequency": config.min_frequency}
    scan, tokenizer = stream.scan(options)
    if init_from is not None and list(config.label_names) != list(scan.label_names):
        raise ValueError(
            f"--init-from {init_from.given}: its labels {config.label_names} are not {stream.name}'s {scan.label_names}"
        )
    scanned = tokenizer
    tokenizer = run_tokenizer(tokenizer_dir, resume=resume, init_from=init_from, build=lambda: scanned)
    load_seconds = time.monotonic() - started
    source = "from the cache" if scan.cached else f"in {scan.seconds:.1f} s"
    _say(f"{stream.path}: {scan.train_rows:,} training rows, {scan.valid_rows:,} held out ({source})")
    if scan.valid_rows > len(scan.valid_texts):  # the hash holds rows out; memory caps what validation reads
        _say(
            f"validation reads {len(scan.valid_texts):,} of the {scan.valid_rows:,} held-out rows (the first it met); "
            "the others are neither trained on nor validated on"
        )
    _say(scan.counts_line())
    if scan.bad_rows:
        _say(f"skipped {scan.bad_rows:,} bad rows (first: {scan.bad_examples[0]})")

    config = dataclasses.replace(config, label_names=list(scan.label_names), punctuated=True)
    index = {name: i for i, name in enumerate(scan.label_names)}
    encoder = TextEncoder(config, tokenizer)
    collate = encoder.collate()

    def label_id(label: str) -> int:
        if label not in index:  # a sampled scan saw only the file's first megabytes
            raise DataError(
                f"{stream.path}: label {label!r} first occurs after the rows the scan read (its labels: "
                f"{', '.join(scan.label_names)}){scan_prefix_note(scan.sampled_bytes)}"
            )
        return index[label]

    def encode(rows: list[tuple[str, str]]) -> list:
        return list(
            zip(encoder.encode([text for text, _ in rows]), [label_id(label) for _, label in rows], strict=True)
        )

    options_ = stream_options or StreamOptions(batch_size=batch_size, bucketed=bucketed, seed=fit_config.seed)
    rows_per_rank = -(-scan.train_rows // world)
    codec, length = _STREAMED_FORMS[config.model]
    directory = _id_dir(stream, options, config, tokenizer, codec, world=world, rank=rank)
    limits = (tokenizer.vocab_size, *([None] * (codec.sequences - 1)), len(scan.label_names))  # ids, lengths, label
    ids = EncodedStride(stream.training_rows, encode, codec, directory, world=world, rank=rank, limit=rows_per_rank,
                        content=lambda: file_content_key(stream.path), limits=limits)  # fmt: skip
    train_batches = StreamedBatches(
        ids,
        scan.train_rows,
        encode=list,
        length=length,
        collate=collate,
        options=options_,
        world=world,
        rank=rank,
        strided=True,
    )
    kept = [(t, index[y]) for t, y in zip(scan.valid_texts, scan.valid_labels, strict=True) if y in index][rank::world]
    encoded: list = []

    def valid_batches(epoch: int = 0):  # the validation rows are encoded when first validated, after step 1
        if not encoded:
            valid_set = EncodedDataset(encoder.encode([t for t, _ in kept]), [y for _, y in kept])
            encoded.append(make_batches(valid_set, collate, 2 * batch_size, shuffle=False))
        return encoded[0](epoch)

    model, config = prepared_model(
        config, tokenizer, device, fit_config, out_dir=out_dir, resume=resume, init_from=init_from, texts=[]
    )
    result = fit_classifier(
        model, config, train_batches, valid_batches, fit_config, out_dir=out_dir, resume=resume, init_from=init_from
    )
    test_metrics = None
    if test_path is not None:
        test_metrics = evaluate_file(model, encoder, test_path, stream, index, batch_size=2 * batch_size,
                                     precision=fit_config.precision)  # fmt: skip
    details = {
        "streamed": True,
        "load_seconds": round(load_seconds, 2),
        "scan_cached": scan.cached,
        "train_documents": scan.train_rows,
        "valid_documents": len(scan.valid_texts),
        "held_out_rows": scan.valid_rows,
        "bad_rows_skipped": scan.bad_rows,
        "label_counts": scan.label_counts,
        "bucketed": bucketed,
        "steps_per_epoch": len(train_batches),
        "scan_sampled_bytes": scan.sampled_bytes,
        "epochs_read_as_ids": ids.epochs_from_cache,
    }
    return run_report(result, test_metrics, model, config, details, out_dir=out_dir, data=stream.name,
                      fit_config=fit_config, batch_size=batch_size, init_from=init_from)  # fmt: skip


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
    scored ``chunk_rows`` at a time.

    Raises:
        DataError: a bad row, or a label the training file never had (``file:line: ...``).
    """
    from attnkit.data.classify.files import iter_rows
    from attnkit.data.reading import DataError

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
