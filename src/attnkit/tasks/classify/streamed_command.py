"""``attnkit train classify`` on a file read as a stream (``--streaming``): when to stream, and the run itself
(layer 5; torch is imported only when a run starts)."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["streams", "train_streamed"]


def streams(args: argparse.Namespace) -> bool:
    """Whether ``--data`` is read as a stream (:func:`attnkit.tasks.train_setup.streams_file`)."""
    from attnkit.data.classification import data_set_names
    from attnkit.tasks.train_setup import streams_file

    return streams_file(args, data_set_names())


def train_streamed(args: argparse.Namespace, start, options: dict, *, max_chars: int | None = None):
    """Train on the streamed ``--data`` file: ``start`` (:func:`attnkit.tasks.train_setup.start_training`) holds
    the config and guards every write; ``options`` are the trainer's, as for rows in memory."""
    from attnkit.data.classify.text_stream import TextFileStream
    from attnkit.tasks.classify.streamed_rows import StreamedRows
    from attnkit.tasks.classify.training import train_classifier
    from attnkit.tasks.train_setup import stream_options

    if not Path(args.data).exists():
        raise FileNotFoundError(f"{args.data}: neither a built-in data set nor a file")
    if args.valid_fraction == 0:
        raise ValueError(f"--valid-fraction 0: {args.data} is streamed, and a streamed run needs its held-out rows")
    if getattr(args, "valid_seed", None) is not None:
        raise ValueError(f"--valid-seed: {args.data} is streamed, and a streamed file's held-out rows are fixed")
    columns = {"text_column": args.text_column, "label_column": args.label_column}
    reading = {"valid_fraction": args.valid_fraction, "max_chars": max_chars, **stream_options(args)}
    stream = TextFileStream(args.data, **columns, **reading)
    with start.plan.writing():
        rows = StreamedRows(stream, test_path=args.test)
        return train_classifier(rows, start.config, start.fit_config, init_from=start.init, **options)
