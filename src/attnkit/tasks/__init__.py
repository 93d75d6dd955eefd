"""The tasks attnkit trains, evaluates, predicts with and explains, one package each, registered here (layer 5).

| package | kind | ``attnkit train`` | what it holds |
|---|---|---|---|
| :mod:`attnkit.tasks.classify` | ``classifier`` | ``classify`` | HAN and pooled document classifiers |
| :mod:`attnkit.tasks.vision` | ``vision`` | ``vision`` | visual attention over an image feature grid |
| :mod:`attnkit.tasks.seq2seq` | ``seq2seq`` | ``seq2seq`` | RNN and Transformer encoder-decoders |

Each package exports a :class:`~attnkit.tasks.spec.TaskSpec` as ``SPEC``; :data:`BUILTIN_TASKS` lists them — adding
a task is one new package and one line there (or :func:`register_task` from outside attnkit). The CLI and the
experiments find a checkpoint's task with :func:`task_for_checkpoint`; :func:`load` returns a ready model:

    model = attnkit.load("runs/ff")          # a run directory means its best/
    model.predict(["Stale and overpriced."])
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from attnkit.tasks.loaded import LoadedModel
from attnkit.tasks.spec import TaskSpec

__all__ = [
    "BUILTIN_TASKS",
    "TaskSpec",
    "load",
    "register_task",
    "registered_tasks",
    "run_training",
    "task_for_checkpoint",
    "task_for_kind",
    "task_named",
    "unregister_task",
]

# The registry lines: one module per task, imported when the registry is first read.
BUILTIN_TASKS = ("attnkit.tasks.classify", "attnkit.tasks.vision", "attnkit.tasks.seq2seq")

_REGISTRY: dict[str, TaskSpec] = {}
_builtins_loaded = False


def register_task(spec: TaskSpec) -> TaskSpec:
    """Add ``spec`` to the registry (its ``kind`` and ``name`` must be new); returns it."""
    tasks = _tasks()
    if spec.kind in tasks or spec.name in {task.name for task in tasks.values()}:
        raise ValueError(f"a task with kind {spec.kind!r} or name {spec.name!r} is already registered")
    tasks[spec.kind] = spec
    return spec


def unregister_task(kind: str) -> None:
    """Remove the task of ``kind`` (tests that register a toy task clean up with this)."""
    _tasks().pop(kind, None)


def registered_tasks() -> list[TaskSpec]:
    """Every registered task, built-in ones first, in registration order."""
    return list(_tasks().values())


def task_for_kind(kind: Any, *, where: str = "checkpoint") -> TaskSpec:
    """The task of checkpoints of ``kind`` (ValueError naming ``where`` and the known kinds if none)."""
    tasks = _tasks()
    if not isinstance(kind, str):
        raise ValueError(f"{where}: the field 'kind' must be a string naming the checkpoint's task, got {kind!r}")
    if kind not in tasks:
        known = ", ".join(tasks)
        raise ValueError(f"{where}: unknown checkpoint kind {kind!r}; supported kinds: {known}")
    return tasks[kind]


def task_for_checkpoint(path: str | Path, *, exports: bool = False) -> tuple[TaskSpec, Path]:
    """``(task, checkpoint directory)`` of ``path`` — a checkpoint directory, or a run directory meaning its
    ``best/``; with ``exports``, also an export directory (``attnkit export``), whose manifest names its task's kind
    (an export given where a checkpoint is asked for is refused, saying so)."""
    from attnkit.checkpointing import CheckpointError, read_config, resolve_checkpoint

    for exporter in (task.exports for task in list(_tasks().values()) if task.exports is not None):
        kind = exporter.kind_of(Path(path))
        if kind is not None and exports:
            return task_for_kind(kind, where=str(path)), Path(path)
        if kind is not None:
            raise CheckpointError(exporter.refusal(Path(path)))
    checkpoint = resolve_checkpoint(path)
    return task_for_kind(read_config(checkpoint).get("kind"), where=str(checkpoint / "config.json")), checkpoint


def task_named(name: str) -> TaskSpec:
    """The task of ``attnkit train NAME``."""
    for task in _tasks().values():
        if task.name == name:
            return task
    known = ", ".join(task.name for task in _tasks().values())
    raise ValueError(f"unknown task {name!r} (attnkit trains {known})")


def run_training(name: str, options: Sequence[str]) -> int:
    """Train as ``attnkit train NAME options...`` does, in this process (options the parser refuses raise
    ValueError). The experiments describe their runs this way, so the command a results table shows is what ran."""
    from attnkit.tasks.options import apply_runtime

    task = task_named(name)
    parser = _RaisingParser(prog=f"attnkit train {name}")
    task.add_train_arguments(parser)
    args = parser.parse_args(list(options))
    apply_runtime(args)
    return task.train(args)


class _RaisingParser(argparse.ArgumentParser):
    """An argument parser that raises ``ValueError`` instead of printing usage and exiting."""

    def error(self, message: str) -> NoReturn:
        raise ValueError(f"{self.prog}: {message}")


def load(path: str | Path, *, device: Any = "auto", precision: str = "fp32") -> LoadedModel:
    """A trained model ready to use, for a checkpoint of any kind (``RUN`` means ``RUN/best``; a shipped model's
    name means that model), on ``device`` (``"auto"``: CUDA when available, else the CPU) running in ``precision``
    (``"fp32"``, or autocast to ``"bf16"`` / ``"fp16"``).

    Classifiers and vision models come back with ``predict``, seq2seq models with ``translate`` (and ``evaluate``
    for each): a :class:`~attnkit.tasks.loaded.LoadedModel`, a ``Labeller`` or a ``Translator``. An export
    (``attnkit export``) comes back from the task its manifest names, decoded by CTranslate2
    (``precision`` does not apply).
    """
    task, checkpoint = task_for_checkpoint(path, exports=True)
    return task.load(checkpoint, device=device, precision=precision)


def _tasks() -> dict[str, TaskSpec]:
    global _builtins_loaded
    if not _builtins_loaded:
        _builtins_loaded = True
        for module in BUILTIN_TASKS:
            spec = importlib.import_module(module).SPEC
            _REGISTRY.setdefault(spec.kind, spec)
    return _REGISTRY
