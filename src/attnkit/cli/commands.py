"""The top-level commands, in the order ``--help`` lists them: each entry's ``register(subparsers)`` adds one.
Tasks bring their own extra commands (``translate``, ``export``, ``demo``) through their
:class:`~attnkit.tasks.spec.TaskSpec`."""

from __future__ import annotations

import argparse

from attnkit.cli import evaluate, experiment, explain, faithfulness, models, predict, train
from attnkit.tasks import registered_tasks

REGISTRY = [train.register, evaluate.register, predict.register, explain.register, faithfulness.register]
TRAILING = [models.register, experiment.register]


def register_all(sub: argparse._SubParsersAction) -> None:
    """Add every command: the shared ones, the tasks' own, then ``models`` and ``experiment``."""
    for register in REGISTRY:
        register(sub)
    for task in registered_tasks():
        for register in task.commands:
            register(sub)
    for register in TRAILING:
        register(sub)
