"""Training: the fit loop and its recipe, checkpoints, precision and devices, distributed runs (layer 5).

| module | holds |
|---|---|
| :mod:`~attnkit.training.loop` | ``fit``: epochs, validation, best weights, ``last/`` and ``best/`` |
| :mod:`~attnkit.training._epoch` | one epoch of updates under autocast, with the fp16 gradient scaler |
| :mod:`~attnkit.training._run_state` | the loop's counters and the checkpoints that persist them |
| :mod:`~attnkit.training._progress` | the progress line |
| :mod:`~attnkit.training.fit_config` | ``FitConfig``: the recipe's settings |
| :mod:`~attnkit.training.task` | the protocol of a loss with summable metrics |
| :mod:`~attnkit.training.schedule` | learning-rate schedules |
| :mod:`~attnkit.training.averaging` | checkpoint averaging: the model validated and shipped |
| :mod:`~attnkit.training.optim` | AdamW, the linear warm-up and the plateau schedule's moves |
| :mod:`~attnkit.training.cross_entropy` | the loss and metrics of every single-label classifier |
| :mod:`~attnkit.training.precision` | devices, autocast, ``place_model``, ``ready_for_inference`` |
| :mod:`~attnkit.training.distributed` | torchrun: process groups, sharded batches, reductions |
| :mod:`~attnkit.training.seeding` | seeds for Python, NumPy and torch, per epoch and per rank |
| :mod:`~attnkit.training.config_io` | ``JsonConfig``: dataclass configs as JSON |
| :mod:`~attnkit.training.run_report` | ``metrics.json`` and ``metrics.csv`` |
| :mod:`~attnkit.training.checkpointing` | the checkpoint format, its reader and atomic writer (re-exported here) |
"""

from attnkit.training.checkpointing import (
    CONFIG_FILE,
    CheckpointError,
    load_model_weights,
    read_config,
    read_config_of_kind,
    read_metadata,
    read_trainer_state,
    recover_checkpoint,
    resolve_checkpoint,
    save_checkpoint,
)

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
