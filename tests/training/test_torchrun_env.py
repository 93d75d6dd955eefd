"""torchrun's environment is read in one place, without torch: rank 0 of 1 outside torchrun."""

from __future__ import annotations

import subprocess
import sys

from attnkit.runtime.torchrun_env import TorchrunEnv, torchrun_env


def test_outside_torchrun_a_run_is_rank_0_of_1(monkeypatch):
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    assert torchrun_env() == TorchrunEnv(rank=0, local_rank=0, world_size=1)
    assert torchrun_env().is_main


def test_the_variables_torchrun_sets_are_read(monkeypatch):
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "4")
    assert torchrun_env() == TorchrunEnv(rank=3, local_rank=1, world_size=4)
    assert not torchrun_env().is_main


def test_reading_it_loads_no_torch():
    code = "import sys, attnkit.runtime.torchrun_env, attnkit.training.fit_config; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"
