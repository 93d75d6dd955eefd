"""Deprecated path: the checkpoint format moved to :mod:`attnkit.checkpointing` (training and inference share it,
and inference imports nothing of training); kept as an alias."""

import warnings
from typing import Any

from attnkit.checkpointing import *  # noqa: F403
from attnkit.checkpointing import __all__  # noqa: F401

warnings.warn("attnkit.training.checkpointing moved to attnkit.checkpointing", DeprecationWarning, stacklevel=2)


def __getattr__(name: str) -> Any:
    """The export probe's old names, as :mod:`attnkit.checkpointing` answers them (with their own warning)."""
    import attnkit.checkpointing

    return getattr(attnkit.checkpointing, name)
