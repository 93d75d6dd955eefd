"""Deprecated path: moved to :mod:`attnkit.models.transformer.seq2seq` (the Transformer family is one folder); kept as an
alias."""

import warnings

from attnkit.models.transformer.seq2seq import *  # noqa: F403
from attnkit.models.transformer.seq2seq import __all__  # noqa: F401

warnings.warn(
    "attnkit.models.transformer_seq2seq moved to attnkit.models.transformer.seq2seq", DeprecationWarning, stacklevel=2
)
