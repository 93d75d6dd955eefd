"""Models people train (layer 4), built from the attention core. Each returns its attention weights on request."""

from attnkit.models.encoders import BiGRUEncoder, TransformerEncoder
from attnkit.models.han import HANOutput, HierarchicalAttentionClassifier
from attnkit.models.pooled import PooledClassifier, PooledClassifierOutput, build_pooling

__all__ = [
    "BiGRUEncoder",
    "HANOutput",
    "HierarchicalAttentionClassifier",
    "PooledClassifier",
    "PooledClassifierOutput",
    "TransformerEncoder",
    "build_pooling",
]
