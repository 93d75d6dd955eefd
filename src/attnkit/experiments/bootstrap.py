"""Percentile bootstrap intervals over documents (layer 6): the mean of a per-document figure and the 95 % interval
of that mean, from resampling the documents with replacement (Efron & Tibshirani 1993, the percentile method)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["RESAMPLES", "bootstrap_interval"]

RESAMPLES = 1000


def bootstrap_interval(
    values: Sequence[float], *, resamples: int = RESAMPLES, level: float = 0.95, seed: int = 0
) -> dict[str, float | int | None]:
    """``{"mean", "low", "high", "n"}``: the mean of ``values`` (NaN values left out: an undefined τ) and the
    ``level`` percentile interval of the mean over ``resamples`` resamplings drawn with ``seed``. With no values,
    every figure is ``None``; with one, the interval is that value."""
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    kept = np.array([float(v) for v in values if v is not None and not math.isnan(float(v))], dtype=np.float64)
    if kept.size == 0:
        return {"mean": None, "low": None, "high": None, "n": 0}
    generator = np.random.default_rng(seed)
    draws = generator.integers(0, kept.size, size=(resamples, kept.size))  # [R, n] document indices
    means = kept[draws].mean(axis=1)  # [R]
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return {"mean": float(kept.mean()), "low": float(low), "high": float(high), "n": int(kept.size)}
