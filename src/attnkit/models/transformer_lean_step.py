"""Deprecated path: moved to :mod:`attnkit.models.transformer.fast_step` (the Transformer family is one folder); kept as an
alias."""

import warnings

from attnkit.models.transformer.fast_step import *  # noqa: F403
from attnkit.models.transformer.fast_step import __all__  # noqa: F401

warnings.warn(
    "attnkit.models.transformer_lean_step moved to attnkit.models.transformer.fast_step",
    DeprecationWarning,
    stacklevel=2,
)
