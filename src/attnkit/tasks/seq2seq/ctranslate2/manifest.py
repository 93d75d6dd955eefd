"""The manifest of an attnkit CTranslate2 export, and the checks that refuse a tampered or incomplete one (layer 5).

``attnkit_export.json`` records what was exported — the architecture and its SHA-256, a SHA-256 of the attnkit
weights, the quantisation, the versions, the checkpoint it came from — and the SHA-256 and size of every file beside
it. :func:`verify_export` checks it all before anything is loaded.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from glob import escape as glob_escape
from pathlib import Path
from typing import Any, ClassVar, Literal

import torch

from attnkit.checkpointing.config_io import JsonConfig
from attnkit.tasks.run.manifest import file_sha256
from attnkit.tasks.seq2seq.ctranslate2.probe import MANIFEST_FILE

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MANIFEST_FILE",
    "ExportError",
    "ExportManifest",
    "check_destination",
    "file_table",
    "json_sha256",
    "move_into_place",
    "remove_stale_partials",
    "verify_export",
    "weights_sha256",
]

FORMAT, FORMAT_VERSION = "attnkit.ctranslate2", 1
_VOCABULARIES = ("shared_vocabulary.json", "source_vocabulary.json", "target_vocabulary.json")


class ExportError(ValueError):
    """An export cannot be written, or a directory is not a complete, untouched attnkit export (names the path)."""


@dataclass
class ExportedFile(JsonConfig):
    """One entry of the manifest's ``files`` table."""

    kind_name: ClassVar[str] = "export manifest"

    sha256: str
    bytes: int


@dataclass
class ExportedModel(JsonConfig):
    """The manifest's ``model``: the architecture (the keys every reader needs are checked; the rest is hashed)."""

    kind_name: ClassVar[str] = "export manifest"

    model: Literal["transformer"]
    source_vocab_size: int
    target_vocab_size: int
    max_positions: int | None = None

    @classmethod
    def from_dict(cls, values):  # type: ignore[override]
        """Check the keys readers use; the other keys of the description stay free (its hash guards them)."""
        known = {"model", "source_vocab_size", "target_vocab_size", "max_positions"}
        return super().from_dict({key: value for key, value in values.items() if key in known})


@dataclass
class ExportManifest(JsonConfig):
    """``attnkit_export.json``, field by field (see the module docstring)."""

    kind_name: ClassVar[str] = "export manifest"

    format: Literal["attnkit.ctranslate2"]
    format_version: int
    model: dict[str, Any]
    model_config_sha256: str
    files: dict[str, ExportedFile]
    tokenizers: list[str]
    weights_sha256: str = ""
    attnkit_version: str = ""
    ctranslate2_version: str = ""
    quantization: Literal["int8", "int8_float32", "int16", "float16"] | None = None
    model_config: dict[str, Any] | None = None
    source: str | None = None
    kind: str = "seq2seq"  # the task that exported it (probe.export_kind)


