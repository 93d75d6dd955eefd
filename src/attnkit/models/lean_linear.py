"""Deprecated path: moved to :mod:`attnkit.models.transformer.fast_linear` ("fast" names the twin of a reference);
kept as an alias, with the old names."""

import warnings

from attnkit.models.transformer.fast_linear import DenseLinear, Int8Linear, is_int8_linear
from attnkit.models.transformer.fast_linear import fast_linear as lean_linear

__all__ = ["DenseLinear", "Int8Linear", "is_int8_linear", "lean_linear"]

warnings.warn("attnkit.models.lean_linear moved to attnkit.models.transformer.fast_linear", DeprecationWarning, 2)
