"""The faithful-attention options inside HAN and the pooled classifier (issue #38): any distribution and task scaling
keep padding and batch companions out of every result, sparse distributions give exact zeros, empty sentences and
documents stay zeros without NaN forward and backward, and each model exposes its encoder states for the penalty."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnkit import AttentionPooling
from attnkit.distributions import Entmax15, Softmax, Sparsemax
from attnkit.models import BiGRUEncoder, HierarchicalAttentionClassifier, PooledClassifier, TransformerEncoder
from attnkit.models.diversity import conicity, diversity_penalty
from attnkit.models.pooled import build_pooling
from attnkit.pooling import ConvTaskScaling, FeatTaskScaling, LinTaskScaling

V, E = 30, 8
DISTRIBUTIONS = {"softmax": Softmax, "sparsemax": Sparsemax, "entmax15": Entmax15}
SCALINGS = {
    "none": lambda: None,
    "lin": lambda: LinTaskScaling(V),
    "feat": lambda: FeatTaskScaling(V, E),
    "conv": lambda: ConvTaskScaling(V, E),
}
OPTIONS = [(d, s) for d in DISTRIBUTIONS for s in SCALINGS]


def han(dist: str, scaling: str) -> HierarchicalAttentionClassifier:
    return HierarchicalAttentionClassifier(
        V, 3, embed_dim=E, word_hidden=4, sentence_hidden=4, distribution=DISTRIBUTIONS[dist],
        task_scaling=SCALINGS[scaling](),
    ).eval()  # fmt: skip


def pooled(dist: str, scaling: str, encoder: str = "bigru", pooling: str = "attention") -> PooledClassifier:
    encoders = {"bigru": lambda: BiGRUEncoder(E, 4), "transformer": lambda: TransformerEncoder(E, 2, 1, dropout=0.0)}
    built = encoders[encoder]()
    return PooledClassifier(
        V, 3, embed_dim=E, encoder=built, task_scaling=SCALINGS[scaling](),
        pooling=build_pooling(pooling, built.output_dim, heads=2, distribution=DISTRIBUTIONS[dist]()),
    ).eval()  # fmt: skip


def nested(documents, extra_sentences, extra_words):
    s = max(len(d) for d in documents) + extra_sentences
    w = max(max(max(d, default=0) for d in documents) + extra_words, 1)
    ids = torch.randint(1, V, (len(documents), max(s, 1), w))  # garbage everywhere, then masked
    word_mask = torch.zeros(ids.shape, dtype=torch.bool)
    for b, doc in enumerate(documents):
        for i, n in enumerate(doc):
            word_mask[b, i, :n] = True
    return ids, word_mask, word_mask.any(2)


documents = st.lists(st.lists(st.integers(1, 5), min_size=1, max_size=3), min_size=1, max_size=3)


@pytest.mark.parametrize(("dist", "scaling"), OPTIONS)
@settings(max_examples=4, deadline=None)
@given(docs=documents, extra_sentences=st.integers(0, 2), extra_words=st.integers(0, 2), seed=st.integers(0, 2**16))
def test_han_document_alone_equals_document_in_a_padded_batch(dist, scaling, docs, extra_sentences, extra_words, seed):
    torch.manual_seed(seed)
    model = han(dist, scaling)
    ids, word_mask, sentence_mask = nested(docs, extra_sentences, extra_words)
    with torch.no_grad():
        batched = model(ids, word_mask, sentence_mask)
        for b, doc in enumerate(docs):
            s, w = len(doc), max(doc)
            alone = model(ids[b : b + 1, :s, :w], word_mask[b : b + 1, :s, :w], sentence_mask[b : b + 1, :s])
            torch.testing.assert_close(batched.logits[b], alone.logits[0], atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(batched.words.weights[b, :s, :w], alone.words.weights[0], atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(
                batched.sentences.weights[b, :s], alone.sentences.weights[0], atol=1e-5, rtol=1e-5
            )
            assert (batched.words.weights[b][~word_mask[b]] == 0).all() and (
                batched.sentences.weights[b, s:] == 0
            ).all()


@pytest.mark.parametrize(("dist", "scaling"), OPTIONS)
@pytest.mark.parametrize("encoder", ["bigru", "transformer"])
@settings(max_examples=4, deadline=None)
@given(lengths=st.lists(st.integers(1, 6), min_size=1, max_size=3), extra=st.integers(0, 3), seed=st.integers(0, 2**16))
def test_pooled_document_alone_equals_document_in_a_padded_batch(dist, scaling, encoder, lengths, extra, seed):
    torch.manual_seed(seed)
    model = pooled(dist, scaling, encoder, pooling="multihead")
    ids = torch.randint(1, V, (len(lengths), max(lengths) + extra))
    mask = torch.arange(ids.shape[1])[None] < torch.tensor(lengths)[:, None]
    with torch.no_grad():
        batched = model(ids, mask)
        for b, n in enumerate(lengths):
            alone = model(ids[b : b + 1, :n], mask[b : b + 1, :n])
            torch.testing.assert_close(batched.logits[b], alone.logits[0], atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(
                batched.pooling.weights[b, :, :n], alone.pooling.weights[0], atol=1e-5, rtol=1e-5
            )
            assert (batched.pooling.weights[b, :, n:] == 0).all()
            ours, own = conicity(*batched.encoded[0])[b], conicity(*alone.encoded[0])[0]
            torch.testing.assert_close(ours, own, atol=1e-5, rtol=1e-5)  # the penalty's term is padding-free too


@pytest.mark.parametrize("dist", ["sparsemax", "entmax15"])
def test_sparse_pooling_gives_exact_zeros(dist):
    pool = AttentionPooling(2, distribution=DISTRIBUTIONS[dist]())
    with torch.no_grad():  # score = 10 · tanh(x_0): far apart scores
        pool.key_proj.weight.copy_(torch.eye(2))
        pool.key_proj.bias.zero_()
        pool.queries.copy_(torch.tensor([[10.0, 0.0]]))
    x = torch.tensor([[[3.0, 1.0], [-3.0, 2.0], [0.0, 5.0], [2.5, 0.0]]])
    weights = pool(x, torch.ones(1, 4, dtype=torch.bool)).weights[0, 0]
    assert weights[1] == 0 and weights[2] == 0  # exactly, not merely small
    assert weights.sum().item() == pytest.approx(1.0) and weights[0] > weights[3] >= 0


@pytest.mark.parametrize(("dist", "scaling"), OPTIONS)
def test_han_empty_sentences_and_documents_give_zeros_without_nan(dist, scaling):
    torch.manual_seed(0)
    model = han(dist, scaling).train()
    ids, word_mask, sentence_mask = nested([[3, 2, 4], [2]], extra_sentences=1, extra_words=1)
    word_mask[0, 1] = False  # an empty sentence between two real ones
    word_mask[1] = False  # an empty document
    sentence_mask = word_mask.any(2) | torch.tensor([[False, True, False, False], [True, False, False, False]])
    out = model(ids, word_mask, sentence_mask)
    assert (out.words.weights[0, 1] == 0).all() and out.sentences.weights[0, 1] == 0
    assert (out.sentences.weights[1] == 0).all() and (out.words.weights[1] == 0).all()
    assert torch.isfinite(out.logits).all()
    (out.logits.sum() + diversity_penalty(out.encoded)).backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_the_models_expose_their_encoder_states_and_masks():
    torch.manual_seed(0)
    ids, word_mask, sentence_mask = nested([[3, 2], [4]], extra_sentences=1, extra_words=2)
    out = han("softmax", "none")(ids, word_mask, sentence_mask)
    words, sentences = out.encoded
    assert words.states.shape == (3, 6, 8) and torch.equal(words.mask, word_mask[sentence_mask])
    assert sentences.states.shape == (2, 3, 8) and sentences.mask.sum().item() == 3
    token_ids = torch.randint(1, V, (2, 5))
    mask = torch.tensor([[True] * 5, [True, True, False, False, False]])
    (tokens,) = pooled("softmax", "none")(token_ids, mask).encoded
    assert tokens.states.shape == (2, 5, 8) and torch.equal(tokens.mask, mask)
    no_encoder = PooledClassifier(V, 3, embed_dim=E).eval()
    assert no_encoder(token_ids, mask).encoded == ()


def test_task_scaling_reads_the_word_embeddings_once_and_before_dropout():
    """The scores come from the embedding layer's own output (what gradient methods replace), not from dropout's."""
    torch.manual_seed(0)
    model = pooled("softmax", "lin")
    calls = []
    model.embedding.register_forward_hook(lambda module, inputs, output: calls.append(output))
    ids, mask = torch.randint(1, V, (1, 4)), torch.ones(1, 4, dtype=torch.bool)
    model(ids, mask)
    assert len(calls) == 1


def test_build_pooling_refuses_a_distribution_it_cannot_use():
    with pytest.raises(ValueError, match="no attention distribution"):
        build_pooling("mean", 4, distribution=Sparsemax())
    with pytest.raises(ValueError, match="renormalised"):
        build_pooling("attention", 4, padding="renormalised", distribution=Sparsemax())
