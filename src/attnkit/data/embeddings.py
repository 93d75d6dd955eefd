"""Deprecated path: moved to :mod:`attnkit.data.classify.embeddings` (it serves classification only); kept as an alias."""

import warnings

from attnkit.data.classify.embeddings import *  # noqa: F403
from attnkit.data.classify.embeddings import __all__  # noqa: F401

warnings.warn("attnkit.data.embeddings moved to attnkit.data.classify.embeddings", DeprecationWarning, stacklevel=2)
