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
    """How the registry recognises the directories a task's ``export`` command writes (no checkpoints).

    Attributes:
        kind_of: ``kind_of(path)``: the kind of the task that wrote the export at ``path``, or None if it is none.
        refusal: ``refusal(path)``: one line saying why that export cannot be read as a checkpoint.
    """

    kind_of: Callable[[Path], str | None]
    refusal: Callable[[Path], str]


@dataclass(frozen=True)
class TaskSpec:
    """One task.

    Attributes:
        kind: the ``"kind"`` its checkpoints' ``config.json`` carries (``"classifier"``, ``"seq2seq"``, ...).
        name: the ``attnkit train NAME`` sub-command.
        help: one line for ``attnkit train --help``.
        description, epilog: the ``attnkit train NAME --help`` page.
        add_train_arguments: adds the task's training options to ``attnkit train NAME``'s parser.
        train: runs ``attnkit train NAME`` (returns the exit status).
        load: ``load(checkpoint directory, *, device, precision) -> ready model`` (what :func:`attnkit.load`
            returns for this kind): the model on ``device`` (``"auto"``, ``"cpu"``, ``"cuda:N"``, ...; see
            :func:`attnkit.runtime.devices.resolve_device`), running in ``precision``
            (``"fp32"``/``"bf16"``/``"fp16"``).
        evaluate: runs ``attnkit evaluate`` for checkpoints of this kind (several only if ``ensembles``).
        predict: runs ``attnkit predict`` for one checkpoint of this kind, or None if the task cannot.
        explain: writes ``attnkit explain``'s report for one checkpoint; returns the path, or None if unsupported.
        faithfulness: runs ``attnkit faithfulness`` for one checkpoint (returns the exit status), or None.
        add_evaluate_arguments, add_predict_arguments, add_explain_arguments, add_faithfulness_arguments: the
            task's own options of those commands (each in its own argument group; the commands' shared options are
            theirs; another task's option given for a checkpoint of this kind is refused in one line).
        commands: extra top-level commands the task brings (``translate``, ``export``): ``register(subparsers)``.
        ensembles: whether ``evaluate`` accepts several checkpoints at once.
        exports: how to recognise what the task's ``export`` command writes, or None.
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
