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
back.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from glob import escape
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save
from torch import nn

from attnkit.training._state_codec import decode_state, encode_state

__all__ = [
    "CONFIG_FILE",
    "FORMAT",
    "FORMAT_VERSION",
    "STATE_JSON_FILE",
    "STATE_TENSORS_FILE",
    "WEIGHTS_FILE",
    "CheckpointError",
    "load_model_weights",
    "read_config",
    "read_config_of_kind",
    "read_metadata",
    "read_trainer_state",
    "recover_checkpoint",
    "save_checkpoint",
]

FORMAT = "attnkit.checkpoint"
FORMAT_VERSION = 1
WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
STATE_TENSORS_FILE = "trainer_state.safetensors"
STATE_JSON_FILE = "trainer_state.json"
_RESERVED_FILES = frozenset({WEIGHTS_FILE, CONFIG_FILE, STATE_TENSORS_FILE, STATE_JSON_FILE})
_SECTION = "attnkit"  # the reserved top-level key of config.json
_ALIASES_KEY = "attnkit.aliases"  # safetensors header entry: {dropped tied name: stored name}
_PICKLE_SUFFIXES = frozenset({".pt", ".pth", ".pkl", ".pickle", ".bin", ".ckpt", ".tar", ".joblib"})


class CheckpointError(ValueError):
    """A path is not a valid attnkit checkpoint (or cannot be written as one); the message names the path."""


# ---------------------------------------------------------------------------------------------------- writing


def resolve_checkpoint(path: str | Path) -> Path:
    """``path`` itself when it holds a ``config.json``, else ``path/best`` when that does (a run directory)."""
    path = Path(path)
    if not (path / "config.json").is_file() and (path / "best" / "config.json").is_file():
        return path / "best"
    return path


