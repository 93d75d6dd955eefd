"""The checkpoint format's names and its error, shared by the reader (:mod:`attnkit.checkpointing`) and the
writer (:mod:`attnkit.checkpointing._write`); the format itself is described in the former (layer 5)."""

from __future__ import annotations

__all__ = [
    "ALIASES_KEY",
    "CONFIG_FILE",
    "FORMAT",
    "FORMAT_VERSION",
    "PICKLE_SUFFIXES",
    "RESERVED_FILES",
    "SECTION",
    "STATE_JSON_FILE",
    "STATE_TENSORS_FILE",
    "WEIGHTS_FILE",
    "CheckpointError",
]

FORMAT = "attnkit.checkpoint"
FORMAT_VERSION = 1
WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
STATE_TENSORS_FILE = "trainer_state.safetensors"
STATE_JSON_FILE = "trainer_state.json"
RESERVED_FILES = frozenset({WEIGHTS_FILE, CONFIG_FILE, STATE_TENSORS_FILE, STATE_JSON_FILE})
SECTION = "attnkit"  # the reserved top-level key of config.json
ALIASES_KEY = "attnkit.aliases"  # safetensors header entry: {dropped tied name: stored name}
PICKLE_SUFFIXES = frozenset({".pt", ".pth", ".pkl", ".pickle", ".bin", ".ckpt", ".tar", ".joblib"})


class CheckpointError(ValueError):
    """A path is not a valid attnkit checkpoint (or cannot be written as one); the message names the path."""
