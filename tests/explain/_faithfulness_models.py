"""Hand-built and small random classifiers for the faithfulness tests, with their subjects."""

from __future__ import annotations

import torch

from attnkit.models.encoders import BiGRUEncoder, TransformerEncoder
from attnkit.models.han import HierarchicalAttentionClassifier
from attnkit.models.pooled import PooledClassifier
from attnkit.pooling import AttentionPooling
from attnkit.tasks.classify.faithfulness import HanSubject, PooledSubject

GREAT = 5  # the token the hand-built model's decision rests on
NAMES = ["bad", "great"]


def one_token_model() -> PooledClassifier:
    """A pooled classifier (no encoder) whose attention and decision rest on token 5 alone.

    Embeddings: token 5 is ``[1, 0]``, every other token ``[0, 1]``. The pooling scores ``20 · tanh(10 x_0)``:
    token 5 gets weight ~1 wherever it is. Logits ``[8 x_1, 8 x_0]``: with token 5, p(great) ~ 1 - e^-8; without
    it the mean of the others gives p(great) ~ e^-8.
    """
    model = PooledClassifier(10, 2, embed_dim=2, pooling=AttentionPooling(2), dropout=0.0)
    with torch.no_grad():
        model.embedding.weight.copy_(torch.tensor([[0.0, 1.0]] * 10))
        model.embedding.weight[0] = 0.0
        model.embedding.weight[GREAT] = torch.tensor([1.0, 0.0])
        model.pooling.key_proj.weight.copy_(torch.tensor([[10.0, 0.0], [0.0, 0.0]]))
        model.pooling.key_proj.bias.zero_()
        model.pooling.queries.copy_(torch.tensor([[20.0, 0.0]]))
        model.classifier.weight.copy_(torch.tensor([[0.0, 8.0], [8.0, 0.0]]))
        model.classifier.bias.zero_()
    return model.eval()


def pooled_model(encoder: str, *, seed: int = 0, vocab: int = 40, classes: int = 3) -> PooledClassifier:
    """A random pooled classifier with no encoder, a BiGRU or a 2-layer Transformer encoder."""
    torch.manual_seed(seed)
    built = {"none": None, "bigru": BiGRUEncoder(16, 8), "transformer": TransformerEncoder(16, 2, 2, dropout=0.0)}
    return PooledClassifier(vocab, classes, embed_dim=16, encoder=built[encoder], dropout=0.0).eval()


def han_model(*, seed: int = 0, vocab: int = 40, classes: int = 3, **options) -> HierarchicalAttentionClassifier:
    """A random HAN (``options``: more of its keyword arguments, e.g. ``attention_values``)."""
    torch.manual_seed(seed)
    return HierarchicalAttentionClassifier(
        vocab, classes, embed_dim=16, word_hidden=8, sentence_hidden=8, dropout=0.0, **options
    ).eval()


def pooled_subject(model, ids: list[int]) -> PooledSubject:
    return PooledSubject(
        model,
        ids,
        [f"t{i}" for i in range(len(ids))],
        NAMES if model.classifier.out_features == 2 else ["a", "b", "c"],
        pad_id=0,
        unk_id=1,
    )


def han_subject(model, sentences: list[list[int]]) -> HanSubject:
    tokens = [f"t{i}" for i in range(sum(len(s) for s in sentences))]
    return HanSubject(model, sentences, tokens, ["a", "b", "c"], pad_id=0, unk_id=1)
