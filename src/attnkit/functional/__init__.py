"""Functional twins of the score and distribution modules (layer 2). Depend on torch alone.

Every distribution takes ``scores [..., Tk]`` and an optional boolean ``mask`` broadcastable to it
(**True = attend**) and returns weights of the same shape whose rows sum to 1 over kept positions,
with exactly 0 at masked positions and all-zero rows (with zero gradient) where nothing is kept.
Half-precision inputs are computed in float32 and returned in their own dtype.

:mod:`~attnkit.functional.cross_entropy` holds the loss and accuracy of the single-label classifiers, which
training and inference share.
"""

from attnkit.functional.additive import additive_scores, additive_scores_reference
from attnkit.functional.entmax import entmax15, entmax15_reference
from attnkit.functional.softmax import masked_softmax
from attnkit.functional.sparsemax import sparsemax, sparsemax_reference

__all__ = [
    "additive_scores",
    "additive_scores_reference",
    "entmax15",
    "entmax15_reference",
    "masked_softmax",
    "sparsemax",
    "sparsemax_reference",
]
