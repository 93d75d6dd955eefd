"""Run time: the device a model runs on and the precision it computes in, for every command (layer 5).

| module | holds |
|---|---|
| :mod:`~attnkit.runtime.devices` | ``resolve_device``, ``check_precision``, ``autocast``, ``ready_for_inference``, moving batches |
| :mod:`~attnkit.runtime.torchrun_env` | torchrun's ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, read in one place |

This ``__init__`` imports no torch: the command line reads :data:`PRECISIONS` before torch loads.
"""

from __future__ import annotations

__all__ = ["PRECISIONS"]

PRECISIONS = ("fp32", "bf16", "fp16")  # --precision: no autocast, or autocast to bfloat16 / float16
