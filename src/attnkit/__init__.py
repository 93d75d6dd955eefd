"""attnkit: attention for sequence models in PyTorch.

Every attention is one skeleton — ``weights = distribution(score(query, keys), mask)``, ``context = weights @ values``
— and padding never changes a result. Masks are boolean with **True = attend** everywhere.

The core (layers 1-3) is importable from here and depends on torch alone; models, data, training, explain and
the CLI live in their own subpackages and load their heavier dependencies lazily.
"""

from attnkit import functional, masks
from attnkit.attention import Attention
from attnkit.distributions import Distribution, Entmax15, LocalM, LocalP, Softmax, Sparsemax
from attnkit.kv_cache import KVCache
from attnkit.multihead import MultiHeadAttention
from attnkit.outputs import AttentionOutput
from attnkit.pooling import AttentionPooling, MaxPooling, MeanPooling
from attnkit.positions import LearnedPositions, RotaryPositions, Sinusoidal2DPositions, SinusoidalPositions
from attnkit.scores import AdditiveScore, CosineScore, DotScore, GeneralScore, ScaledDotScore, Score

__version__ = "0.1.0"

__all__ = [
    "AdditiveScore",
    "Attention",
    "AttentionOutput",
    "AttentionPooling",
    "CosineScore",
    "Distribution",
    "DotScore",
    "Entmax15",
    "GeneralScore",
    "KVCache",
    "LearnedPositions",
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
    "functional",
    "masks",
]
