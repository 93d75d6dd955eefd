"""``attnkit explain``: a self-contained HTML report of what a trained model attended to. The checkpoint's task
decides what to explain:

| task | input | report |
|---|---|---|
| classifier | ``--text`` (repeatable), ``--file`` (one text per line) or stdin | HAN: sentences and words shaded; pooled: tokens shaded, one row per head |
| seq2seq | ``--text`` (repeatable), ``--file`` or stdin | the source × target alignment; for the Transformer every layer and head |
| vision | ``--index N`` (repeatable; test images of the built-in data) or ``--file`` (``.npy`` or a picture) | the image and each head's attention map laid over it |
"""

from __future__ import annotations

import argparse
from pathlib import Path

from attnkit.cli.faithfulness import add_erasure_options
from attnkit.explain.faithfulness.methods import PANEL_STEPS
from attnkit.tasks import registered_tasks, task_for_checkpoint
from attnkit.tasks.options import (
    CHECKPOINT_HELP,
    FILE_HELP,
    add_file_column_option,
    add_runtime_options,
    add_task_arguments,
    refuse_foreign_options,
)

EXAMPLES = """examples:
  attnkit explain --checkpoint runs/ff --text "Stale and overpriced." --text "Lovely tea." --out report.html
  attnkit explain --checkpoint runs/ff/best --file reviews.txt --out report.html
  attnkit explain --checkpoint runs/g2p --text "attention" --text "padding" --out g2p.html
  attnkit explain --checkpoint runs/digits --index 0 --index 7 --out digits.html
  attnkit explain --checkpoint runs/digits --file my_digit.png --out mine.html
  attnkit explain --checkpoint runs/g2p --text "attention" --out g2p.html --save-figures figures/
  attnkit explain --checkpoint runs/ff --file reviews.txt --out report.html --faithfulness
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``explain`` with every registered task's own options."""
    kinds = ", ".join(task.kind for task in registered_tasks() if task.explain is not None)
    parser = sub.add_parser(
        "explain",
        help="write an HTML report of what a model attended to",
        description="Explain a trained model's predictions: a self-contained HTML page (inline CSS and images, "
        f"no script, opens offline). Checkpoint kinds: {kinds}.",
        epilog=EXAMPLES,
    )
    parser.add_argument("--checkpoint", required=True, help=CHECKPOINT_HELP)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--text", action="append", help="a text to explain (text models; repeatable)")
    source.add_argument("--file", help=f"text models: {FILE_HELP}; vision: a .npy array or a picture")
    add_file_column_option(parser)
    parser.add_argument("--out", required=True, help="the HTML file to write")
    parser.add_argument("--title", default=None, help="the report's title")
    parser.add_argument(
        "--save-figures",
        metavar="DIR",
        default=None,
        help="also write every figure of the report into DIR as PNG and SVG (NN-name.png/.svg, NN = section)",
    )
    checks = parser.add_argument_group("faithfulness")
    checks.add_argument(
        "--faithfulness",
        action="store_true",
        help="add a panel per document: does the attention explain the prediction? (attention, integrated "
        "gradients and leave-one-out side by side; erasure curves of each method against random)",
    )
    add_erasure_options(checks, steps=PANEL_STEPS, prefix="with --faithfulness: ")
    add_task_arguments(parser, registered_tasks(), "add_explain_arguments")
    add_runtime_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``attnkit explain``: the checkpoint's task writes the report (and, with ``--save-figures``,
    every figure the report draws is kept and written as PNG + SVG once the report is done)."""
    from attnkit.explain.figures import check_directory, save_figures

    if Path(args.out).is_dir():
        raise ValueError(f"--out {args.out}: is a directory; give the HTML file to write (e.g. {args.out}/report.html)")
    if args.save_figures is not None:
        check_directory(args.save_figures)  # before anything is loaded or written
    task, checkpoint = task_for_checkpoint(args.checkpoint)
    if task.explain is None:
        raise ValueError(f"{checkpoint}: attnkit explain does not support {task.kind} checkpoints yet")
    refuse_foreign_options(args, task)
    if args.faithfulness and task.faithfulness is None:
        raise ValueError(f"--faithfulness: not available for {task.kind} checkpoints yet ({checkpoint})")
    if args.save_figures is None:
        print(f"report written to {task.explain(args, checkpoint)}")
        return 0
    with save_figures(args.save_figures) as sink:
        report = task.explain(args, checkpoint)
    print(f"report written to {report}")
    print(f"{len(sink.files) // 2} figure(s) written to {sink.directory} as PNG and SVG")
    return 0
