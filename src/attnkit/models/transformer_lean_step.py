"""Deprecated path: moved to :mod:`attnkit.models.transformer.fast_step` ("fast" names the twin of a reference);
kept as an alias, with the old names."""

import warnings

from attnkit.models.transformer.fast_step import FastStepWeights as LeanWeights
from attnkit.models.transformer.fast_step import fast_decode_step as lean_decode_step
from attnkit.models.transformer.fast_step import fast_step_weights as lean_weights

__all__ = ["LeanWeights", "lean_decode_step", "lean_weights"]

warnings.warn(
    "attnkit.models.transformer_lean_step moved to attnkit.models.transformer.fast_step", DeprecationWarning, 2
)
