"""Did a change make attnkit's hot paths slower? Instructions counted under callgrind, this checkout against a base.

Timings on a shared 2-core machine move by more than the 5% a regression check has to see (and across machines,
with the CPU's vector units); callgrind's instruction counts do not: the same binary and inputs give the same count
whatever else the machine runs. So this runs :mod:`bench._lib.icount.workloads` (multi-head attention forward + backward,
plain and packed; ``masked_softmax``; chunked additive scores; cached greedy decoding; a packed encoder training step
— small sizes, where attnkit's own Python overhead shows) under ``valgrind --tool=callgrind`` twice: with this
checkout's ``src`` and with the ``src`` of ``--base`` (checked out by ``git worktree`` into a temporary directory).
Each workload's instructions per call are compared; the ratio is this checkout / base (lower is better; the
threshold flags anything more than 5% above 1). Instructions are not seconds, but for the same torch kernels they
track attnkit's own work. Needs valgrind, its headers (``valgrind/callgrind.h``) and a C compiler, none of which
``make test`` installs; without them it says so in one line. Not part of ``make bench``: it needs a base revision.

Run: ``python -m bench.instruction_counts --base REV [--workloads NAME ...] [--out DIR]`` (about 10 minutes).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench._lib import common
from bench._lib.icount.workloads import ITERATIONS, WORKLOADS

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
THRESHOLD = 1.05  # this checkout / base; above it, a regression


def missing_tools() -> str | None:
    """Why the counts cannot be taken here, or None."""
    for tool in ("valgrind", "git"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        return "no C compiler (cc or gcc) to build the callgrind client requests"
    if not Path("/usr/include/valgrind/callgrind.h").is_file():
        return "valgrind's headers (valgrind/callgrind.h) are not installed"
    return None


def build_client_requests(directory: Path) -> Path:
    """Compile ``icount/client_requests.c`` into a shared library in ``directory``."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    target = directory / "libattnkit_cg.so"
    source = HERE / "_lib" / "icount" / "client_requests.c"
    subprocess.run([compiler, "-O1", "-shared", "-fPIC", str(source), "-o", str(target)], check=True)
    return target


def parse_dump(text: str) -> tuple[str, int]:
    """``(workload name, instructions)`` from one callgrind dump (the name is the dump's trigger)."""
    trigger = re.search(r"^desc: Trigger: Client Request: (\S+)", text, re.MULTILINE)
    total = re.search(r"^(?:summary|totals): (\d+)", text, re.MULTILINE)
    if trigger is None or total is None:
        raise ValueError("not a callgrind dump taken by a client request")
    return trigger.group(1), int(total.group(1))


def count(src: Path, library: Path, workloads: Sequence[str], out: Path) -> dict[str, float]:
    """Instructions per call of each workload, with ``src`` first on ``PYTHONPATH``."""
    out.mkdir(parents=True, exist_ok=True)
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}/callgrind.out",
        sys.executable,
        str(HERE / "_lib" / "icount" / "workloads.py"),
        str(library),
        *workloads,
    ]
    env = {**os.environ, "PYTHONPATH": str(src)}
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    counts = dict(parse_dump(path.read_text()) for path in out.glob("callgrind.out.*"))
    return {name: counts[name] / ITERATIONS for name in workloads}


def main(argv: Sequence[str] | None = None) -> dict[str, object]:
    """Count both revisions, print the table, write ``<out>/instruction_counts.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the revision to compare against (a commit, tag or branch)")
    parser.add_argument("--workloads", nargs="+", choices=sorted(WORKLOADS), default=list(WORKLOADS))
    parser.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    args = parser.parse_args(argv)
    reason = missing_tools()
    if reason is not None:
        parser.exit(2, f"bench.instruction_counts: {reason}; nothing counted\n")
    base_commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", args.base], check=True, capture_output=True, text=True
    ).stdout.strip()
    head_commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="attnkit-icount-") as tmp:
        work = Path(tmp)
        library = build_client_requests(work)
        base_tree = work / "base"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(base_tree), base_commit], check=True
        )
        try:
            base = count(base_tree / "src", library, args.workloads, work / "base-counts")
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(base_tree)], check=False)
        head = count(REPO / "src", library, args.workloads, work / "head-counts")
    rows = [
        common.Row(
            f"instructions: {name}", "per call", head[name], base[name], f"base {base_commit[:7]}", "count", THRESHOLD
        )
        for name in args.workloads
    ]
    print(common.format_table(rows))
    payload = {
        "base": base_commit,
        "head": head_commit,
        "head_has_uncommitted_changes": bool(
            subprocess.run(
                ["git", "-C", str(REPO), "status", "--porcelain", "src"], capture_output=True, text=True
            ).stdout.strip()
        ),
        "iterations": ITERATIONS,
        "threshold": THRESHOLD,
        "instructions_per_call": {"base": base, "head": head},
        "rows": common.rows_payload(rows),
    }
    print(f"wrote {common.write_json('instruction_counts', payload, args.out)}")
    return payload


if __name__ == "__main__":
    main()
