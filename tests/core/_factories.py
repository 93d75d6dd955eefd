"""Builders shared by the property tests: every score × every distribution, at a given feature size."""

import torch

from attnkit import (
    AdditiveScore,
    CosineScore,
    DotScore,
    Entmax15,
    GeneralScore,
    LocalM,
    LocalP,
    ScaledDotScore,
    Softmax,
    Sparsemax,
)

SCORES = {
    "dot": lambda d: DotScore(),
    "scaled-dot": lambda d: ScaledDotScore(),
    "general": lambda d: GeneralScore(d, d),
    "additive": lambda d: AdditiveScore(d, d, d + 1),
    "cosine": lambda d: CosineScore(temperature=0.2),
}
DISTRIBUTIONS = {
    "softmax": lambda d: Softmax(),
    "sparsemax": lambda d: Sparsemax(),
    "entmax15": lambda d: Entmax15(),
    "local-m": lambda d: LocalM(window=2),
    "local-p": lambda d: LocalP(window=2, query_dim=d),
}
PAIRS = [(s, d) for s in SCORES for d in DISTRIBUTIONS]


def pad_batch(sequences: list[torch.Tensor], extra: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack ``[T_i, D]`` tensors into ``[B, max T + extra, D]`` with *random garbage* in the padding.

    Returns the batch and its mask ``[B, T]`` (True = real).
    """
    longest = max(s.shape[0] for s in sequences) + extra
    batch = torch.randn(len(sequences), longest, sequences[0].shape[-1]) * 5
    mask = torch.zeros(len(sequences), longest, dtype=torch.bool)
    for i, s in enumerate(sequences):
        batch[i, : s.shape[0]] = s
        mask[i, : s.shape[0]] = True
    return batch, mask
