"""attnkit: attention for sequence models in PyTorch.

Every attention is one skeleton — ``weights = distribution(score(query, keys), mask)``, ``context = weights @ values``
— and padding never changes a result. Masks are boolean with **True = attend** everywhere.
"""

__version__ = "0.1.0"
