"""What the command-line tests (first and second hour, run directories, read-back files) share: a small labelled
data set, run ``attnkit`` as a user would (a new process), check that a refusal is one ``attnkit: error:`` line,
and hash a directory byte for byte."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

POSITIVE = ["great taste and lovely smell", "really great coffee , will buy again", "lovely tea , great price"]
NEGATIVE = ["awful taste and stale smell", "really awful coffee , never again", "stale tea , awful price"]
SMALL = ["--model", "pooled", "--encoder", "none", "--embed-dim", "8", "--vocab-size", "100", "--no-progress"]
ONE_EPOCH = [*SMALL, "--epochs", "1", "--batch-size", "4"]


def attnkit(*args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``attnkit ARGS`` in a new process, with one thread."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "attnkit.cli", *args], input=stdin, capture_output=True, text=True, env=env, cwd=cwd
    )


def assert_user_error(result: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit 2, one ``attnkit: error:`` line holding every fragment, no traceback; returns the line."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("attnkit: error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def tree_hash(directory: Path) -> dict[str, str]:
    """Every entry under ``directory`` (hidden ones too): files by SHA-256, directories and links marked."""
    entries = {}
    for path in sorted(directory.rglob("*")):
        name = str(path.relative_to(directory))
        if path.is_symlink():
            entries[name] = "link:" + os.readlink(path)
        elif path.is_dir():
            entries[name] = "dir"
        else:
            entries[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return entries


def write_reviews(path: Path, *, suffix: str = "") -> Path:
    """A small CSV of 36 labelled reviews (``text``, ``label``)."""
    rows = [(t + suffix, "pos") for t in POSITIVE] * 6 + [(t + suffix, "neg") for t in NEGATIVE] * 6
    path.write_text("text,label\n" + "".join(f'"{text}",{label}\n' for text, label in rows))
    return path


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    process = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(process.stdout)
