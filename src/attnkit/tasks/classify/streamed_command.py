"""``attnkit train classify`` on a file read as a stream (``--streaming``): when to stream, and the run itself
(layer 5; torch is imported only when a run starts)."""

from __future__ import annotations

import argparse
from pathlib import Path

from attnkit.tasks.options import is_main_process

__all__ = ["STREAM_ABOVE_BYTES", "streams", "train_streamed"]

STREAM_ABOVE_BYTES = 64 * 2**20  # --streaming auto streams files larger than this


def streams(args: argparse.Namespace) -> bool:
    """Whether ``--data`` is read as a stream: a file, and ``--streaming always`` or (auto) larger than 64 MB."""
    from attnkit.data.classification import builtin_names

    if args.data in builtin_names():
        if args.streaming == "always" or args.skip_bad_rows:
            raise ValueError(
                f"--streaming and --skip-bad-rows are for files; the built-in dataset {args.data!r} is not"
            )
        return False
    if args.skip_bad_rows and args.streaming == "never":
        raise ValueError("--skip-bad-rows is for streamed files; drop --streaming never")
    path = Path(args.data)
    if args.streaming == "always" or args.skip_bad_rows:
        return True
    return args.streaming == "auto" and path.is_file() and path.stat().st_size > STREAM_ABOVE_BYTES


def train_streamed(args: argparse.Namespace, start, options: dict):
    """Train on the streamed ``--data`` file: ``start`` (:func:`attnkit.tasks.train_setup.start_training`, already
    checked) holds the config and guards every write; ``options`` are what the in-memory trainer takes too
    (:func:`attnkit.tasks.classify.commands.trainer_options`). Returns the
    :class:`~attnkit.training.run_report.TrainReport`."""
    from attnkit.data.text_stream import TextFileStream
    from attnkit.tasks.classify.streamed_training import train_classifier_streamed

    if not Path(args.data).exists():
        raise FileNotFoundError(f"{args.data}: neither a built-in dataset nor a file")
    stream = TextFileStream(
        args.data,
        text_column=args.text_column,
        label_column=args.label_column,
        valid_fraction=args.valid_fraction,
        limit=args.limit,
        skip_bad_rows=args.skip_bad_rows,
        progress=not args.no_progress and is_main_process(),
    )
    with start.plan.writing():
        return train_classifier_streamed(stream, start.config, start.fit_config, test_path=args.test, **options)
