"""Deprecated path: moved to :mod:`attnkit.data.classify.files` (it serves classification only); kept as an alias."""

import warnings

from attnkit.data.classify.files import *  # noqa: F403
from attnkit.data.classify.files import __all__  # noqa: F401

warnings.warn("attnkit.data.files moved to attnkit.data.classify.files", DeprecationWarning, stacklevel=2)