def json_sha256(value: Any) -> str:
    """SHA-256 of ``value`` as canonical JSON (sorted keys, no spaces)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def weights_sha256(model: torch.nn.Module) -> str:
    """SHA-256 of the model's ``state_dict`` (names, dtypes, shapes and bytes, in key order): which weights these are."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        flat = tensor.detach().cpu().contiguous().reshape(-1)
        digest.update(f"{name}:{flat.dtype}:{tuple(tensor.shape)};".encode())
        digest.update(flat.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def file_table(directory: Path) -> dict[str, dict[str, Any]]:
    """``{name: {"sha256", "bytes"}}`` of every file in ``directory`` (what the manifest's ``"files"`` holds)."""
    files = [path for path in sorted(directory.iterdir()) if path.is_file()]
    return {path.name: {"sha256": file_sha256(path), "bytes": path.stat().st_size} for path in files}


def check_destination(out_dir: Path, overwrite: bool) -> None:
    """Refuse an ``out_dir`` that holds anything but an earlier export (and that one unless ``overwrite``)."""
    if not out_dir.exists() or (out_dir.is_dir() and not any(out_dir.iterdir())):
        return
    if not out_dir.is_dir() or not (out_dir / MANIFEST_FILE).is_file():
        raise ExportError(f"{out_dir}: exists and is not an attnkit export; refusing to replace it")
    if not overwrite:
        raise ExportError(f"{out_dir}: holds an export already; --overwrite replaces it")


def remove_stale_partials(out_dir: Path) -> list[Path]:
    """Delete what exports to ``out_dir`` killed half-way left beside it (``.NAME.partial-PID`` directories of
    processes that are gone), and put back an earlier export a killed replacement had moved aside
    (``.NAME.old-PID`` while ``NAME`` is missing); return what was removed."""
    from attnkit.tasks.run.lock import pid_is_running

    removed = []
    parent = out_dir.parent
    if not parent.is_dir():
        return removed
    for leftover in ("old", "partial"):
        for stale in sorted(parent.glob(f".{glob_escape(out_dir.name)}.{leftover}-*")):
            pid = stale.name.rsplit("-", 1)[-1]
            if not pid.isdigit() or pid_is_running(int(pid)):
                continue
            if leftover == "old" and not out_dir.exists():
                stale.rename(out_dir)
                continue
            shutil.rmtree(stale, ignore_errors=True)
            removed.append(stale)
    return removed


def move_into_place(partial: Path, out_dir: Path) -> None:
    """Rename ``partial`` to ``out_dir``, replacing an empty directory or an earlier export."""
    old = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}"
    if out_dir.exists():
        out_dir.rename(old)
    try:
        partial.rename(out_dir)
    except OSError:
        if old.exists():
            old.rename(out_dir)
        raise
    shutil.rmtree(old, ignore_errors=True)


def verify_export(directory: str | Path) -> dict[str, Any]:
    """Check that ``directory`` is a complete, unchanged attnkit export and return its manifest."""
    directory = Path(directory)
    path = directory / MANIFEST_FILE
    if not directory.is_dir():
        raise ExportError(f"{directory}: no such directory")
    if not path.is_file():
        raise ExportError(f"{directory}: no {MANIFEST_FILE}: not an attnkit CTranslate2 export")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ExportError(f"{path}: unreadable ({error})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ExportError(f"{path}: not an attnkit CTranslate2 manifest (format {FORMAT!r})")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ExportError(
            f"{path}: format_version {manifest.get('format_version')!r}; this attnkit reads {FORMAT_VERSION}"
        )
    try:
        checked = ExportManifest.from_dict(manifest)
        ExportedModel.from_dict(checked.model)
    except ValueError as error:
        raise ExportError(f"{path}: {error}") from None
    model, files = manifest["model"], manifest["files"]
    if json_sha256(model) != manifest["model_config_sha256"]:
        raise ExportError(f"{path}: the model description does not match model_config_sha256 (the manifest was edited)")
    vocabularies = [name for name in _VOCABULARIES if name in files]
    needed = ["model.bin", "config.json", *(checked.tokenizers or ["tokenizer files"])]
    if vocabularies not in (["shared_vocabulary.json"], ["source_vocabulary.json", "target_vocabulary.json"]):
        needed.append("source_vocabulary.json and target_vocabulary.json, or shared_vocabulary.json")
    for name in needed:
        if name not in files:
            raise ExportError(f"{path}: does not list {name} (the export is incomplete)")
    for name, entry in sorted(files.items()):
        file = directory / name
        if Path(name).name != name or name == MANIFEST_FILE:
            raise ExportError(f"{path}: bad file name {name!r}")
        if not file.is_file():
            raise ExportError(f"{file}: missing (the export is incomplete)")
        if file_sha256(file) != entry["sha256"]:
            raise ExportError(
                f"{file}: differs from {MANIFEST_FILE} (changed after export, or the manifest is another export's)"
            )
    return manifest
