"""Checkpoints: safetensors weights, a JSON config and copied files in one directory, written atomically (layer 5).

The format training writes and inference reads, so it lives outside ``training/``: the command line and the
inference modules import this package and nothing of :mod:`attnkit.training` (``tests/test_house.py``).

| module | holds |
|---|---|
| :mod:`~attnkit.checkpointing._read` | the format, the path rule (``resolve_checkpoint``), reading |
| :mod:`~attnkit.checkpointing._write` | ``save_checkpoint`` (atomic) and ``recover_checkpoint`` |
| :mod:`~attnkit.checkpointing._format` | the format's file names, version and error |
| :mod:`~attnkit.checkpointing._state_codec` | the trainer state as JSON plus a flat tensor dict |
| :mod:`~attnkit.checkpointing.config_io` | ``JsonConfig``: dataclass configs (``config.json``, manifests) as JSON |

Import from here (or from :mod:`attnkit.training`), not from the private modules. Whether a directory is a
CTranslate2 export is the seq2seq task's to say (:mod:`attnkit.tasks.seq2seq.ctranslate2.probe`); the old names
here still work, with a warning.
"""

import warnings
from typing import Any

from attnkit.checkpointing._format import (
    CONFIG_FILE,
    FORMAT,
    FORMAT_VERSION,
    STATE_JSON_FILE,
    STATE_TENSORS_FILE,
    WEIGHTS_FILE,
    CheckpointError,
)
from attnkit.checkpointing._read import (
    load_model_weights,
    read_config,
    read_config_of_kind,
    read_metadata,
    read_trainer_state,
    resolve_checkpoint,
)
from attnkit.checkpointing._write import recover_checkpoint, save_checkpoint

__all__ = [
    "CONFIG_FILE",
    "FORMAT",
    "FORMAT_VERSION",
    "STATE_JSON_FILE",
    "STATE_TENSORS_FILE",
    "WEIGHTS_FILE",
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

_MOVED = {"EXPORT_MANIFEST": "MANIFEST_FILE", "export_kind": "export_kind", "export_message": "export_message",
          "is_export": "is_export"}  # fmt: skip


def __getattr__(name: str) -> Any:
    """The export probe's old names, from :mod:`attnkit.tasks.seq2seq.ctranslate2.probe`, with a warning."""
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from attnkit.tasks.seq2seq.ctranslate2 import probe

    warnings.warn(f"{__name__}.{name} moved to {probe.__name__}.{_MOVED[name]}", DeprecationWarning, 2)
    return getattr(probe, _MOVED[name])
