"""Deprecated path: moved to :mod:`attnkit.data.classify.field_rules` (it serves classification only); kept as an alias."""

import warnings

from attnkit.data.classify.field_rules import *  # noqa: F403
from attnkit.data.classify.field_rules import __all__  # noqa: F401

warnings.warn("attnkit.data.field_rules moved to attnkit.data.classify.field_rules", DeprecationWarning, stacklevel=2)
