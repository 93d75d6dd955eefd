"""Seeds for repeatable runs: one call seeds Python, NumPy and torch; seeds derived per epoch and per rank (layer 5).

The training loop reseeds every generator at the start of each epoch from ``(seed, epoch, rank)``, so an epoch's
random stream does not depend on the draws before it: a run resumed after epoch ``e`` draws what an uninterrupted
run draws, with no generator state saved at an epoch's end. A checkpoint in the middle of an epoch keeps every
generator's state (:func:`random_state`, :func:`set_random_state`). Ranks get different streams, as independent
replicas should.
"""

from __future__ import annotations

import hashlib
import random

import numpy as np
import torch

__all__ = ["derive_seed", "random_state", "seed_everything", "set_random_state"]

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


def random_state() -> dict:
    """Every global generator's state: Python's, NumPy's, torch's CPU one and, once CUDA is in use, each CUDA
    device's, as JSON values and tensors (what a trainer state can hold without pickle)."""
    version, internal, gauss = random.getstate()
    name, keys, position, has_gauss, cached = np.random.get_state()
    state = {
        "python": [version, list(internal), gauss],
        "numpy": [
            name,
            torch.from_numpy(np.asarray(keys, dtype=np.int64)),
            int(position),
            int(has_gauss),
            float(cached),
        ],
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = list(torch.cuda.get_rng_state_all())
    return state


def set_random_state(state: dict) -> None:
    """Put back the generators' state that :func:`random_state` took (``ValueError`` for anything else)."""
    try:
        version, internal, gauss = state["python"]
        random.setstate((int(version), tuple(int(value) for value in internal), gauss))
        name, keys, position, has_gauss, cached = state["numpy"]
        np.random.set_state((name, np.asarray(keys, dtype=np.uint32), int(position), int(has_gauss), float(cached)))
        torch.set_rng_state(state["torch"].to(torch.uint8))
        if "cuda" in state and torch.cuda.is_available():
            torch.cuda.set_rng_state_all([value.to(torch.uint8) for value in state["cuda"]])
    except (KeyError, TypeError, ValueError, RuntimeError) as error:
        raise ValueError(f"not a saved random state ({type(error).__name__}: {error})") from error
