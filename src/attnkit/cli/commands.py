"""The subcommands, in the order ``--help`` lists them. Each module's ``register(subparsers)`` adds one."""

from attnkit.cli import demo, evaluate, predict, train

REGISTRY = [train.register, evaluate.register, predict.register, demo.register]
