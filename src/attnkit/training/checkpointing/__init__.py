"""Checkpoints: safetensors weights, a JSON config and copied files in one directory, written atomically (layer 5).

| module | holds |
|---|---|
| :mod:`~attnkit.training.checkpointing._read` | the format, the path rule (``resolve_checkpoint``), reading |
| :mod:`~attnkit.training.checkpointing._write` | ``save_checkpoint`` (atomic) and ``recover_checkpoint`` |
| :mod:`~attnkit.training.checkpointing._format` | the format's file names, version and error |
| :mod:`~attnkit.training.checkpointing._state_codec` | the trainer state as JSON plus a flat tensor dict |

Import from here (or from :mod:`attnkit.training`), not from the private modules.
"""

from attnkit.training.checkpointing._read import (
    CONFIG_FILE,
    EXPORT_MANIFEST,
    FORMAT,
    FORMAT_VERSION,
    STATE_JSON_FILE,
    STATE_TENSORS_FILE,
    WEIGHTS_FILE,
    CheckpointError,
    export_kind,
    export_message,
    is_export,
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
    "EXPORT_MANIFEST",
    "FORMAT",
    "FORMAT_VERSION",
    "STATE_JSON_FILE",
    "STATE_TENSORS_FILE",
    "WEIGHTS_FILE",
    "CheckpointError",
    "export_kind",
    "export_message",
    "is_export",
    "load_model_weights",
    "read_config",
    "read_config_of_kind",
    "read_metadata",
    "read_trainer_state",
    "recover_checkpoint",
    "resolve_checkpoint",
    "save_checkpoint",
]
