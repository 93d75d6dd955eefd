"""What a run directory records about itself: ``OUT/attnkit_run.json`` (layer 5; no torch).

The manifest says which command started the run, with which settings and inputs (each input file by its absolute
path, size and SHA-256), and which entries of the directory the run writes. ``--overwrite`` removes exactly those
entries (so a report or notes a person put into the run directory survive it); ``--resume`` compares its settings
and inputs with the new command's and names every difference (:func:`differences`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from attnkit.checkpointing.config_io import JsonConfig, read_json_file

__all__ = [
    "FORMAT",
    "LEGACY_RUN_ENTRIES",
    "MANIFEST_FILE",
    "InputRecord",
    "RunManifest",
    "differences",
    "file_sha256",
    "input_record",
    "read_manifest",
    "remembered_sha256",
    "write_manifest",
]

MANIFEST_FILE = "attnkit_run.json"
FORMAT = "attnkit.run"
# What runs written before the manifest existed put into their directory (what --overwrite removes from them).
LEGACY_RUN_ENTRIES = ("best", "last", "metrics.json", "metrics.csv", "tokenizer", "tokenizers", "tensorboard")


@dataclass
class InputRecord(JsonConfig):
    """One input of a run: a built-in data set's name (no hash), or a file's absolute path, size and SHA-256."""

    kind_name: ClassVar[str] = "run manifest input"

    path: str
    sha256: str | None = None
    bytes: int | None = None


@dataclass
class RunManifest(JsonConfig):
    """``attnkit_run.json``: see the module docstring."""

    kind_name: ClassVar[str] = "run manifest"

    format: Literal["attnkit.run"]
    format_version: int
    command: str
    settings: dict[str, Any]
    inputs: dict[str, InputRecord]
    written: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.format_version != 1:
            raise ValueError(f"run manifest format_version {self.format_version} is not one this attnkit reads (1)")
        bad = [name for name in self.written if not name or Path(name).name != name or name in (".", "..")]
        if bad:
            raise ValueError(f"run manifest field 'written' holds {bad[0]!r}, which is not a plain entry name")


def file_sha256(path: Path) -> str:
    """SHA-256 of the file's bytes, read 1 MiB at a time."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


REMEMBER_ABOVE_BYTES = 64 * 2**20  # inputs larger than this have their hash remembered in attnkit's cache


def remembered_sha256(path: Path) -> str:
    """:func:`file_sha256` of a large file, remembered under ``$ATTNKIT_CACHE/hashes/`` by its resolved path, size
    and modification time (in nanoseconds); small files are hashed every time."""
    stat = path.stat()
    if stat.st_size <= REMEMBER_ABOVE_BYTES:
        return file_sha256(path)
    from attnkit.data.cache import cache_dir

    key = hashlib.sha256(repr((str(path), stat.st_size, stat.st_mtime_ns)).encode()).hexdigest()[:24]
    memo = cache_dir() / "hashes" / key
    try:
        known = memo.read_text(encoding="ascii").strip()
        if len(known) == 64:
            return known
    except (OSError, UnicodeDecodeError):
        pass
    digest = file_sha256(path)
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        memo.write_text(digest, encoding="ascii")
    except OSError:  # a read-only cache costs the next run a hash, nothing more
        pass
    return digest


def input_record(value: str, *, builtin: bool) -> InputRecord:
    """The record of an input option's value: a built-in name as given, a file by path, size and hash."""
    if builtin:
        return InputRecord(path=value)
    path = Path(value).expanduser().resolve()
    return InputRecord(path=str(path), sha256=remembered_sha256(path), bytes=path.stat().st_size)


def read_manifest(directory: Path) -> RunManifest | None:
    """The manifest of the run in ``directory``, or None for a run without one (written before it existed)."""
    path = directory / MANIFEST_FILE
    if not path.exists():
        return None
    return read_json_file(path, RunManifest)


def write_manifest(directory: Path, manifest: RunManifest) -> None:
    """Write the manifest atomically (a temporary file, fsynced, then renamed)."""
    path = directory / MANIFEST_FILE
    temporary = directory / f".{MANIFEST_FILE}.tmp-{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(manifest.to_dict(), indent=1) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def differences(
    saved: RunManifest, command: str, settings: Mapping[str, Any], inputs: Mapping[str, InputRecord],
    *, may_change: Sequence[str], added_later: Mapping[str, Any] | None = None,
) -> list[str]:  # fmt: skip
    """Every way the new command differs from the run it would resume, one phrase each (``"model: han then, pooled
    now"``); ``may_change`` settings are not compared. A setting the saved run does not record but ``added_later``
    names is compared as if the saved run had held ``added_later[name]``."""
    added_later = added_later or {}
    if saved.command != command:
        return [f"command: {saved.command} then, {command} now"]
    found = []
    for name in sorted((set(saved.settings) | set(settings)) - set(may_change) - set(saved.inputs) - set(inputs)):
        then = saved.settings.get(name, added_later.get(name, "(not set)"))
        now = settings.get(name, "(not set)")
        if then != now:
            found.append(f"{name}: {_shown(then)} then, {_shown(now)} now")
    for name in sorted(set(saved.inputs) | set(inputs)):
        then, now = saved.inputs.get(name), inputs.get(name)
        if then is None or now is None:
            found.append(f"{name}: {_shown(None if then is None else then.path)} then, "
                         f"{_shown(None if now is None else now.path)} now")  # fmt: skip
        elif then.path != now.path:
            found.append(f"{name}: {then.path} then, {now.path} now")
        elif then.sha256 != now.sha256:
            found.append(
                f"{name}: {now.path} has changed since the run started (sha256 {str(then.sha256)[:8]} then, "
                f"{str(now.sha256)[:8]} now)"
            )
    return found


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list):
        return ",".join(map(str, value)) or "[]"
    return str(value)
