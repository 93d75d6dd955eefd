"""``attnkit predict``: what a trained model predicts — labels for texts (classifiers), translations (seq2seq) or
labels for images (vision) — from ``--text``, ``--file`` or standard input; the checkpoint's task decides."""

from __future__ import annotations

import argparse

from attnkit.tasks import registered_tasks, task_for_checkpoint
from attnkit.tasks.options import (
    CHECKPOINT_HELP,
    FILE_HELP,
    add_file_column_option,
    add_runtime_options,
    add_task_arguments,
    positive_int,
    refuse_foreign_options,
)

EXAMPLES = """examples:
  attnkit predict --checkpoint runs/ff --text "Stale and overpriced."     a run directory means its best/
  attnkit predict --checkpoint runs/ff/best --file reviews.txt --json
  cat reviews.txt | attnkit predict --checkpoint runs/ff
  attnkit predict --checkpoint runs/g2p --text attention --beam 4         seq2seq: as attnkit translate
  attnkit predict --checkpoint runs/digits --index 0 --index 7            vision: test images by index
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``predict`` with every registered task's own options."""
    parser = sub.add_parser(
        "predict",
        help="predict with a trained model",
        description=(
            "Predict with a trained model. Texts come from --text, --file (a table's text column, else one per line) or stdin; a blank input "
            "line gives a blank output line (with --json: no object), so the output lines up with the input."
        ),
        epilog=EXAMPLES,
    )
    parser.add_argument("--checkpoint", required=True, help=CHECKPOINT_HELP)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--text", action="append", help="a text (repeatable)")
    source.add_argument("--file", help=FILE_HELP + " (vision: a .npy array or a picture)")
    add_file_column_option(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object per input, with attention weights")
    parser.add_argument("--batch-size", type=positive_int, default=64)
    add_task_arguments(parser, registered_tasks(), "add_predict_arguments")
    add_runtime_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``attnkit predict``: the checkpoint's task predicts."""
    task, checkpoint = task_for_checkpoint(args.checkpoint)
    if task.predict is None:
        raise ValueError(f"{checkpoint}: attnkit predict does not support {task.kind} checkpoints")
    refuse_foreign_options(args, task)
    return task.predict(args, checkpoint)
