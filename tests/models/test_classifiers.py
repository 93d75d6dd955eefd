"""HAN and pooled classifiers: padding and batch companions change nothing; empty sentences/documents are safe."""

import pytest
import torch

from attnkit.models import BiGRUEncoder, HierarchicalAttentionClassifier, PooledClassifier, TransformerEncoder
from attnkit.models.encoders import encode_packed
from attnkit.models.pooled import POOLINGS, bigram_ids, build_pooling


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


@pytest.mark.parametrize("prefix", [True, False])
def test_encode_packed_equals_the_padded_encoder(prefix):
    """Packed encoding (prefix masks) or its padded fallback (other masks): the padded forward's values at real
    positions, zeros at padding (packed), and the same gradients, dropout off."""
    torch.manual_seed(0)
    encoder = TransformerEncoder(16, 2, 2, dropout=0.0).double()
    lengths = torch.tensor([5, 0, 7, 1])
    mask = torch.arange(8)[None] < lengths[:, None]
    if not prefix:
        mask[2, 0] = False  # a hole at the start: positions would shift if packed, so it must fall back
    x = torch.randn(4, 8, 16, dtype=torch.float64, requires_grad=True)
    got = encode_packed(encoder, x, mask)
    (got * mask[..., None]).square().sum().backward()
    got_grads = [x.grad.clone()] + [p.grad.clone() for p in encoder.parameters()]
    x.grad = None
    encoder.zero_grad()
    expected = encoder(x, mask)[0]
    (expected * mask[..., None]).square().sum().backward()
    expected_grads = [x.grad] + [p.grad for p in encoder.parameters()]
    torch.testing.assert_close(got[mask], expected[mask])
    if prefix:
        assert (got[~mask] == 0).all()
    for g, e in zip(got_grads, expected_grads, strict=True):
        torch.testing.assert_close(g, e)


def test_bigram_ids_by_hand():
    ids = torch.tensor([[3, 5, 7, 0], [2, 4, 0, 0]])
    mask = ids > 0
    got = bigram_ids(ids, mask, buckets=10)
    # (a * 1000003 + b) % 10 + 1; positions whose successor is padding (or the end) get 0
    expected = torch.tensor(
        [[(3 * 1000003 + 5) % 10 + 1, (5 * 1000003 + 7) % 10 + 1, 0, 0], [(2 * 1000003 + 4) % 10 + 1, 0, 0, 0]]
    )
    assert torch.equal(got, expected)
    assert got.max() <= 10 and got[mask].min() >= 0
    with pytest.raises(ValueError, match="buckets"):
        bigram_ids(ids, mask, buckets=0)


def test_bigram_order_matters_and_padding_does_not():
    torch.manual_seed(0)
    model = PooledClassifier(30, 3, embed_dim=16, bigram_buckets=50, dropout=0.0).eval()
    ids = torch.tensor([[4, 9, 11, 0, 0]])
    mask = ids > 0
    padded = model(ids, mask).logits
    alone = model(ids[:, :3], mask[:, :3]).logits
    torch.testing.assert_close(padded, alone, atol=1e-6, rtol=1e-6)
    # a bag of words would not see the order; with bigrams a permutation changes the logits
    swapped = model(torch.tensor([[9, 4, 11]]), torch.ones(1, 3, dtype=torch.bool)).logits
    assert not torch.allclose(alone, swapped)
    words_only = PooledClassifier(30, 3, embed_dim=16, dropout=0.0).eval()
    torch.testing.assert_close(
        words_only(ids[:, :3], mask[:, :3]).logits,
        words_only(torch.tensor([[9, 4, 11]]), torch.ones(1, 3, dtype=torch.bool)).logits,
        atol=1e-6,
        rtol=1e-6,
    )


def test_the_config_builds_bigram_buckets_for_both_models():
    from attnkit.tasks.classify.config import ClassifierConfig, build_classifier

    for family in ("pooled", "han"):
        config = ClassifierConfig(model=family, encoder="none", bigram_buckets=64, label_names=["a", "b"])
        model = build_classifier(config, vocab_size=50)
        assert model.bigram_embedding.num_embeddings == 65
        assert ClassifierConfig.from_dict(config.to_dict()) == config
    plain = build_classifier(ClassifierConfig(model="han", label_names=["a", "b"]), vocab_size=50)
    assert plain.bigram_embedding is None and not any("bigram" in key for key in plain.state_dict())
    with pytest.raises(ValueError, match="bigram_buckets must be >= 0"):
        ClassifierConfig(model="pooled", bigram_buckets=-1)
