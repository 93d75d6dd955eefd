"""torchrun's environment, read in one place: ``RANK``, ``LOCAL_RANK`` and ``WORLD_SIZE`` (layer 5; no torch).

``torchrun --nproc-per-node N`` sets them in each process it starts; outside torchrun they are unset and a run is
rank 0 of 1. ``attnkit.training.distributed`` joins the process group they describe.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["TorchrunEnv", "torchrun_env"]


@dataclass(frozen=True)
class TorchrunEnv:
    """This process's place in a torchrun job: global rank, rank on this machine, number of processes."""

    rank: int = 0
    local_rank: int = 0
    world_size: int = 1

    @property
    def is_main(self) -> bool:
        """True on rank 0, the process that prints and writes the run's files."""
        return self.rank == 0


def torchrun_env() -> TorchrunEnv:
    """The environment as it is now (``TorchrunEnv()`` outside torchrun)."""
    return TorchrunEnv(
        rank=int(os.environ.get("RANK", "0")),
        local_rank=int(os.environ.get("LOCAL_RANK", "0")),
        world_size=int(os.environ.get("WORLD_SIZE", "1")),
    )
