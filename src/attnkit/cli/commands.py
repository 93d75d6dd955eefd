"""The subcommands, in the order ``--help`` lists them.

``REGISTRY``: each entry's ``register(subparsers)`` adds one top-level command.
``TRAIN_TASKS``: each entry's ``add_task(subparsers)`` adds one ``attnkit train TASK``.
"""

from attnkit.cli import demo, evaluate, experiment, explain, predict, train, train_seq2seq, train_vision, translate

TRAIN_TASKS = [train.add_classify, train_vision.add_task, train_seq2seq.add_task]
REGISTRY = [
    train.register,
    evaluate.register,
    predict.register,
    translate.register,
    explain.register,
    experiment.register,
    demo.register,
]
