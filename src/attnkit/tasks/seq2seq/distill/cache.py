"""The teachers' outputs kept on disk, so that a killed run, a ``--resume`` in a later sitting or another student
of the same teachers does not decode again what is done (layer 5; stands apart: imports nothing of attnkit).

An entry is a directory named by its key — a hash of the teachers' files, in member order, and of the decoding
settings (:func:`entry_key`) — under ``$ATTNKIT_CACHE/teachers/``; the sources are the keys inside it. Each chunk
of decoded sources is one file, written to a temporary name and renamed into place, so a chunk is either whole or
absent::

    teachers/KEY/teachers.json      {"format": "attnkit.teacher-outputs", "version": 1, "key": KEY, ...}: what
                                    the key was made of (the teachers, their files' SHA-256, the beam settings)
    teachers/KEY/chunk-HASH.json    {"format", "version", "key": KEY, "sources": [...], "outputs": [...],
                                    "sha256": SHA-256 of the JSON text of [sources, outputs]}

``HASH`` is a hash of the chunk's sources. :meth:`TeacherCache.read` checks every chunk (its format, its key, as
many outputs as sources, its checksum); a chunk that fails is removed and counted as damaged, so its sources are
decoded again and never read from it.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["FORMAT", "VERSION", "CacheRead", "TeacherCache", "entry_key"]

FORMAT = "attnkit.teacher-outputs"
VERSION = 1
DESCRIPTION = "teachers.json"


def entry_key(description: Mapping[str, Any]) -> str:
    """The entry's name: 24 hex digits of the SHA-256 of ``description`` (the teachers' file hashes and the
    decoding settings) as sorted JSON."""
    text = json.dumps({"format": FORMAT, "version": VERSION, **description}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _checksum(sources: Sequence[str], outputs: Sequence[str]) -> str:
    return hashlib.sha256(json.dumps([list(sources), list(outputs)]).encode()).hexdigest()


@dataclass(frozen=True)
class CacheRead:
    """What :meth:`TeacherCache.read` found: ``outputs`` (source -> the teachers' output) and how many chunk files
    were ``damaged`` (removed)."""

    outputs: dict[str, str]
    damaged: int


class TeacherCache:
    """One entry: the outputs of one set of teachers decoding with one set of settings (``key_parts``); ``about``
    is more for people to read in ``teachers.json``, not part of the key."""

    def __init__(self, root: str | Path, key_parts: Mapping[str, Any], about: Mapping[str, Any] | None = None) -> None:
        self.key = entry_key(key_parts)
        self.directory = Path(root) / self.key
        self.description = {**(about or {}), **key_parts}

    def read(self) -> CacheRead:
        """Every whole chunk's outputs; chunks that are damaged or were written for another key are removed."""
        outputs: dict[str, str] = {}
        damaged = 0
        _remove_stale_temporaries(self.directory)
        for path in sorted(self.directory.glob("chunk-*.json")):
            chunk = self._chunk(path)
            if chunk is None:
                damaged += 1
                path.unlink(missing_ok=True)
                continue
            outputs.update(zip(*chunk, strict=True))
        return CacheRead(outputs, damaged)

    def _chunk(self, path: Path) -> tuple[list[str], list[str]] | None:
        """A chunk's ``(sources, outputs)`` if it is whole and this entry's, else None."""
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            sources, outputs = record["sources"], record["outputs"]
            whole = (
                record["format"] == FORMAT
                and record["version"] == VERSION
                and record["key"] == self.key
                and isinstance(sources, list)
                and isinstance(outputs, list)
                and len(sources) == len(outputs)
                and all(isinstance(text, str) for text in (*sources, *outputs))
                and record["sha256"] == _checksum(sources, outputs)
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return (sources, outputs) if whole else None

    def write(self, sources: Sequence[str], outputs: Sequence[str]) -> Path:
        """Add one chunk (a temporary file, fsynced, renamed into place); the entry's ``teachers.json`` is written
        with the first chunk. Returns the chunk's path."""
        if len(sources) != len(outputs):
            raise ValueError(f"{len(sources)} sources but {len(outputs)} outputs")
        self.directory.mkdir(parents=True, exist_ok=True)
        described = {"format": FORMAT, "version": VERSION, "key": self.key, **self.description}
        if not (self.directory / DESCRIPTION).is_file():
            _write_atomically(self.directory / DESCRIPTION, json.dumps(described, indent=1) + "\n")
        name = hashlib.sha256("\n".join(sources).encode()).hexdigest()[:24]
        record = {"format": FORMAT, "version": VERSION, "key": self.key, "sources": list(sources),
                  "outputs": list(outputs), "sha256": _checksum(sources, outputs)}  # fmt: skip
        path = self.directory / f"chunk-{name}.json"
        _write_atomically(path, json.dumps(record, ensure_ascii=False))
        return path


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _remove_stale_temporaries(directory: Path) -> None:
    """Delete the temporary files of writers that were killed (their process is gone)."""
    for path in directory.glob(".*.tmp-*"):
        pid = path.name.rsplit(".tmp-", 1)[1].split("-", 1)[0]
        if pid.isdigit() and not _running(int(pid)):
            path.unlink(missing_ok=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
