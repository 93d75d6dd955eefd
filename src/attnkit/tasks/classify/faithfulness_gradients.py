"""Many documents of one classifier as one :class:`~attnkit.explain.faithfulness.subject.BatchedGradientInputs`
(layer 5): what ``HanSubject.batched_gradient_inputs`` and ``PooledSubject.batched_gradient_inputs`` return, so that
gradient × input and integrated gradients of a whole report run in a few batched forwards and backwards instead of
one small one per document. Each document's own ``gradient_inputs`` stays the reference (equal in values, tested in
``tests/explain/test_faithfulness_gradients_batched.py``).

The documents are padded to one shape; padding changes no result in attnkit's models (masked, packed), so every
row's probabilities and gradients are its document's own.

Shape glossary:
    D  documents   P  copies of each (rows are copy-major: row p·D + d is document d)   T  tokens
    S  sentences   W  words per sentence   E  embedding features   C  classes
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from attnkit.data.batching import collate_documents, collate_tokens
from attnkit.explain.faithfulness.subject import BatchedGradientInputs, Embedded

__all__ = ["han_gradient_inputs", "pooled_gradient_inputs"]


def _model_of(subjects: Sequence) -> torch.nn.Module:
    if not subjects:
        raise ValueError("no subjects to stack")
    model = subjects[0].model
    if any(subject.model is not model for subject in subjects):
        raise ValueError("the subjects to stack belong to different models")
    model.eval()
    return model


def han_gradient_inputs(subjects: Sequence) -> BatchedGradientInputs:
    """HAN documents (``HanSubject``) stacked: embeddings ``[D, S, W, E]`` of the padded word grid; the forward
    embeds only real sentences, as the model does, so it hands the model those rows of the path."""
    model = _model_of(subjects)
    device = subjects[0].device
    batch = collate_documents([(subject.sentence_ids, None) for subject in subjects], pad_id=subjects[0].pad_id)
    ids, word_mask, sentence_mask = (t.to(device) for t in (batch.token_ids, batch.word_mask, batch.sentence_mask))
    real = sentence_mask & word_mask.any(2)  # [D, S]: the sentences the model embeds
    documents = ids.shape[0]

    def forward(path: torch.Tensor) -> torch.Tensor:  # [P·D, S, W, E] -> [P·D, C]
        copies = path.shape[0] // documents
        rows = real.repeat(copies, 1).reshape(-1)  # [P·D·S]
        embedded = path.reshape(-1, *path.shape[2:])[rows]  # [real sentences, W, E]
        with Embedded(model.embedding, embedded):
            out = model(ids.repeat(copies, 1, 1), word_mask.repeat(copies, 1, 1), sentence_mask.repeat(copies, 1))
        return torch.softmax(out.logits.float(), -1)

    def to_units(attributions: torch.Tensor) -> list[torch.Tensor]:  # [D, S, W, E] -> D × [T_d]
        summed = attributions.sum(-1).cpu()  # [D, S, W]
        return [summed[d][subject.sentence_of, subject.word_of] for d, subject in enumerate(subjects)]

    with torch.no_grad():
        embeddings = model.embedding(ids)  # [D, S, W, E]
    return BatchedGradientInputs(embeddings, forward, to_units)


def pooled_gradient_inputs(subjects: Sequence) -> BatchedGradientInputs:
    """Pooled classifier documents (``PooledSubject``) stacked: embeddings ``[D, T, E]`` padded to the longest."""
    model = _model_of(subjects)
    device = subjects[0].device
    batch = collate_tokens([(subject.ids.tolist(), None) for subject in subjects], pad_id=subjects[0].pad_id)
    ids, mask = batch.token_ids.to(device), batch.mask.to(device)  # [D, T] each
    documents = ids.shape[0]

    def forward(path: torch.Tensor) -> torch.Tensor:  # [P·D, T, E] -> [P·D, C]
        copies = path.shape[0] // documents
        with Embedded(model.embedding, path):
            return torch.softmax(model(ids.repeat(copies, 1), mask.repeat(copies, 1)).logits.float(), -1)

    def to_units(attributions: torch.Tensor) -> list[torch.Tensor]:  # [D, T, E] -> D × [T_d]
        summed = attributions.sum(-1).cpu()  # [D, T]
        return [summed[d, : len(subject.tokens)] for d, subject in enumerate(subjects)]

    with torch.no_grad():
        embeddings = model.embedding(ids)  # [D, T, E]
    return BatchedGradientInputs(embeddings, forward, to_units)
