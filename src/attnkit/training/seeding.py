"""Seeds for repeatable runs: one call seeds Python, NumPy and torch; seeds derived per epoch and per rank (layer 5).

The training loop reseeds every generator at the start of each epoch from ``(seed, epoch, rank)``. The random
stream of an epoch (dropout masks, a data loader's shuffling through the global generator, ...) therefore
depends only on those three numbers — not on how many random draws came before — so a run resumed from the
checkpoint of epoch ``e`` draws exactly what an uninterrupted run draws in epoch ``e + 1``, and no generator
state needs to be written to disk. Different ranks of a distributed run get different streams (different
dropout masks), as independent replicas should.
"""

from __future__ import annotations

import hashlib
import random

import numpy as np
import torch

__all__ = ["derive_seed", "seed_everything"]

_NUMPY_SEED_RANGE = 2**32  # np.random.seed accepts [0, 2**32)


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, NumPy's global generator and torch (CPU and every CUDA device) with ``seed``.

    Call it before building a model so that its initial weights are repeatable; ``fit`` reseeds per epoch.
    """
    if seed < 0:
        raise ValueError(f"seed must be non-negative, got {seed}")
    random.seed(seed)
    np.random.seed(seed % _NUMPY_SEED_RANGE)
    torch.manual_seed(seed)  # also seeds every CUDA device


def derive_seed(seed: int, *parts: int) -> int:
    """A 63-bit seed determined by ``seed`` and ``parts`` (e.g. epoch and rank), well mixed by SHA-256.

    Neighbouring inputs give unrelated seeds, unlike ``seed + epoch``, where run 0's epoch 1 would replay
    run 1's epoch 0.
    """
    text = ":".join(str(int(value)) for value in (seed, *parts))
    digest = hashlib.sha256(text.encode("ascii")).digest()
    return int.from_bytes(digest[:8], "little") >> 1
