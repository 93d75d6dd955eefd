"""Deprecated path: moved to :mod:`attnkit.models.transformer.fast_linear` (the Transformer family is one folder); kept as an
alias."""

import warnings

from attnkit.models.transformer.fast_linear import *  # noqa: F403
from attnkit.models.transformer.fast_linear import __all__  # noqa: F401

warnings.warn(
    "attnkit.models.lean_linear moved to attnkit.models.transformer.fast_linear", DeprecationWarning, stacklevel=2
)
