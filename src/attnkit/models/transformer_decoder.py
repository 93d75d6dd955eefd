"""Deprecated path: moved to :mod:`attnkit.models.transformer.decoder` (the Transformer family is one folder); kept as an
alias."""

import warnings

from attnkit.models.transformer.decoder import *  # noqa: F403
from attnkit.models.transformer.decoder import __all__  # noqa: F401

warnings.warn(
    "attnkit.models.transformer_decoder moved to attnkit.models.transformer.decoder", DeprecationWarning, stacklevel=2
)
