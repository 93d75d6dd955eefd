"""Checkpoints: one directory of safetensors weights, a JSON config and copied files, written atomically (layer 5).

A checkpoint is a directory::

    model.safetensors           the model's state_dict; tied tensors are stored once, their aliases in the header
    config.json                 the caller's model config at top level, plus an "attnkit" section: format,
                                attnkit and torch versions, the extra files, and metadata (epoch, metrics, ...)
    tokenizer.json, ...         extra files copied in: whatever the caller needs to rebuild the model
    trainer_state.safetensors   resumable checkpoints only: every tensor of the trainer state (optimizer moments, ...)
    trainer_state.json          resumable checkpoints only: the rest of it, with references to those tensors

Nothing is ever unpickled: tensors are read with safetensors alone, everything else is JSON. A path that is not
such a directory — a ``.pt``/``.pkl`` file, a directory without ``config.json``, a config written by another tool,
weights whose names or shapes do not fit the model, tensors nobody refers to — is refused with a
:class:`CheckpointError` that names the path.

Writes are atomic. The checkpoint is built in a temporary sibling directory (``.<name>.tmp-<random>``), every file
and the directory are fsynced, and only then is it moved into place: the old directory is renamed to
``.<name>.old``, the new one renamed to ``<name>``, the parent fsynced, the old one deleted. A reader never sees a
half-written checkpoint; a process killed between the two renames leaves the previous checkpoint in
``.<name>.old``, which :func:`recover_checkpoint` (called by every save and by ``fit(..., resume=True)``) moves
back. The writing lives in :mod:`attnkit.checkpointing._write`; this module reads.

One rule for the paths users give (:func:`resolve_checkpoint`): a checkpoint directory means itself, a run directory
(holding ``best/``) means its ``best/``, a name that is no path here but a shipped model's (:mod:`attnkit.pretrained`)
means that model's folder, anything else is refused in one line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file
from torch import nn

from attnkit.checkpointing._format import (
    ALIASES_KEY,
    CONFIG_FILE,
    FORMAT,
    FORMAT_VERSION,
    PICKLE_SUFFIXES,
    SECTION,
    STATE_JSON_FILE,
    STATE_TENSORS_FILE,
    WEIGHTS_FILE,
    CheckpointError,
)
from attnkit.checkpointing._state_codec import decode_state

__all__ = [
    "load_model_weights",
    "read_config",
    "read_config_of_kind",
    "read_metadata",
    "read_trainer_state",
    "resolve_checkpoint",
]

RUN_BEST = "best"  # a run directory's checkpoint of its best epoch


def resolve_checkpoint(path: str | Path) -> Path:
    """The checkpoint directory that ``path`` names, by the rule of the module docstring (an existing path always
    wins over a shipped model's name); whether it is a valid checkpoint is checked when it is read.

    Raises:
        CheckpointError: one line naming ``path``: it does not exist (the shipped names are listed for a bare name),
            it is a file (pickle formats named as such), or it is a directory that is neither kind.
    """
    path = Path(path)
    if not path.exists():
        return _shipped(path)
    if not path.is_dir():
        raise CheckpointError(_not_a_directory(path))
    if (path / CONFIG_FILE).is_file():
        return path
    if (path / RUN_BEST).is_dir():
        return path / RUN_BEST
    raise CheckpointError(f"{path}: not a checkpoint or run directory (no {CONFIG_FILE}, no {RUN_BEST}/{CONFIG_FILE})")


def _shipped(path: Path) -> Path:
    """A path that does not exist: the shipped model of that name (:func:`attnkit.pretrained.find_shipped`), or
    refused in one line."""
    from attnkit.pretrained import find_shipped

    if len(path.parts) != 1 or str(path).startswith("."):
        raise CheckpointError(f"{path}: does not exist (expected a checkpoint or run directory)")
    try:
        return find_shipped(str(path))
    except LookupError as error:
        raise CheckpointError(f"{path}: no such checkpoint or run directory, and {error.args[0]}") from None


def read_config(directory: str | Path) -> dict[str, Any]:
    """The model config saved with the checkpoint at ``directory`` (config.json without its ``"attnkit"`` section);
    CheckpointError when ``directory`` is not a valid attnkit checkpoint."""
    _, config = _open_checkpoint(directory)
    return {key: value for key, value in config.items() if key != SECTION}


def read_config_of_kind(directory: str | Path, kind: str) -> dict[str, Any]:
    """:func:`read_config` of a checkpoint that must hold a ``kind`` model (``"classifier"``, ``"seq2seq"``,
    ``"vision"``), without its ``"kind"`` key; CheckpointError for one of another kind."""
    values = read_config(directory)
    found = values.pop("kind", None)
    if found != kind:
        raise CheckpointError(f"{directory}: not a {kind} checkpoint (kind={found!r})")
    return values


def read_metadata(directory: str | Path) -> dict[str, Any]:
    """The ``"attnkit"`` section of the checkpoint's config.json: format, versions, files, and ``"metadata"``;
    CheckpointError when ``directory`` is not a valid attnkit checkpoint."""
    _, config = _open_checkpoint(directory)
    return dict(config[SECTION])


def load_model_weights(model: nn.Module, directory: str | Path) -> None:
    """Load the checkpoint's weights into ``model`` (in place, onto the model's own devices and dtypes).

    Every name and shape is checked before the model is touched: a missing or unexpected tensor or a shape that
    differs raises a CheckpointError listing them, and the model is left unchanged.
    """
    path, _ = _open_checkpoint(directory)
    weights_path = path / WEIGHTS_FILE
    header = _read_header(weights_path)
    try:
        aliases = json.loads(header.metadata.get(ALIASES_KEY, "{}"))
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{weights_path}: malformed {ALIASES_KEY!r} header entry: {error}") from error
    if not isinstance(aliases, dict) or not all(
        isinstance(alias, str) and target in header.shapes for alias, target in aliases.items()
    ):
        raise CheckpointError(f"{weights_path}: malformed {ALIASES_KEY!r} header entry: {aliases!r}")
    saved = {**header.shapes, **{alias: header.shapes[target] for alias, target in aliases.items()}}
    expected = {name: tuple(value.shape) for name, value in model.state_dict().items()}
    problems = _name_problems(set(expected), set(saved), what="tensor")
    problems += [
        f"{name}: shape {list(saved[name])} in the checkpoint, {list(shape)} in the model"
        for name, shape in expected.items()
        if name in saved and tuple(saved[name]) != shape
    ]
    if problems:
        raise CheckpointError(
            f"{path}: the weights do not fit {type(model).__name__}: " + "; ".join(problems[:8]) + _more(problems, 8)
        )
    state = _load_tensors(weights_path)
    state.update({alias: state[target] for alias, target in aliases.items()})
    model.load_state_dict(state, strict=True)


def read_trainer_state(directory: str | Path) -> dict[str, Any]:
    """The trainer state saved with :func:`save_checkpoint` (tensors on the CPU); CheckpointError when there is
    none (a weights-only checkpoint such as ``best/``) or its two files do not match each other."""
    path, config = _open_checkpoint(directory)
    json_path, tensors_path = path / STATE_JSON_FILE, path / STATE_TENSORS_FILE
    if not config[SECTION].get("trainer_state") or not json_path.is_file() or not tensors_path.is_file():
        raise CheckpointError(
            f"{path}: no trainer state ({STATE_JSON_FILE} + {STATE_TENSORS_FILE}); "
            "it holds weights only and cannot be resumed from"
        )
    tensors = _load_tensors(tensors_path)
    encoded = _read_json(json_path)
    used: set[str] = set()
    try:
        state = decode_state(encoded, tensors, used)
    except ValueError as error:
        raise CheckpointError(f"{json_path} (with {tensors_path.name}): {error}") from error
    unused = sorted(set(tensors) - used)
    if unused:
        raise CheckpointError(f"{tensors_path}: unexpected tensors nobody refers to: {unused[:8]}{_more(unused, 8)}")
    if not isinstance(state, dict):
        raise CheckpointError(f"{json_path}: expected a JSON object at the top level")
    return state


def _open_checkpoint(directory: str | Path) -> tuple[Path, dict[str, Any]]:
    """Check that ``directory`` is an attnkit checkpoint and return it with its parsed config.json."""
    path = Path(directory)
    if not path.exists():
        raise CheckpointError(f"{path}: no such checkpoint directory")
    if not path.is_dir():
        raise CheckpointError(_not_a_directory(path))
    config_path = path / CONFIG_FILE
    if not config_path.is_file():
        raise CheckpointError(f"{path}: no {CONFIG_FILE}; not an attnkit checkpoint")
    config = _read_json(config_path)
    if not isinstance(config, dict):
        raise CheckpointError(f"{config_path}: expected a JSON object, got {type(config).__name__}")
    section = config.get(SECTION)
    if not isinstance(section, dict) or section.get("format") != FORMAT:
        raise CheckpointError(
            f"{config_path}: no {SECTION!r} section with format {FORMAT!r}; not an attnkit checkpoint "
            "(written by another tool?)"
        )
    version = section.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise CheckpointError(f"{config_path}: malformed format_version {version!r}")
    if version > FORMAT_VERSION:
        raise CheckpointError(
            f"{config_path}: checkpoint format {version} is newer than this attnkit reads ({FORMAT_VERSION}); "
            "upgrade attnkit"
        )
    files = section.get("files", [])
    if not isinstance(files, list) or not all(isinstance(name, str) for name in files):
        raise CheckpointError(f"{config_path}: malformed 'files' entry {files!r}")
    missing = [name for name in [WEIGHTS_FILE, *files] if not (path / name).is_file()]
    if missing:
        raise CheckpointError(f"{path}: missing {', '.join(missing)}")
    if not isinstance(section.get("metadata", {}), dict):
        raise CheckpointError(f"{config_path}: malformed 'metadata' entry")
    return path, config


def _not_a_directory(path: Path) -> str:
    """Why the file ``path`` is refused (a pickle format is named as such)."""
    if path.suffix.lower() in PICKLE_SUFFIXES:
        return (
            f"{path}: refusing to load a {path.suffix} file (pickle-based formats can run code when loaded); "
            f"an attnkit checkpoint is a directory holding {WEIGHTS_FILE} and {CONFIG_FILE}"
        )
    return f"{path}: is a file, not a checkpoint directory (expected a directory with {WEIGHTS_FILE} and {CONFIG_FILE})"


@dataclass
class _Header:
    """Names, shapes and metadata of a safetensors file, read without loading any tensor."""

    shapes: dict[str, tuple[int, ...]]
    metadata: dict[str, str]


def _read_header(path: Path) -> _Header:
    try:
        with safe_open(str(path), framework="pt") as handle:
            shapes = {name: tuple(handle.get_slice(name).get_shape()) for name in handle.keys()}  # noqa: SIM118
            return _Header(shapes, dict(handle.metadata() or {}))
    except (SafetensorError, OSError, ValueError) as error:
        raise CheckpointError(f"{path}: not a readable safetensors file: {error}") from error


def _load_tensors(path: Path) -> dict[str, torch.Tensor]:
    try:
        return load_file(str(path), device="cpu")
    except (SafetensorError, OSError, ValueError) as error:
        raise CheckpointError(f"{path}: not a readable safetensors file: {error}") from error


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise CheckpointError(f"{path}: not UTF-8 text: {error}") from error
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{path}:{error.lineno}:{error.colno}: malformed JSON: {error.msg}") from error


def _name_problems(expected: set[str], found: set[str], *, what: str) -> list[str]:
    problems = []
    if expected - found:
        problems.append(f"missing {what}s {sorted(expected - found)[:8]}{_more(sorted(expected - found), 8)}")
    if found - expected:
        problems.append(f"unexpected {what}s {sorted(found - expected)[:8]}{_more(sorted(found - expected), 8)}")
    return problems


def _more(items: list, shown: int) -> str:
    return f" (and {len(items) - shown} more)" if len(items) > shown else ""
