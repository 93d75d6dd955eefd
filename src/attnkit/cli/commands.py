"""The subcommands, in the order ``--help`` lists them.

``REGISTRY``: each entry's ``register(subparsers)`` adds one top-level command.
``TRAIN_TASKS``: each entry's ``add_task(subparsers)`` adds one ``attnkit train TASK``.
"""

from attnkit.cli import demo, evaluate, predict, train

TRAIN_TASKS = [train.add_classify]
REGISTRY = [train.register, evaluate.register, predict.register, demo.register]
