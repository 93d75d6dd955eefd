"""Training: the fit loop and its recipe, checkpoints, the fp16 scaler, distributed runs (layer 5).

| module | holds |
|---|---|
| :mod:`~attnkit.training.loop` | ``fit``: its arguments, its session, its result |
| :mod:`~attnkit.training._fit_session` | the epochs of one sitting: selection, patience, step checkpoints, pauses |
| :mod:`~attnkit.training._epoch` | one epoch of updates under autocast, with the fp16 gradient scaler; the rules |
| :mod:`~attnkit.training._run_state` | the loop's counters, and resuming them from ``last/`` (mid-epoch too) |
| :mod:`~attnkit.training._run_checkpoints` | writing ``last/`` and ``best/`` (at an epoch's end or at a step) |
| :mod:`~attnkit.training._progress` | the progress line |
| :mod:`~attnkit.training.fit_config` | ``FitConfig``: the recipe's settings |
| :mod:`~attnkit.training.objective` | the protocol of a loss with summable metrics |
| :mod:`~attnkit.training.schedule` | learning-rate schedules |
| :mod:`~attnkit.training.averaging` | checkpoint averaging: the model validated and shipped |
| :mod:`~attnkit.training.average_checkpoints` | one checkpoint, the mean of several of one architecture (a model soup; `python -m` it) |
| :mod:`~attnkit.training.optim` | AdamW, the linear warm-up and the plateau schedule's moves |
| :mod:`~attnkit.training.cross_entropy` | the old path of :mod:`attnkit.functional.cross_entropy` |
| :mod:`~attnkit.training.precision` | the fp16 grad scaler and ``place_model`` (run-time devices: :mod:`attnkit.runtime`) |
| :mod:`~attnkit.training.distributed` | torchrun: process groups, sharded batches, reductions |
| :mod:`~attnkit.training.torchrun_env` | the old path of :mod:`attnkit.runtime.torchrun_env` |
| :mod:`~attnkit.training.seeding` | seeds for Python, NumPy and torch, per epoch and per rank |
| :mod:`~attnkit.training.config_io` | the old path of :mod:`attnkit.checkpointing.config_io` (deprecated alias) |
| :mod:`~attnkit.training.run_report` | ``metrics.json`` and ``metrics.csv`` |
| :mod:`~attnkit.training.init_from` | ``--init-from``: a run's first weights from a checkpoint or shipped model |
| :mod:`~attnkit.training.checkpointing` | the old path of :mod:`attnkit.checkpointing`, the checkpoint format (deprecated alias; its names are re-exported here) |
"""

from __future__ import annotations

from typing import Any

# The checkpoint API, re-exported without importing it here: `import attnkit.training.fit_config` (as the
# command line's parsers do) must not load torch.
__all__ = [
    "CONFIG_FILE",
    "CheckpointError",
    "load_model_weights",
    "read_config",
    "read_config_of_kind",
    "read_metadata",
    "read_trainer_state",
    "recover_checkpoint",
    "resolve_checkpoint",
    "save_checkpoint",
]


def __getattr__(name: str) -> Any:
    """``attnkit.training.save_checkpoint`` and the rest of ``__all__``, from :mod:`attnkit.checkpointing`."""
    if name in __all__:
        from attnkit import checkpointing

        return getattr(checkpointing, name)
    raise AttributeError(f"module 'attnkit.training' has no attribute {name!r}")