def save_checkpoint(
    directory: str | Path,
    model: nn.Module,
    *,
    model_config: Mapping[str, Any] | None = None,
    extra_files: Mapping[str, str | Path] | None = None,
    trainer_state: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``model`` as a checkpoint directory at ``directory``, atomically replacing any checkpoint there.

    Args:
        directory: the checkpoint directory to (re)place; its parent is created if needed.
        model: the module whose ``state_dict()`` is saved (unwrap DDP first: pass ``ddp.module``).
        model_config: JSON-serialisable options that rebuild the model; written at the top level of
            ``config.json``. The key ``"attnkit"`` is reserved.
        extra_files: ``{name in the checkpoint: source path}``, e.g. ``{"tokenizer.json": path}``; copied in.
        trainer_state: for resumable checkpoints, any nest of dicts, lists, tuples, scalars, strings and tensors
            (an optimizer's ``state_dict()`` fits): tensors go to ``trainer_state.safetensors``, the rest to
            ``trainer_state.json``. Read it back with :func:`read_trainer_state`.
        metadata: JSON-serialisable facts about the checkpoint (epoch, metrics, ...), kept in the ``"attnkit"``
            section of ``config.json``; non-finite floats are written as ``null``.

    Returns:
        The checkpoint directory.

    Raises:
        ValueError: ``model_config``, ``extra_files`` or ``trainer_state`` cannot be stored as described.
        CheckpointError: ``directory`` exists and is not a directory.
    """
    target = Path(directory)
    if target.exists() and not target.is_dir():
        raise CheckpointError(f"{target}: exists and is not a directory; refusing to replace it with a checkpoint")
    config_text = _config_text(model_config, extra_files, metadata, has_state=trainer_state is not None)
    sources = _check_extra_files(extra_files)
    state_json, state_tensors = (None, None) if trainer_state is None else encode_state(trainer_state)

    target.parent.mkdir(parents=True, exist_ok=True)
    recover_checkpoint(target)
    staging = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:12]}"
    staging.mkdir()
    try:
        weights, aliases = _weights_to_save(model)
        _write_bytes(
            staging / WEIGHTS_FILE, save(weights, metadata={"format": "pt", _ALIASES_KEY: json.dumps(aliases)})
        )
        for name, source in sources.items():
            shutil.copyfile(source, staging / name)
            _fsync_file(staging / name)
        if state_json is not None:
            _write_bytes(staging / STATE_TENSORS_FILE, save(state_tensors, metadata={"format": "pt"}))
            _write_bytes(staging / STATE_JSON_FILE, state_json.encode("utf-8"))
        _write_bytes(
            staging / CONFIG_FILE, config_text.encode("utf-8")
        )  # written last: a directory with a config is complete
        _fsync_dir(staging)
        _publish(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def recover_checkpoint(directory: str | Path) -> None:
    """Repair what a save interrupted by a crash left next to ``directory``.

    If ``directory`` is missing but its previous version survives as ``.<name>.old`` (the process died between
    the two renames of a save), that version is moved back. Leftover temporary directories are deleted.
    """
    target = Path(directory)
    parent = target.parent
    if not parent.is_dir():
        return
    backup = parent / f".{target.name}.old"
    if backup.is_dir():
        if target.exists():
            shutil.rmtree(backup, ignore_errors=True)
        else:
            os.replace(backup, target)
            _fsync_dir(parent)
    for stale in parent.glob(f".{escape(target.name)}.tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)


def _publish(staging: Path, target: Path) -> None:
    """Move the finished ``staging`` directory to ``target``; see the module docstring for the crash analysis."""
    backup = target.parent / f".{target.name}.old"
    if target.exists():
        shutil.rmtree(backup, ignore_errors=True)
        os.replace(target, backup)
    os.replace(staging, target)
    _fsync_dir(target.parent)
    shutil.rmtree(backup, ignore_errors=True)


def _config_text(
    model_config: Mapping[str, Any] | None,
    extra_files: Mapping[str, str | Path] | None,
    metadata: Mapping[str, Any] | None,
    *,
    has_state: bool,
) -> str:
    """The text of config.json, or a ValueError saying which argument cannot be stored."""
    config = dict(model_config or {})
    if not all(isinstance(key, str) for key in config):
        raise ValueError("model_config keys must be strings")
    if _SECTION in config:
        raise ValueError(f"model_config must not use the key {_SECTION!r}: it holds attnkit's own metadata")
    section = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "version": _attnkit_version(),
        "torch": torch.__version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "files": sorted(extra_files or {}),
        "trainer_state": has_state,
        "metadata": _finite_or_null(dict(metadata or {})),
    }
    try:
        json.dumps(config, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(f"model_config is not JSON-serialisable: {error}") from error
    try:
        return json.dumps({**config, _SECTION: section}, indent=2, allow_nan=False) + "\n"
    except (TypeError, ValueError) as error:
        raise ValueError(f"checkpoint metadata is not JSON-serialisable: {error}") from error


def _check_extra_files(extra_files: Mapping[str, str | Path] | None) -> dict[str, Path]:
    """Validate ``{name: source}`` before anything is written."""
    sources: dict[str, Path] = {}
    for name, source in (extra_files or {}).items():
        if not name or Path(name).name != name or name in {".", ".."}:
            raise ValueError(f"extra file name {name!r} must be a plain file name, without directories")
        if name in _RESERVED_FILES:
            raise ValueError(f"extra file name {name!r} is reserved for the checkpoint's own files")
        path = Path(source)
        if not path.is_file():
            raise ValueError(f"extra file {name!r}: {path} is not a file")
        sources[name] = path
    return sources


def _weights_to_save(model: nn.Module) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """The state_dict as contiguous CPU tensors, each storage once: ``(tensors, {alias: stored name})``.

    Tied parameters (the same tensor under two names) are stored once and restored through the alias; other
    tensors that share memory with an earlier one (overlapping views) are cloned, as safetensors requires.
    """
    tensors: dict[str, torch.Tensor] = {}
    aliases: dict[str, str] = {}
    views: dict[tuple, str] = {}
    storages: set[tuple] = set()
    for name, value in model.state_dict().items():
        tensor = value.detach()
        if tensor.numel() == 0:
            tensors[name] = tensor.cpu().contiguous()
            continue
        storage = (tensor.device, tensor.untyped_storage().data_ptr())
        view = (*storage, tensor.storage_offset(), tuple(tensor.shape), tuple(tensor.stride()), tensor.dtype)
        if view in views:
            aliases[name] = views[view]
            continue
        views[view] = name
        tensor = tensor.clone() if storage in storages else tensor
        storages.add(storage)
        tensors[name] = tensor.cpu().contiguous()
    return tensors, aliases


# ---------------------------------------------------------------------------------------------------- reading


def read_config(directory: str | Path) -> dict[str, Any]:
    """The model config saved with the checkpoint at ``directory`` (config.json without its ``"attnkit"`` section).

    Raises:
        CheckpointError: ``directory`` is not a valid attnkit checkpoint.
    """
    _, config = _open_checkpoint(directory)
    return {key: value for key, value in config.items() if key != _SECTION}


def read_config_of_kind(directory: str | Path, kind: str) -> dict[str, Any]:
    """:func:`read_config` of a checkpoint that must hold a ``kind`` model (``"classifier"``, ``"seq2seq"``,
    ``"vision"``), without its ``"kind"`` key.

    Raises:
        CheckpointError: not a valid attnkit checkpoint, or one of another kind.
    """
    values = read_config(directory)
    found = values.pop("kind", None)
    if found != kind:
        raise CheckpointError(f"{directory}: not a {kind} checkpoint (kind={found!r})")
    return values


def read_metadata(directory: str | Path) -> dict[str, Any]:
    """The ``"attnkit"`` section of the checkpoint's config.json: format, versions, files, and ``"metadata"``.

    Raises:
        CheckpointError: ``directory`` is not a valid attnkit checkpoint.
    """
    _, config = _open_checkpoint(directory)
    return dict(config[_SECTION])


def load_model_weights(model: nn.Module, directory: str | Path) -> None:
    """Load the checkpoint's weights into ``model`` (in place, onto the model's own devices and dtypes).

    Every name and shape is checked before the model is touched: a missing or unexpected tensor or a shape that
    differs raises a CheckpointError listing them, and the model is left unchanged.

    Raises:
        CheckpointError: ``directory`` is not a valid attnkit checkpoint, or its weights do not fit ``model``.
    """
    path, _ = _open_checkpoint(directory)
    weights_path = path / WEIGHTS_FILE
    header = _read_header(weights_path)
    try:
        aliases = json.loads(header.metadata.get(_ALIASES_KEY, "{}"))
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{weights_path}: malformed {_ALIASES_KEY!r} header entry: {error}") from error
    if not isinstance(aliases, dict) or not all(
        isinstance(alias, str) and target in header.shapes for alias, target in aliases.items()
    ):
        raise CheckpointError(f"{weights_path}: malformed {_ALIASES_KEY!r} header entry: {aliases!r}")
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
    """The trainer state saved with :func:`save_checkpoint` (tensors on the CPU).

    Raises:
        CheckpointError: not a valid checkpoint, no trainer state in it (a weights-only checkpoint such as
            ``best/``), or the two trainer-state files do not match each other.
    """
    path, config = _open_checkpoint(directory)
    json_path, tensors_path = path / STATE_JSON_FILE, path / STATE_TENSORS_FILE
    if not config[_SECTION].get("trainer_state") or not json_path.is_file() or not tensors_path.is_file():
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
        if path.suffix.lower() in _PICKLE_SUFFIXES:
            raise CheckpointError(
                f"{path}: refusing to load a {path.suffix} file (pickle-based formats can run code when loaded); "
                f"an attnkit checkpoint is a directory holding {WEIGHTS_FILE} and {CONFIG_FILE}"
            )
        raise CheckpointError(
            f"{path}: is a file, not a checkpoint directory (expected a directory with {WEIGHTS_FILE} and {CONFIG_FILE})"
        )
    config_path = path / CONFIG_FILE
    if not config_path.is_file():
        raise CheckpointError(f"{path}: no {CONFIG_FILE}; not an attnkit checkpoint")
    config = _read_json(config_path)
    if not isinstance(config, dict):
        raise CheckpointError(f"{config_path}: expected a JSON object, got {type(config).__name__}")
    section = config.get(_SECTION)
    if not isinstance(section, dict) or section.get("format") != FORMAT:
        raise CheckpointError(
            f"{config_path}: no {_SECTION!r} section with format {FORMAT!r}; not an attnkit checkpoint "
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


class _Header:
    """Names, shapes and metadata of a safetensors file, read without loading any tensor."""

    def __init__(self, shapes: dict[str, tuple[int, ...]], metadata: dict[str, str]):
        self.shapes = shapes
        self.metadata = metadata


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


# ------------------------------------------------------------------------------------------------- helpers


def _finite_or_null(value: Any) -> Any:
    """Replace non-finite floats by None, recursively, so that config.json is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {key: _finite_or_null(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_null(item) for item in value]
    return value


def _attnkit_version() -> str:
    from attnkit import __version__

    return __version__


def _write_bytes(path: Path, data: bytes) -> None:
    """Write and fsync a new file (with the permissions the umask gives)."""
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _fsync_dir(path: Path) -> None:
    """Make a directory's entries (new files, renames) durable; a no-op where directories cannot be opened."""
    if os.name != "posix":
        return
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
