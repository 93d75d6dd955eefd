"""Writing checkpoints atomically: build in a temporary sibling, fsync, swap in with two renames; and the repair of
what a crash between those renames leaves (layer 5). The format and the crash analysis are described in
:mod:`attnkit.checkpointing`, which re-exports :func:`save_checkpoint` and :func:`recover_checkpoint`."""

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
from safetensors.torch import save
from torch import nn

from attnkit.checkpointing._format import (
    ALIASES_KEY,
    CONFIG_FILE,
    FORMAT,
    FORMAT_VERSION,
    RESERVED_FILES,
    SECTION,
    STATE_JSON_FILE,
    STATE_TENSORS_FILE,
    WEIGHTS_FILE,
    CheckpointError,
)
from attnkit.checkpointing._state_codec import encode_state

__all__ = ["recover_checkpoint", "save_checkpoint"]


def save_checkpoint(
    directory: str | Path,
    model: nn.Module,
    *,
    model_config: Mapping[str, Any] | None = None,
    extra_files: Mapping[str, str | Path] | None = None,
    trainer_state: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``model`` (unwrap DDP first) as a checkpoint directory at ``directory``, atomically replacing any
    checkpoint there; return the directory.

    ``model_config`` (JSON options that rebuild the model) goes to the top level of ``config.json``, whose key
    ``"attnkit"`` is reserved for ``metadata`` (epoch, metrics, ...; non-finite floats written as ``null``).
    ``extra_files``: ``{name in the checkpoint: source path}``, copied in. ``trainer_state``: for resumable
    checkpoints, any nest of dicts, lists, tuples, scalars, strings and tensors (an optimizer's ``state_dict()``).

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
        _write_bytes(staging / WEIGHTS_FILE, save(weights, metadata={"format": "pt", ALIASES_KEY: json.dumps(aliases)}))
        for name, source in sources.items():
            shutil.copyfile(source, staging / name)
            _fsync_file(staging / name)
        if state_json is not None:
            _write_bytes(staging / STATE_TENSORS_FILE, save(state_tensors, metadata={"format": "pt"}))
            _write_bytes(staging / STATE_JSON_FILE, state_json.encode("utf-8"))
        # written last: a directory with a config is complete
        _write_bytes(staging / CONFIG_FILE, config_text.encode("utf-8"))
        _fsync_dir(staging)
        _publish(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def recover_checkpoint(directory: str | Path) -> None:
    """Repair what a save interrupted by a crash left next to ``directory``: its previous version ``.<name>.old``
    is moved back when ``directory`` is missing, and leftover temporary directories are deleted."""
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
    if SECTION in config:
        raise ValueError(f"model_config must not use the key {SECTION!r}: it holds attnkit's own metadata")
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
        return json.dumps({**config, SECTION: section}, indent=2, allow_nan=False) + "\n"
    except (TypeError, ValueError) as error:
        raise ValueError(f"checkpoint metadata is not JSON-serialisable: {error}") from error


def _check_extra_files(extra_files: Mapping[str, str | Path] | None) -> dict[str, Path]:
    """Validate ``{name: source}`` before anything is written."""
    sources: dict[str, Path] = {}
    for name, source in (extra_files or {}).items():
        if not name or Path(name).name != name or name in {".", ".."}:
            raise ValueError(f"extra file name {name!r} must be a plain file name, without directories")
        if name in RESERVED_FILES:
            raise ValueError(f"extra file name {name!r} is reserved for the checkpoint's own files")
        path = Path(source)
        if not path.is_file():
            raise ValueError(f"extra file {name!r}: {path} is not a file")
        sources[name] = path
    return sources


def _weights_to_save(model: nn.Module) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """The state_dict as contiguous CPU tensors, each storage once: ``(tensors, {alias: stored name})``. Tied
    parameters are stored once; other tensors sharing memory with an earlier one are cloned (safetensors wants so)."""
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
