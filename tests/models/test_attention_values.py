"""``attention_values="embeddings"`` (issue #38): the encoder's states choose the weights and the words' own
embeddings are what the weights average, so that a model's output is a weighted sum of word vectors whose weights
are the attention. Checked by hand computation, against a reference loop (values and gradients), under padding
(Hypothesis), on empty sentences and documents, and in the config (refusals, old checkpoints)."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnkit import AttentionPooling
from attnkit.distributions import Softmax, Sparsemax
from attnkit.models import BiGRUEncoder, HierarchicalAttentionClassifier, PooledClassifier
from attnkit.models.pooled import build_pooling
from attnkit.tasks.classify.config import RECIPE_BEFORE_OPTIONS, ClassifierConfig, build_classifier
from attnkit.tasks.classify.recipe import recipe_lines

V, E = 30, 8
DISTRIBUTIONS = {"softmax": Softmax, "sparsemax": Sparsemax}


def han(
    dist: str = "softmax", padding: str = "masked", bigrams: int = 0, value_layer: int = 0
) -> HierarchicalAttentionClassifier:
    return HierarchicalAttentionClassifier(
        V, 3, embed_dim=E, word_hidden=5, sentence_hidden=6, distribution=DISTRIBUTIONS[dist],
        attention_values="embeddings", attention_padding=padding, bigram_buckets=bigrams, value_layer=value_layer,
    ).eval()  # fmt: skip


def pooled(dist: str = "softmax", heads: int = 2, bigrams: int = 0, value_layer: int = 0) -> PooledClassifier:
    pooling = build_pooling("multihead", 10, heads=heads, distribution=DISTRIBUTIONS[dist]())
    return PooledClassifier(
        V, 3, embed_dim=E, encoder=BiGRUEncoder(E, 5), pooling=pooling, attention_values="embeddings",
        bigram_buckets=bigrams, value_layer=value_layer,
    ).eval()  # fmt: skip


def test_the_pooling_averages_the_values_with_the_weights_the_keys_give():
    torch.manual_seed(0)
    pooling = AttentionPooling(6, heads=2)
    x, values = torch.randn(3, 5, 6), torch.randn(3, 5, 4)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]], dtype=torch.bool)
    plain, averaged = pooling(x, key_mask=mask), pooling(x, key_mask=mask, values=values)
    torch.testing.assert_close(averaged.weights, plain.weights)
    torch.testing.assert_close(averaged.context, (plain.weights @ values).flatten(1))
    assert averaged.context.shape == (3, 8) and not averaged.context[2].any()
    with pytest.raises(ValueError, match="values must have shape"):
        pooling(x, key_mask=mask, values=values[:, :4])


@pytest.mark.parametrize("dist", ["softmax", "sparsemax"])
def test_the_han_document_is_the_attention_weighted_sum_of_its_word_embeddings(dist):
    torch.manual_seed(0)
    model = han(dist)
    ids = torch.randint(1, V, (2, 3, 4))
    word_mask = torch.ones(2, 3, 4, dtype=torch.bool)
    word_mask[0, 1, 2:] = False
    word_mask[1, 2] = False
    out = model(ids, word_mask, torch.ones(2, 3, dtype=torch.bool))
    word_weights = out.sentences.weights[..., None] * out.words.weights  # [B, S, W]: β_s · α_sw
    document = (word_weights[..., None] * model.embedding(ids)).sum((1, 2))  # [B, E]
    torch.testing.assert_close(out.logits, model.classifier(document))
    assert not word_weights[~word_mask].any()


def test_the_pooled_logits_are_each_heads_weighted_sum_of_embeddings():
    torch.manual_seed(0)
    model = pooled(heads=2)
    ids, mask = torch.randint(1, V, (2, 6)), torch.tensor([[1] * 6, [1] * 3 + [0] * 3], dtype=torch.bool)
    out = model(ids, mask)
    heads = out.pooling.weights @ model.embedding(ids)  # [B, heads, E]
    torch.testing.assert_close(out.logits, model.classifier(heads.flatten(1)))


def test_values_and_gradients_match_a_readable_reference_loop():
    torch.manual_seed(0)
    pooling = AttentionPooling(6, heads=2).double()
    x = torch.randn(2, 5, 6, dtype=torch.float64, requires_grad=True)
    values = torch.randn(2, 5, 3, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    fast = pooling(x, key_mask=mask, values=values).context
    rows = []
    for b in range(2):
        keys = torch.tanh(pooling.key_proj(x[b, mask[b]]))  # [t, Dh]
        weights = torch.softmax(keys @ pooling.queries.T, dim=0)  # [t, heads]
        rows.append(torch.cat([weights[:, h] @ values[b, mask[b]] for h in range(2)]))
    slow = torch.stack(rows)
    torch.testing.assert_close(fast, slow)
    grads = torch.autograd.grad(fast.square().sum(), (x, values))
    torch.testing.assert_close(grads, torch.autograd.grad(slow.square().sum(), (x, values)))
    assert not grads[1][0, 3:].any()  # padding's values get no gradient


documents = st.lists(st.integers(0, 4), min_size=1, max_size=3)  # words per sentence


@settings(max_examples=15, deadline=None)
@given(docs=documents, extra_words=st.integers(0, 2), seed=st.integers(0, 2**16))
def test_han_document_alone_equals_document_in_a_padded_batch(docs, extra_words, seed):
    torch.manual_seed(seed)
    model = han("sparsemax" if seed % 2 else "softmax", bigrams=17 if seed % 4 < 2 else 0, value_layer=seed % 3 * 6)
    sentences = [torch.randint(1, V, (length,)) for length in docs]
    width = max([len(s) for s in sentences] + [1])

    def batch(pad: int) -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.zeros(2, len(sentences) + 1, width + pad, dtype=torch.long)
        for index, words in enumerate(sentences):
            ids[0, index, : len(words)] = words
        ids[1, 0, :1] = 5
        return ids, ids != 0

    alone_ids, alone_mask = batch(0)
    padded_ids, padded_mask = batch(extra_words)
    alone = model(alone_ids[:1], alone_mask[:1], alone_mask[:1].any(2))
    padded = model(padded_ids, padded_mask, padded_mask.any(2))
    torch.testing.assert_close(padded.logits[:1], alone.logits, atol=1e-5, rtol=1e-5)


@settings(max_examples=15, deadline=None)
@given(length=st.integers(1, 6), extra=st.integers(0, 3), seed=st.integers(0, 2**16))
def test_pooled_document_alone_equals_document_in_a_padded_batch(length, extra, seed):
    torch.manual_seed(seed)
    model = pooled("sparsemax" if seed % 2 else "softmax", bigrams=17 if seed % 4 < 2 else 0, value_layer=seed % 3 * 6)
    ids = torch.randint(1, V, (1, length))
    padded = torch.cat(
        [torch.cat([ids, torch.zeros(1, extra, dtype=torch.long)], 1), torch.randint(1, V, (1, length + extra))]
    )
    alone = model(ids, ids != 0)
    together = model(padded, torch.cat([padded[:1] != 0, torch.ones(1, length + extra, dtype=torch.bool)]))
    torch.testing.assert_close(together.logits[:1], alone.logits, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("padding", ["masked", "unmasked"])
def test_empty_sentences_and_documents_give_zeros_without_nan(padding):
    model = han(padding=padding).train()
    ids = torch.zeros(2, 2, 3, dtype=torch.long)
    ids[0, 0, :2] = torch.tensor([4, 5])
    word_mask = ids != 0
    out = model(ids, word_mask, word_mask.any(2))
    out.logits.sum().backward()
    assert torch.isfinite(out.logits).all()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    if padding == "masked":  # the unmasked variant weighs padding on purpose (the masking experiment)
        assert not out.words.weights[0, 1].any() and not out.sentences.weights[1].any()


def test_the_config_builds_it_refuses_it_without_attention_and_old_configs_read_states():
    small = {"label_names": ["a", "b"], "embed_dim": 8, "hidden": 4, "dropout": 0.0}
    for model in ("han", "pooled"):
        built = build_classifier(ClassifierConfig(model=model, attention_values="embeddings", **small), 20)
        assert built.attention_values == "embeddings" and built.classifier.in_features == 8
    with pytest.raises(ValueError, match="attention_values must be one of"):
        ClassifierConfig(attention_values="keys", **small)
    with pytest.raises(ValueError, match="not mean pooling"):
        ClassifierConfig(model="pooled", pooling="mean", attention_values="embeddings", **small)
    with pytest.raises(ValueError, match="needs an attention pooling"):
        PooledClassifier(V, 2, embed_dim=E, pooling=build_pooling("max", E), attention_values="embeddings")
    assert RECIPE_BEFORE_OPTIONS["attention_values"] == "states"
    legacy = {k: v for k, v in ClassifierConfig(**small).to_dict().items() if k != "attention_values"}
    assert ClassifierConfig.from_dict(legacy).attention_values == "states"


@pytest.mark.parametrize("family", ["han", "pooled"])
def test_attention_contributions_decompose_the_predicted_logit_exactly(family):
    """Σ_i c_i = (logit_ŷ − mean logit) − (b_ŷ − mean b): the method ranks words by their exact part."""
    from attnkit.tasks.classify.faithfulness import value_contributions

    torch.manual_seed(1)
    if family == "han":
        model = han("sparsemax")
        ids = torch.randint(1, V, (1, 2, 4))
        out = model(ids, ids != 0, torch.ones(1, 2, dtype=torch.bool))
        weights = (out.sentences.weights[0, :, None] * out.words.weights[0]).reshape(1, -1)  # [1, T]
        flat = ids.reshape(-1)
    else:
        model = pooled(heads=2)
        flat = torch.randint(1, V, (7,))
        out = model(flat[None], torch.ones(1, 7, dtype=torch.bool))
        weights = out.pooling.weights[0]  # [H, T]
    label = int(out.logits.argmax())
    parts = value_contributions(model, flat, lambda: model.embedding(flat), weights, label)["attention_contribution"]
    logits, bias = out.logits[0].detach(), model.classifier.bias.detach()
    torch.testing.assert_close(parts.sum(), (logits[label] - logits.mean()) - (bias[label] - bias.mean()))
    plain = HierarchicalAttentionClassifier(V, 3, embed_dim=E, word_hidden=5, sentence_hidden=6)
    assert value_contributions(plain, flat, lambda: plain.embedding(flat), weights[:1], label) == {}


def test_a_han_s_bigrams_stay_within_their_sentence():
    torch.manual_seed(3)
    model = han(bigrams=13)
    ids = torch.tensor([[[3, 4, 5], [6, 7, 0]]])
    changed = ids.clone()
    changed[0, 1, 0] = 9  # the next sentence's first word: no bigram of the first sentence reads it
    first, second = (model(x, x != 0, torch.ones(1, 2, dtype=torch.bool)).words for x in (ids, changed))
    torch.testing.assert_close(first.context[0, 0], second.context[0, 0])
    assert not torch.allclose(first.context[0, 1], second.context[0, 1])
    words_only = han()
    words_only.load_state_dict(model.state_dict(), strict=False)
    assert not torch.allclose(
        words_only(ids, ids != 0, torch.ones(1, 2, dtype=torch.bool)).words.context, first.context
    )


@pytest.mark.parametrize("family", ["han", "pooled"])
def test_with_bigrams_each_word_s_part_still_sums_to_the_logit(family):
    """The subjects' ``attention_contribution`` reads each word's vector with its bigram, as the model does."""
    from attnkit.tasks.classify.faithfulness import HanSubject, PooledSubject

    torch.manual_seed(4)
    ids = {"pad_id": 0, "unk_id": 1}
    if family == "han":
        model = han("sparsemax", bigrams=11)
        subject = HanSubject(model, [[3, 4, 5], [6, 7]], ["w"] * 5, ["a", "b", "c"], **ids)
    else:
        model = pooled(heads=2, bigrams=11)
        subject = PooledSubject(model, [3, 4, 5, 6, 7], ["w"] * 5, ["a", "b", "c"], **ids)
    parts = subject.attention_scores()["attention_contribution"]
    logits, bias, label = subject._output.logits[0].detach(), model.classifier.bias.detach(), subject.label
    torch.testing.assert_close(parts.sum(), (logits[label] - logits.mean()) - (bias[label] - bias.mean()))


@pytest.mark.parametrize("family", ["han", "pooled"])
def test_with_a_value_layer_each_word_s_part_still_sums_to_the_logit(family):
    """``value_layer``: the attention averages ``GELU(W e + b)`` per word; the parts read it as the model does."""
    from attnkit.tasks.classify.faithfulness import HanSubject, PooledSubject

    torch.manual_seed(5)
    ids = {"pad_id": 0, "unk_id": 1}
    if family == "han":
        model = han("sparsemax", bigrams=11, value_layer=12)
        subject = HanSubject(model, [[3, 4, 5], [6, 7]], ["w"] * 5, ["a", "b", "c"], **ids)
    else:
        model = pooled(heads=2, value_layer=12)
        subject = PooledSubject(model, [3, 4, 5, 6, 7], ["w"] * 5, ["a", "b", "c"], **ids)
    assert model.classifier.in_features == 12 * (1 if family == "han" else 2)
    parts = subject.attention_scores()["attention_contribution"]
    logits, bias, label = subject._output.logits[0].detach(), model.classifier.bias.detach(), subject.label
    torch.testing.assert_close(parts.sum(), (logits[label] - logits.mean()) - (bias[label] - bias.mean()))


def test_a_value_layer_reads_one_word_and_is_the_hand_computed_gelu():
    torch.manual_seed(6)
    model = pooled(heads=2, value_layer=7)
    ids = torch.randint(1, V, (1, 5))
    out = model(ids, torch.ones(1, 5, dtype=torch.bool))
    layer = model.value_layer[0]
    values = torch.nn.functional.gelu(model.embedding(ids) @ layer.weight.T + layer.bias)  # [1, T, 7]
    torch.testing.assert_close(out.logits, model.classifier((out.pooling.weights @ values).flatten(1)))


def test_the_config_builds_a_value_layer_refuses_it_without_embedding_values_and_old_configs_read_none():
    small = {"label_names": ["a", "b"], "embed_dim": 8, "hidden": 4, "dropout": 0.0}
    for model in ("han", "pooled"):
        config = ClassifierConfig(model=model, attention_values="embeddings", value_layer=16, **small)
        assert build_classifier(config, 20).classifier.in_features == 16  # one attention head
        assert "a per-word layer of 16 units" in recipe_lines(config.recipe())[4]
    with pytest.raises(ValueError, match="needs attention_values 'embeddings'"):
        ClassifierConfig(value_layer=16, **small)
    with pytest.raises(ValueError, match="value_layer must be >= 0"):
        HierarchicalAttentionClassifier(V, 2, embed_dim=E, attention_values="embeddings", value_layer=-1)
    legacy = {k: v for k, v in ClassifierConfig(**small).to_dict().items() if k != "value_layer"}
    assert ClassifierConfig.from_dict(legacy).value_layer == 0 and RECIPE_BEFORE_OPTIONS["value_layer"] == 0
