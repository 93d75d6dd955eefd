"""bench.instruction_counts: its dump parser, its workloads (run without callgrind) and its missing-tool line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from bench._lib.icount import workloads

from bench import instruction_counts

DUMP = """# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 4197
cmd:  python workloads.py lib.so softmax
part: 1

desc: I1 cache:
desc: Timerange: Basic block 0 - 1000
desc: Trigger: Client Request: softmax

positions: line
events: Ir
summary: 3983248
totals: 3983248
"""


def test_parse_dump_reads_the_trigger_and_the_total() -> None:
    assert instruction_counts.parse_dump(DUMP) == ("softmax", 3983248)
    with pytest.raises(ValueError, match="client request"):
        instruction_counts.parse_dump(DUMP.replace("Client Request: softmax", "Program termination"))


def test_every_workload_runs_without_callgrind() -> None:
    script = Path(workloads.__file__)
    result = subprocess.run(
        [sys.executable, str(script), "-", *workloads.WORKLOADS], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == [word for name in workloads.WORKLOADS for word in (name, "done")]


def test_missing_tools_is_one_line_and_main_refuses_without_them(monkeypatch, capsys) -> None:
    reason = instruction_counts.missing_tools()
    assert reason is None or "\n" not in reason
    monkeypatch.setattr(instruction_counts, "missing_tools", lambda: "valgrind is not installed")
    with pytest.raises(SystemExit) as exit_info:
        instruction_counts.main(["--base", "HEAD"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == "bench.instruction_counts: valgrind is not installed; nothing counted"
