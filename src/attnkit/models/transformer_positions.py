"""Deprecated path: moved to :mod:`attnkit.models.transformer.positions` (the Transformer family is one folder); kept as an
alias."""

import warnings

from attnkit.models.transformer.positions import *  # noqa: F403
from attnkit.models.transformer.positions import __all__  # noqa: F401

warnings.warn(
    "attnkit.models.transformer_positions moved to attnkit.models.transformer.positions",
    DeprecationWarning,
    stacklevel=2,
)
