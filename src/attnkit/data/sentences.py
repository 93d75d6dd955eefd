"""Deprecated path: moved to :mod:`attnkit.data.classify.sentences` (it serves classification only); kept as an alias."""

import warnings

from attnkit.data.classify.sentences import *  # noqa: F403
from attnkit.data.classify.sentences import __all__  # noqa: F401

warnings.warn("attnkit.data.sentences moved to attnkit.data.classify.sentences", DeprecationWarning, stacklevel=2)
