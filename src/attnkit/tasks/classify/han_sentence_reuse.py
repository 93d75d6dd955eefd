"""The HAN's ``delete`` erasures with its sentence vectors reused (layer 5): the fast path of
:meth:`~attnkit.tasks.classify.faithfulness.HanSubject.probabilities_when`.

A HAN encodes each sentence from its own words alone, so erasing words changes only the sentences that contain
them: untouched sentences reuse the prediction's vectors, emptied ones leave the document, and each distinct
shortened sentence is re-encoded once. The readable reference is the subject's ``full_probabilities_when``.

Shape glossary:
    N  erased variants   T  words of the document   S  sentences   W  words per sentence (longest)
    U  distinct shortened sentences   D  sentence-vector features   C  classes
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["SENTENCE_CHUNK", "delete_reusing_sentences"]

SENTENCE_CHUNK = 1024  # shortened sentences per word-level forward


def delete_reusing_sentences(
    model: nn.Module,
    *,
    token_grid: torch.Tensor,
    sentence_vectors: torch.Tensor,
    sentence_of: torch.Tensor,
    word_of: torch.Tensor,
    keep: torch.Tensor,
    chunk: int,
    pad_id: int,
) -> torch.Tensor:
    """p(class) ``[N, C]`` (float32, CPU) of each ``delete`` variant of one HAN document (eval mode).

    token_grid ``[S, W]`` word ids; sentence_vectors ``[S, D]`` from the whole document's forward; sentence_of,
    word_of ``[T]`` each word's place; keep ``[N, T]`` bool (False: the word leaves its sentence).
    """
    device = sentence_vectors.device
    n = keep.shape[0]
    sentences, width = token_grid.shape
    grid = torch.zeros(n, sentences, width, dtype=torch.bool)  # [N, S, W] kept words at their places
    grid[:, sentence_of, word_of] = keep
    sizes = torch.zeros(sentences, dtype=torch.long).index_add_(0, sentence_of, torch.ones_like(sentence_of))  # [S]
    counts = grid.sum(2)  # [N, S]
    present = counts > 0  # [N, S] the sentence is still in the document
    shortened = present & (counts < sizes)  # [N, S]
    rows, columns = shortened.nonzero(as_tuple=True)  # [P] each shortened (variant, sentence)
    # one key per shortened sentence: which sentence, and which of its words are kept
    keys = torch.cat([columns[:, None], grid[rows, columns].long()], dim=1)  # [P, 1 + W]
    unique, inverse = torch.unique(keys, dim=0, return_inverse=True)  # [U, 1 + W], [P]
    new_vectors = _encode_shortened(model, token_grid, unique[:, 0], unique[:, 1:].bool(), pad_id, device)  # [U, D]
    vectors = torch.cat([sentence_vectors, new_vectors.reshape(-1, sentence_vectors.shape[1])])  # [S + U, D]
    which = torch.arange(sentences).expand(n, sentences).clone()  # [N, S] row of `vectors` for each sentence
    which[rows, columns] = sentences + inverse
    parts = []
    with torch.no_grad():
        for start in range(0, n, chunk):
            index = which[start : start + chunk].to(device)  # [n, S]
            mask = present[start : start + chunk].to(device)  # [n, S]
            logits, _ = model.classify_sentences(vectors[index], mask)  # [n, C]
            parts.append(torch.softmax(logits.float(), -1).cpu())
    return torch.cat(parts) if parts else torch.empty(0, model.classifier.out_features)


def _encode_shortened(
    model: nn.Module, token_grid: torch.Tensor, sentence: torch.Tensor, kept: torch.Tensor, pad_id: int, device
) -> torch.Tensor:
    """The vectors of sentences ``sentence [U]`` keeping only the words ``kept [U, W]``: ``[U, D]``."""
    if kept.shape[0] == 0:  # no sentence was shortened (D is the caller's: the states' or the values' width)
        return torch.empty(0, device=device)
    lengths = kept.sum(1)  # [U]
    width = max(int(lengths.max()), 1)
    word_mask = torch.arange(width) < lengths[:, None]  # [U, W']
    token_ids = torch.full(word_mask.shape, pad_id, dtype=torch.long)
    token_ids[word_mask] = token_grid[sentence][kept]  # row-major: each sentence's kept words in order
    parts = []
    with torch.no_grad():
        for start in range(0, token_ids.shape[0], SENTENCE_CHUNK):
            ids = token_ids[start : start + SENTENCE_CHUNK].to(device)
            mask = word_mask[start : start + SENTENCE_CHUNK].to(device)
            parts.append(model.encode_sentences(ids, mask).context)  # [u, D]
    return torch.cat(parts)
