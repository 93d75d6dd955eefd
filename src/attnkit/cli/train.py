"""``attnkit train TASK``: one sub-command per registered task (:mod:`attnkit.tasks`), each with the task's own
options; the handler is the task's ``train`` hook."""

from __future__ import annotations

import argparse

from attnkit.tasks import registered_tasks

EXAMPLES = """examples:
  attnkit train classify --data fine-foods --model han --out runs/ff
  attnkit train seq2seq --data cmudict --model transformer --out runs/g2p
  attnkit train vision --data digits --out runs/digits
  attnkit train TASK --help                   every option of one task
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``train`` with one sub-command per registered task."""
    train = sub.add_parser("train", help="train a model", description="Train a model for one task.", epilog=EXAMPLES)
    tasks = train.add_subparsers(dest="task", metavar="TASK", required=True)
    for task in registered_tasks():
        parser = tasks.add_parser(
            task.name, help=task.help, description=task.description or task.help, epilog=task.epilog
        )
        task.add_train_arguments(parser)
        parser.set_defaults(handler=task.train)
