"""What a task tells the rest of attnkit about itself: :class:`TaskSpec` (layer 5).

A task is one package under ``attnkit.tasks`` (``classify``, ``seq2seq``, ``vision``, ...) that exports a
``SPEC``. The CLI builds ``attnkit train NAME`` from it, and ``evaluate`` / ``predict`` / ``explain`` / ``attnkit.load``
look a checkpoint's ``"kind"`` up in the registry (:mod:`attnkit.tasks`) and call the task's hooks — no command
switches on kinds.

Hooks receive the parsed ``argparse.Namespace`` of their command. They live in the task's ``commands`` module,
which imports no torch at module level, so ``attnkit --help`` answers before torch loads; the hooks import the
task's heavy modules when they run.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["AddArguments", "ExportFormat", "TaskSpec"]

AddArguments = Callable[[argparse.ArgumentParser], None]


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    """A command hook that adds no options."""


@dataclass(frozen=True)
class ExportFormat:
    """How the registry recognises the directories a task's ``export`` command writes (no checkpoints):
    ``kind_of(path)`` (None: no export) and ``refusal(path)``, one line saying why it is no checkpoint."""

    kind_of: Callable[[Path], str | None]
    refusal: Callable[[Path], str]


@dataclass(frozen=True)
class TaskSpec:
    """One task.

    ``kind`` is what its checkpoints' ``config.json`` carries; ``name`` the ``attnkit train NAME`` sub-command.
    ``load(checkpoint directory, *, device, precision)`` gives what :func:`attnkit.load` returns for this kind. The
    command hooks take the parsed arguments; ``predict``, ``explain`` and ``faithfulness`` may be None (the task
    cannot). The ``add_*_arguments`` hooks add the task's own options of a shared command (another task's option
    given for a checkpoint of this kind is refused). ``commands``: extra top-level commands,
    ``register(subparsers)``; ``ensembles``: whether ``evaluate`` takes several checkpoints.
    """

    kind: str
    name: str
    help: str
    add_train_arguments: AddArguments
    train: Callable[[argparse.Namespace], int]
    load: Callable[[Path], Any]
    evaluate: Callable[[argparse.Namespace, Sequence[Path]], int]
    predict: Callable[[argparse.Namespace, Path], int] | None = None
    explain: Callable[[argparse.Namespace, Path], Path] | None = None
    faithfulness: Callable[[argparse.Namespace, Path], int] | None = None
    description: str = ""
    epilog: str = ""
    add_evaluate_arguments: AddArguments = _no_arguments
    add_predict_arguments: AddArguments = _no_arguments
    add_explain_arguments: AddArguments = _no_arguments
    add_faithfulness_arguments: AddArguments = _no_arguments
    commands: tuple[Callable[[Any], None], ...] = ()
    ensembles: bool = False
    exports: ExportFormat | None = None

    @classmethod
    def from_commands(cls, module: Any, /, **fields: Any) -> TaskSpec:
        """The task whose hooks are the functions of its commands ``module`` named as the fields (``train``,
        ``load``, ``add_evaluate_arguments``, ...), its ``--help`` page that module's ``DESCRIPTION`` and
        ``EXAMPLES``; ``fields`` give the rest, and win."""
        hooks = {name: getattr(module, name) for name in _HOOKS if hasattr(module, name)}
        return cls(description=module.DESCRIPTION, epilog=module.EXAMPLES, **{**hooks, **fields})


_HOOKS = ("add_train_arguments", "train", "load", "evaluate", "predict", "explain", "faithfulness")
_HOOKS += ("add_evaluate_arguments", "add_predict_arguments", "add_explain_arguments", "add_faithfulness_arguments")
