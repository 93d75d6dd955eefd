"""Deprecated path: moved to :mod:`attnkit.checkpointing.config_io` (a checkpoint's ``config.json`` is read this
way, by training and inference alike); kept as an alias."""

import warnings

from attnkit.checkpointing.config_io import *  # noqa: F403
from attnkit.checkpointing.config_io import __all__  # noqa: F401

warnings.warn("attnkit.training.config_io moved to attnkit.checkpointing.config_io", DeprecationWarning, stacklevel=2)
