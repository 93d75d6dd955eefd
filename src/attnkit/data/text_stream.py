"""Deprecated path: moved to :mod:`attnkit.data.classify.text_stream` (it serves classification only); kept as an alias."""

import warnings

from attnkit.data.classify.text_stream import *  # noqa: F403
from attnkit.data.classify.text_stream import __all__  # noqa: F401

warnings.warn("attnkit.data.text_stream moved to attnkit.data.classify.text_stream", DeprecationWarning, stacklevel=2)
