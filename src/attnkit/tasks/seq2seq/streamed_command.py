"""``attnkit train seq2seq`` on a pair file read as a stream: its options and the branch of the train hook that
runs it (layer 5; torch is imported only when a run starts)."""

from __future__ import annotations

import argparse
from pathlib import Path

from attnkit.tasks.options import say
from attnkit.tasks.train_setup import add_scan_option, stream_options

__all__ = ["add_streaming_arguments", "streams", "train_streamed"]


def add_streaming_arguments(group: argparse._ArgumentGroup) -> None:
    """``--streaming`` and ``--skip-bad-rows``."""
    group.add_argument(
        "--streaming",
        choices=["auto", "always", "never"],
        default="auto",
        help="read --data FILE as a stream, with memory bounded whatever its size (one pass for the tokenisers, "
        "cached; the first epoch keeps the token ids, later epochs read them; pairs over the length limits are "
        "cut, not skipped), or in memory: auto streams files over 64 MB (default auto)",
    )
    group.add_argument(
        "--skip-bad-rows",
        action="store_true",
        help="skip and count bad rows of a streamed file instead of stopping at the first (file:line)",
    )
    add_scan_option(group, "the tokenisers and the validation pairs; the other lines are counted, not read, "
                           "and checked in the first epoch")  # fmt: skip


def streams(args: argparse.Namespace) -> bool:
    """Whether ``--data`` is read as a stream (:func:`attnkit.tasks.train_setup.streams_file`)."""
    from attnkit.data.seq2seq import data_set_names
    from attnkit.tasks.train_setup import streams_file

    return streams_file(args, data_set_names())


def train_streamed(args: argparse.Namespace, start, options: dict) -> object:
    """Train on the streamed ``--data`` file: ``start`` (:func:`attnkit.tasks.train_setup.start_training`) holds
    the config and guards every write; ``options`` are the trainer's, as for pairs in memory."""
    from attnkit.data.seq2seq.pair_stream import PairFileStream
    from attnkit.tasks.seq2seq.data import check_levels
    from attnkit.tasks.seq2seq.streamed_pairs import StreamedPairs
    from attnkit.tasks.seq2seq.training import train_seq2seq

    check_levels(args.source_level, args.target_level, "--source-level", "--target-level")
    if not Path(args.data).exists():
        raise FileNotFoundError(f"{args.data}: neither a built-in data set nor a file")
    columns = {"source_key": args.source_column, "target_key": args.target_column}
    levels = {"source_level": args.source_level, "target_level": args.target_level}
    stream = PairFileStream(args.data, **columns, **levels, **stream_options(args))
    with start.plan.writing():
        pairs = StreamedPairs(stream, valid_path=args.valid, test_path=args.test)
        report = train_seq2seq(pairs, start.config, start.fit_config, init_from=start.init, **options)
    if report.details.get("bad_rows_skipped"):
        say(f"skipped {report.details['bad_rows_skipped']:,} bad rows")
    return report
