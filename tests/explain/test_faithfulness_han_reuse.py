"""The HAN's fast ``delete`` erasure (sentence vectors reused, shortened sentences encoded once) equals its
readable reference (every variant through the whole model), and the model's two stages compose to its forward."""

from __future__ import annotations

import pytest
import torch
from _faithfulness_models import han_model, han_subject
from hypothesis import given, settings
from hypothesis import strategies as st

from attnkit.data.batching import collate_documents
from attnkit.explain.faithfulness.erasure import flip_counts, keep_top, top_counts
from attnkit.explain.faithfulness.metrics import ranking

DOCUMENT = [[4, 5, 6], [7], [8, 9, 10, 11], [12, 13], [14, 15, 16, 17, 18]]


def _assert_fast_equals_reference(subject, keep: torch.Tensor) -> None:
    fast = subject.probabilities_when(keep, "delete")
    reference = subject.full_probabilities_when(keep, "delete")
    assert fast.shape == reference.shape == (keep.shape[0], 3)
    torch.testing.assert_close(fast, reference, rtol=1e-5, atol=1e-6)


def test_leave_one_out_and_every_top_k_erasure_equal_the_whole_forward():
    subject = han_subject(han_model(), DOCUMENT)
    units = len(subject.tokens)
    order = ranking(torch.rand(units, generator=torch.Generator().manual_seed(3)))
    keep = torch.cat(
        [
            ~torch.eye(units, dtype=torch.bool),  # leave-one-out
            keep_top(order, top_counts(units), keep=False),
            keep_top(order, top_counts(units), keep=True),
            keep_top(order, flip_counts(units), keep=False),  # ends with everything erased: an empty document
            torch.ones(1, units, dtype=torch.bool),
        ]
    )
    _assert_fast_equals_reference(subject, keep)
    # keeping every word gives the prediction itself
    torch.testing.assert_close(subject.probabilities_when(keep[-1:], "delete")[0], subject.probabilities)


def test_a_shortened_sentence_shared_by_variants_and_an_emptied_one_give_the_reference_values():
    subject = han_subject(han_model(seed=1), [[4, 5, 6], [7], [8, 9]])
    keep = torch.tensor(
        [
            [True, False, True, False, True, True],  # sentence 0 shortened, sentence 1 gone
            [True, False, True, True, False, True],  # the same shortened sentence 0, sentence 2 shortened
            [False, False, False, True, False, False],  # only "7"
        ]
    )
    _assert_fast_equals_reference(subject, keep)
    batch = collate_documents([([[4, 6], [7], [9]], None)])
    with torch.no_grad():
        alone = torch.softmax(subject.model(batch.token_ids, batch.word_mask, batch.sentence_mask).logits, -1)[0]
    torch.testing.assert_close(subject.probabilities_when(keep, "delete")[1], alone, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("value_layer", [0, 12])
def test_with_embedding_values_every_erasure_equals_the_reference(value_layer):
    """The sentence vectors are then the values' width (16, or the value layer's 12), not the states' (16 = 2 x 8):
    variants that shorten no sentence (whole sentences kept or deleted) reuse them as they are."""
    model = han_model(seed=5, attention_values="embeddings", value_layer=value_layer)
    subject = han_subject(model, [[4, 5, 6], [7], [8, 9]])
    keep = torch.tensor(
        [
            [True, True, True, False, True, True],  # sentence 1 gone, no sentence shortened
            [False, False, False, True, True, True],  # sentence 0 gone
            [True, False, True, True, True, False],  # two shortened sentences
        ]
    )
    _assert_fast_equals_reference(subject, keep)
    _assert_fast_equals_reference(subject, keep[:2])  # only whole sentences erased


@settings(max_examples=25, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 6), min_size=1, max_size=5),
    seed=st.integers(0, 2**16),
    variants=st.integers(1, 12),
)
def test_random_erasures_equal_the_reference(lengths, seed, variants):
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(2, 40, (sum(lengths),), generator=generator).tolist()
    sentences, start = [], 0
    for length in lengths:
        sentences.append(ids[start : start + length])
        start += length
    subject = han_subject(han_model(seed=seed % 7), sentences)
    keep = torch.rand(variants, len(ids), generator=generator) < 0.6
    _assert_fast_equals_reference(subject, keep)


def test_the_two_stages_compose_to_the_forward_in_values_and_gradients():
    model = han_model(seed=2)
    batch = collate_documents([(DOCUMENT, None), ([[4, 5], [6]], None)])
    whole = model(batch.token_ids, batch.word_mask, batch.sentence_mask)
    real = batch.sentence_mask & batch.word_mask.any(2)  # [B, S]
    encoded = model.encode_sentences(batch.token_ids[real], batch.word_mask[real])
    vectors = encoded.context.new_zeros(*real.shape, encoded.context.shape[-1]).index_put((real,), encoded.context)
    logits, document = model.classify_sentences(vectors, real)
    torch.testing.assert_close(logits, whole.logits)
    torch.testing.assert_close(document.weights, whole.sentences.weights)
    (grad_whole,) = torch.autograd.grad(whole.logits[:, 0].sum(), model.embedding.weight)
    (grad_stages,) = torch.autograd.grad(logits[:, 0].sum(), model.embedding.weight)
    torch.testing.assert_close(grad_stages, grad_whole)


def test_a_swapped_attention_distribution_runs_the_whole_model():
    from attnkit.explain.faithfulness.baselines import permuted_attention, uniform_attention

    subject = han_subject(han_model(seed=4), DOCUMENT)
    keep = torch.ones(4, len(subject.tokens), dtype=torch.bool)
    keep[1:, 2] = False
    with uniform_attention(subject.model):
        uniform = subject.probabilities_when(keep, "delete")
        torch.testing.assert_close(uniform, subject.full_probabilities_when(keep, "delete"))
    assert not torch.allclose(uniform[0], subject.probabilities)
    with permuted_attention(subject.model, torch.Generator().manual_seed(0)):
        shuffled = subject.probabilities_when(keep, "delete")
    assert not torch.allclose(shuffled[0], subject.probabilities)
    torch.testing.assert_close(subject.probabilities_when(keep[:1], "delete")[0], subject.probabilities)
