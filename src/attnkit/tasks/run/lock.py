"""One writer at a time: the lock a command holds on a directory while it writes there (layer 5; no torch).

The lock is a file, ``DIR/.attnkit.lock``, that holds its owner's pid, host and process start time (JSON), and an
exclusive ``flock`` on that file held for as long as the owner runs. The kernel drops the ``flock`` when the owner
dies, however it dies, so a lock file left by a killed process is stale by construction: the next command takes it
over. A live owner is refused at once, in one line naming its pid. :func:`check_unlocked` asks without writing
anything (the checks every command makes before its first byte); :func:`acquire` takes the lock.

On systems without ``fcntl`` the pid alone decides: the owner is alive when a process with that pid and start time
exists on this host.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from attnkit.checkpointing.config_io import JsonConfig

__all__ = ["LOCK_FILE", "DirectoryLock", "LockOwner", "acquire", "check_unlocked", "pid_is_running"]

LOCK_FILE = ".attnkit.lock"

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


@dataclass
class LockOwner(JsonConfig):
    """What a lock file holds: who writes the directory."""

    kind_name: ClassVar[str] = "lock file"

    pid: int
    host: str = ""
    started: str | None = None  # the process's start time (``/proc/PID/stat`` field 22), to tell a reused pid
    command: str = ""


def process_start(pid: int) -> str | None:
    """The start time of process ``pid`` in clock ticks since boot (Linux), or None where it cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19]


def pid_is_running(pid: int, started: str | None = None) -> bool:
    """Whether a process ``pid`` runs on this machine (the one that started at ``started``, when given)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        pass
    return started is None or process_start(pid) in (None, started)


def _owner_text(path: Path) -> LockOwner | None:
    try:
        return LockOwner.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):  # half-written by a killed process, or edited: it proves nothing
        return None


def _refusal(directory: Path, owner: LockOwner | None, what: str) -> ValueError:
    who = "another attnkit process" if owner is None else f"attnkit process {owner.pid}"
    if owner is not None and owner.host and owner.host != socket.gethostname():
        who += f" on {owner.host}"
    doing = f" ({owner.command})" if owner is not None and owner.command else ""
    return ValueError(
        f"{directory}: {who}{doing} is writing this {what} (lock {directory / LOCK_FILE}); wait for it to finish or "
        "stop it, then run this again"
    )


def _held(path: Path) -> bool:
    """Whether a live process holds the lock file ``path`` (without taking it)."""
    if fcntl is None:  # pragma: no cover
        owner = _owner_text(path)
        return owner is not None and owner.host == socket.gethostname() and pid_is_running(owner.pid, owner.started)
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)  # closing drops a lock this probe took
    return False


def check_unlocked(directory: str | Path, *, what: str = "run directory") -> None:
    """Refuse a ``directory`` that a live process is writing (writes nothing)."""
    directory = Path(directory)
    path = directory / LOCK_FILE
    if path.is_file() and _held(path):
        raise _refusal(directory, _owner_text(path), what)


@dataclass
class DirectoryLock:
    """A held lock; :meth:`release` it (it deletes the lock file)."""

    path: Path
    descriptor: int

    def release(self) -> None:
        """Delete the lock file and drop the lock (the file goes first, so nobody locks a file being deleted)."""
        if self.descriptor < 0:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self.descriptor)
            self.descriptor = -1


def acquire(directory: str | Path, *, command: str = "", what: str = "run directory") -> DirectoryLock:
    """Take the lock of ``directory`` (created if needed), taking over a stale lock file of a dead process."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / LOCK_FILE
    owner = LockOwner(pid=os.getpid(), host=socket.gethostname(), started=process_start(os.getpid()), command=command)
    for _ in range(8):  # retried only when the file was replaced between open and flock
        if fcntl is None:  # pragma: no cover
            if _held(path):
                raise _refusal(directory, _owner_text(path), what)
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        else:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(descriptor)
                raise _refusal(directory, _owner_text(path), what) from None
            try:
                same = os.fstat(descriptor).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if not same:  # its owner deleted it while we opened it: lock the new one
                os.close(descriptor)
                continue
        os.ftruncate(descriptor, 0)
        os.write(descriptor, (json.dumps(owner.to_dict()) + "\n").encode("utf-8"))
        os.fsync(descriptor)
        return DirectoryLock(path, descriptor)
    raise _refusal(directory, None, what)
