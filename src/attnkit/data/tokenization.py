"""Deprecated path: moved to :mod:`attnkit.data.classify.tokenization` (it serves classification only); kept as an alias."""

import warnings

from attnkit.data.classify.tokenization import *  # noqa: F403
from attnkit.data.classify.tokenization import __all__  # noqa: F401

warnings.warn("attnkit.data.tokenization moved to attnkit.data.classify.tokenization", DeprecationWarning, stacklevel=2)
