"""``attnkit evaluate``: score a checkpoint on a test split or a file. The checkpoint's task (its ``config.json``
``"kind"``, looked up in :mod:`attnkit.tasks`) decides the metrics: accuracy for classifiers and vision models,
WER/PER (character/symbol targets) or BLEU/chrF (text) for seq2seq models."""

from __future__ import annotations

import argparse

from attnkit.tasks import registered_tasks, task_for_checkpoint
from attnkit.tasks.options import (
    DELIMITER_HELP,
    add_runtime_options,
    add_task_arguments,
    delimiter_option,
    positive_int,
    refuse_foreign_options,
)

EXAMPLES = """examples:
  attnkit evaluate --checkpoint runs/ff --data fine-foods                a run directory means its best/
  attnkit evaluate --checkpoint runs/mine/best --data held_out.csv --label-column topic
  attnkit evaluate --checkpoint runs/g2p                      seq2seq: the test split of the data set it was trained on
  attnkit evaluate --checkpoint runs/g2p --beam 5 --split valid
  attnkit evaluate --checkpoint runs/bible/best --beam 4 --length-penalty 1.0
  attnkit evaluate --checkpoint runs/mine --data test_pairs.tsv  seq2seq: every pair of a file
  attnkit evaluate --checkpoint runs/mine --data pairs.txt --delimiter ';'   a file with another separator
  attnkit evaluate --checkpoint runs/g2p-rnn runs/g2p-transformer --beam 5   seq2seq: an ensemble of both
  attnkit evaluate --checkpoint runs/r8-0 runs/r8-1 runs/r8-2 --data r8       classifiers: an ensemble of three
  attnkit evaluate --checkpoint runs/digits                   vision: the test split of its data set
  attnkit evaluate --backend ctranslate2 --checkpoint exports/g2p --beam 5 --threads 2   an `attnkit export` dir
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``evaluate`` with every registered task's own options."""
    parser = sub.add_parser(
        "evaluate",
        help="evaluate a checkpoint",
        description="Evaluate a trained model on a built-in data set's test split or on a file.",
        epilog=EXAMPLES,
    )
    parser.add_argument(
        "--checkpoint",
        required=True,
        nargs="+",
        help="a run directory (meaning its best/), a checkpoint directory or a shipped model's name (attnkit models); seq2seq: several, trained on one task "
        "with one vocabulary, decode as an ensemble (their next-token distributions averaged); classifiers: several, "
        "trained on one label set, score as an ensemble (their class probabilities averaged)",
    )
    parser.add_argument(
        "--data",
        default=None,
        help="a built-in data set name or a CSV/TSV/JSONL file; classifiers need it, seq2seq and vision models "
        "default to the built-in data they were trained on",
    )
    parser.add_argument("--delimiter", type=delimiter_option, default=None, help=DELIMITER_HELP + " (--data FILE)")
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    add_task_arguments(parser, registered_tasks(), "add_evaluate_arguments")
    add_runtime_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``attnkit evaluate``: the checkpoints' task evaluates them (an export's task is the one its
    manifest names)."""
    found = [task_for_checkpoint(path, exports=True) for path in args.checkpoint]
    tasks = {task.kind: task for task, _ in found}
    checkpoints = [checkpoint for _, checkpoint in found]
    task = found[0][0]
    refuse_foreign_options(args, task)
    if len(checkpoints) > 1 and not (len(tasks) == 1 and task.ensembles):
        kinds = ", ".join(task.kind for task, _ in found)
        able = " or ".join(spec.kind for spec in registered_tasks() if spec.ensembles)
        raise ValueError(
            f"only checkpoints all of one kind ({able}) can be evaluated as an ensemble; got kinds {kinds}"
        )
    return task.evaluate(args, checkpoints)
