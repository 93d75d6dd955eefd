"""attnkit: attention for sequence models in PyTorch.

Every attention is one skeleton — ``weights = distribution(score(query, keys), mask)``, ``context = weights @ values``
— and padding never changes a result. Masks are boolean with **True = attend** everywhere.

The core (layers 1-3) is importable from here and depends on torch alone; models, data, training, explain and
the CLI live in their own subpackages and load their heavier dependencies lazily.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names below, for readers and type checkers; at run time they load on first use
    from attnkit import functional, masks
    from attnkit.attention import Attention
    from attnkit.distributions import Distribution, Entmax15, LocalM, LocalP, Softmax, Sparsemax, Uniform
    from attnkit.kv_cache import KVCache
    from attnkit.multihead import MultiHeadAttention
    from attnkit.outputs import AttentionOutput
    from attnkit.pooling import (
        AttentionPooling,
        ConvTaskScaling,
        FeatTaskScaling,
        LinTaskScaling,
        MaxPooling,
        MeanPooling,
        TaskScaling,
    )
    from attnkit.positions import LearnedPositions, RotaryPositions, Sinusoidal2DPositions, SinusoidalPositions
    from attnkit.scores import AdditiveScore, CosineScore, DotScore, GeneralScore, ScaledDotScore, Score

# each module and the public names it defines (imported when the name is first used, so that `import attnkit` and
# `attnkit --help` do not pay for torch until something needs it)
_DEFINED_IN = {
    "attnkit.attention": "Attention",
    "attnkit.distributions": "Distribution Entmax15 LocalM LocalP Softmax Sparsemax Uniform",
    "attnkit.kv_cache": "KVCache",
    "attnkit.multihead": "MultiHeadAttention",
    "attnkit.outputs": "AttentionOutput",
    "attnkit.pooling": "AttentionPooling MaxPooling MeanPooling "
    "TaskScaling LinTaskScaling FeatTaskScaling ConvTaskScaling",
    "attnkit.positions": "LearnedPositions RotaryPositions Sinusoidal2DPositions SinusoidalPositions",
    "attnkit.scores": "AdditiveScore CosineScore DotScore GeneralScore ScaledDotScore Score",
}
# public name -> its module (the subpackages functional and masks are their own)
_EXPORTS = {"functional": "attnkit.functional", "masks": "attnkit.masks"} | {
    name: module for module, names in _DEFINED_IN.items() for name in names.split()
}

__version__ = "0.1.0"

__all__ = [
    "AdditiveScore",
    "Attention",
    "AttentionOutput",
    "AttentionPooling",
    "ConvTaskScaling",
    "CosineScore",
    "Distribution",
    "DotScore",
    "Entmax15",
    "FeatTaskScaling",
    "GeneralScore",
    "KVCache",
    "LearnedPositions",
    "LinTaskScaling",
    "LocalM",
    "LocalP",
    "MaxPooling",
    "MeanPooling",
    "MultiHeadAttention",
    "RotaryPositions",
    "ScaledDotScore",
    "Score",
    "Sinusoidal2DPositions",
    "SinusoidalPositions",
    "Softmax",
    "Sparsemax",
    "TaskScaling",
    "Uniform",
    "functional",
    "load",
    "masks",
]


def load(path: Any, *, device: Any = "auto", precision: str = "fp32") -> Any:
    """A trained model ready to use, for a checkpoint of any kind: a classifier or vision model with
    ``predict``, a seq2seq model with ``translate`` (a run directory means its ``best/``; a shipped model's name,
    as ``attnkit models`` lists them, means that model, unless a path of that name exists), on ``device``
    (``"auto"``: CUDA when available, else the CPU) running in ``precision`` (``"fp32"``, ``"bf16"``, ``"fp16"``).
    See :func:`attnkit.tasks.load`."""
    from attnkit.tasks import load as load_checkpoint

    return load_checkpoint(path, device=device, precision=precision)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'attnkit' has no attribute {name!r}")
    module = importlib.import_module(_EXPORTS[name])
    value = module if module.__name__ == f"attnkit.{name}" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
