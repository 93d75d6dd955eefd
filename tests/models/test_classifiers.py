"""HAN and pooled classifiers: padding and batch companions change nothing; empty sentences/documents are safe."""

import pytest
import torch

from attnkit.models import BiGRUEncoder, HierarchicalAttentionClassifier, PooledClassifier, TransformerEncoder
from attnkit.models.pooled import POOLINGS, build_pooling


def nested_batch(documents, extra_sentences=0, extra_words=0, vocab=30):
    """documents: list of list of sentence lengths -> token ids [B, S, W], word mask, sentence mask."""
    s = max(len(d) for d in documents) + extra_sentences
    w = max((max(d) if d else 0) for d in documents) + extra_words
    w = max(w, 1)
    ids = torch.randint(1, vocab, (len(documents), max(s, 1), w))  # garbage everywhere, then mask it
    word_mask = torch.zeros(ids.shape, dtype=torch.bool)
    for b, doc in enumerate(documents):
        for i, n in enumerate(doc):
            word_mask[b, i, :n] = True
    return ids, word_mask, word_mask.any(2)


def test_han_document_alone_equals_document_in_a_padded_batch():
    torch.manual_seed(0)
    model = HierarchicalAttentionClassifier(30, 4, embed_dim=16, word_hidden=8, sentence_hidden=8).eval()
    documents = [[3, 5, 1], [2], [4, 4, 4, 2]]
    ids, word_mask, sentence_mask = nested_batch(documents, extra_sentences=2, extra_words=3)
    batched = model(ids, word_mask, sentence_mask)
    for b, doc in enumerate(documents):
        s, w = len(doc), max(doc)
        alone = model(ids[b : b + 1, :s, :w], word_mask[b : b + 1, :s, :w], sentence_mask[b : b + 1, :s])
        torch.testing.assert_close(batched.logits[b], alone.logits[0], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(batched.sentences.weights[b, :s], alone.sentences.weights[0], atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(batched.words.weights[b, :s, :w], alone.words.weights[0], atol=1e-6, rtol=1e-5)
        assert (batched.sentences.weights[b, s:] == 0).all()
        torch.testing.assert_close(batched.sentences.weights[b].sum(), torch.tensor(1.0))


def test_han_empty_sentences_and_documents_are_safe():
    torch.manual_seed(0)
    model = HierarchicalAttentionClassifier(30, 4, embed_dim=16, word_hidden=8, sentence_hidden=8)
    ids, word_mask, sentence_mask = nested_batch([[3, 0, 2], [], [1]])  # an empty sentence, an empty document
    out = model(ids, word_mask, sentence_mask)
    assert torch.isfinite(out.logits).all()
    assert (out.sentences.weights[0, 1] == 0).all() and (out.words.weights[0, 1] == 0).all()
    assert (out.sentences.weights[1] == 0).all() and (out.words.weights[1] == 0).all()
    # the empty sentence in the middle does not change the document: same as without it
    model.eval()
    with_gap = model(ids[:1], word_mask[:1], sentence_mask[:1])
    ids2, wm2, sm2 = nested_batch([[3, 2]])
    ids2[0, 0, :3], ids2[0, 1, :2] = ids[0, 0, :3], ids[0, 2, :2]
    without = model(ids2, wm2, sm2)
    torch.testing.assert_close(with_gap.logits, without.logits, atol=1e-5, rtol=1e-5)
    out = model(ids, word_mask, sentence_mask)
    out.logits.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    # a batch made only of empty documents
    ids, word_mask, sentence_mask = nested_batch([[], []])
    assert torch.isfinite(model(ids, word_mask, sentence_mask).logits).all()


def _encoder(name):
    if name == "bigru":
        return BiGRUEncoder(16, 8)
    if name == "transformer":
        return TransformerEncoder(16, 2, 2, dropout=0.0)
    return None


@pytest.mark.parametrize("encoder", ["none", "bigru", "transformer"])
@pytest.mark.parametrize("pooling", POOLINGS)
def test_pooled_classifier_ignores_padding(encoder, pooling):
    torch.manual_seed(0)
    enc = _encoder(encoder)
    feature_dim = getattr(enc, "output_dim", 16)
    model = PooledClassifier(30, 3, embed_dim=16, encoder=enc, pooling=build_pooling(pooling, feature_dim)).eval()
    lengths = [5, 2, 7]
    ids = torch.randint(1, 30, (3, 10))
    mask = torch.arange(10)[None] < torch.tensor(lengths)[:, None]
    batched = model(ids, mask)
    for b, n in enumerate(lengths):
        alone = model(ids[b : b + 1, :n], mask[b : b + 1, :n])
        torch.testing.assert_close(batched.logits[b], alone.logits[0], atol=1e-5, rtol=1e-5)
        assert (batched.pooling.weights[b, :, n:] == 0).all()
