"""``bench.cli_startup``: the rows and JSON of a one-round run (no timing assertions: its figures mean nothing).

The commands are swapped for near-empty interpreters (each real one costs seconds on a busy machine); ``make bench``
runs the real ones.
"""

from __future__ import annotations

import json
import math
import sys

from bench._lib import common

from bench import cli_startup


def test_one_round_writes_rows_for_each_command_against_import_torch(tmp_path, monkeypatch):
    cheap = {name: [sys.executable, "-S", "-c", "pass"] for name in cli_startup.COMMANDS}
    monkeypatch.setattr(cli_startup, "COMMANDS", cheap)
    rows, payload = cli_startup.run(quick=True, repeats=1)
    assert [row.benchmark for row in rows] == [
        "attnkit --help (wall)",
        "attnkit --help (cpu)",
        "attnkit train --help (wall)",
        "attnkit train --help (cpu)",
    ]
    for row in rows:
        assert row.peer_name == "python -c 'import torch'"
        assert math.isfinite(row.ratio) and row.ratio > 0
    assert payload["help_median_wall_seconds"] == rows[0].attnkit
    assert payload["target_met"] == (rows[0].attnkit <= cli_startup.TARGET_SECONDS)
    for samples in payload["samples"].values():
        assert len(samples["wall"]) == len(samples["cpu"]) == 1
    path = common.write_json(cli_startup.NAME, payload, tmp_path)
    assert json.loads(path.read_text())["rounds"] == 1


def test_a_failing_command_raises():
    import subprocess
    import sys

    import pytest

    with pytest.raises(subprocess.CalledProcessError):
        cli_startup.time_command([sys.executable, "-c", "raise SystemExit(3)"])
