"""Hypothesis properties over every score × distribution: padding and batch companions never change a result.

A sequence run alone (no padding at all) must give the same context and weights (≤ 1e-5, float32) as the same
sequence inside a padded batch with other sequences, whatever garbage the padding holds.
"""

import pytest
import torch
from _factories import DISTRIBUTIONS, PAIRS, SCORES, pad_batch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnkit import Attention, AttentionPooling, MultiHeadAttention

TOL = {"atol": 1e-5, "rtol": 1e-5}
# Every pair is its own test; a few examples each keep the grid inside the CI budget.
GRID = settings(max_examples=6)
lengths = st.lists(st.integers(1, 7), min_size=1, max_size=4)


@pytest.mark.parametrize(("score", "dist"), PAIRS)
@GRID
@given(query_lengths=lengths, key_lengths=lengths, extra=st.integers(0, 3), seed=st.integers(0, 2**16))
def test_attention_ignores_padding_and_companions(score, dist, query_lengths, key_lengths, extra, seed):
    torch.manual_seed(seed)
    d = 6
    attend = Attention(SCORES[score](d), DISTRIBUTIONS[dist](d)).eval()
    n = min(len(query_lengths), len(key_lengths))
    queries = [torch.randn(t, d) for t in query_lengths[:n]]
    keys = [torch.randn(t, d) for t in key_lengths[:n]]
    values = [torch.randn(t, 3) for t in key_lengths[:n]]
    q, q_mask = pad_batch(queries, extra)
    k, k_mask = pad_batch(keys, extra)
    v, _ = pad_batch(values, extra)
    batched = attend(q, k, v, key_mask=k_mask, query_mask=q_mask)

    for i in range(n):
        alone = attend(queries[i][None], keys[i][None], values[i][None])
        tq, tk = len(queries[i]), len(keys[i])
        torch.testing.assert_close(batched.context[i, :tq], alone.context[0], **TOL)
        torch.testing.assert_close(batched.weights[i, :tq, :tk], alone.weights[0], **TOL)
        # padding gets exactly zero weight; padded queries get zero weights and zero context
        assert (batched.weights[i, :, tk:] == 0).all()
        assert (batched.weights[i, tq:] == 0).all() and (batched.context[i, tq:] == 0).all()
        sums = batched.weights[i, :tq].sum(-1)
        assert ((sums - 1).abs() < 1e-5).logical_or(sums == 0).all()


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
@pytest.mark.parametrize("score", [None, *SCORES])
@pytest.mark.parametrize("heads", [1, 3])
@GRID
@given(seq_lengths=lengths, extra=st.integers(0, 3), seed=st.integers(0, 2**16))
def test_attention_pooling_ignores_padding_and_companions(dist, score, heads, seq_lengths, extra, seed):
    torch.manual_seed(seed)
    d = 6
    pool = AttentionPooling(
        d, heads=heads, score=None if score is None else SCORES[score](d), distribution=DISTRIBUTIONS[dist](d)
    ).eval()
    sequences = [torch.randn(t, d) for t in seq_lengths]
    x, mask = pad_batch(sequences, extra)
    batched = pool(x, mask)
    assert batched.context.shape == (len(sequences), heads * d if heads > 1 else d)
    for i, s in enumerate(sequences):
        alone = pool(s[None])
        torch.testing.assert_close(batched.context[i], alone.context[0], **TOL)
        torch.testing.assert_close(batched.weights[i, :, : len(s)], alone.weights[0], **TOL)
        assert (batched.weights[i, :, len(s) :] == 0).all()


MHA_SCORES = ["scaled-dot", "dot", "general", "additive", "cosine"]


@pytest.mark.parametrize("score", MHA_SCORES)
@pytest.mark.parametrize("dist", DISTRIBUTIONS)
@pytest.mark.parametrize("causal", [False, True])
@GRID
@given(seq_lengths=lengths, extra=st.integers(0, 3), seed=st.integers(0, 2**16))
def test_multihead_self_attention_ignores_padding_and_companions(score, dist, causal, seq_lengths, extra, seed):
    torch.manual_seed(seed)
    e, h = 8, 2
    mha = MultiHeadAttention(e, h, score=SCORES[score](e // h), distribution=DISTRIBUTIONS[dist](e // h)).eval()
    sequences = [torch.randn(t, e) for t in seq_lengths]
    x, mask = pad_batch(sequences, extra)
    batched = mha(x, key_mask=mask, causal=causal, need_weights=True)
    for i, s in enumerate(sequences):
        t = len(s)
        alone = mha(s[None], causal=causal, need_weights=True)
        torch.testing.assert_close(batched.context[i, :t], alone.context[0], **TOL)
        torch.testing.assert_close(batched.weights[i, :, :t, :t], alone.weights[0], **TOL)
        assert (batched.weights[i, :, :, t:] == 0).all()


@given(seq_lengths=lengths, extra=st.integers(0, 3), seed=st.integers(0, 2**16))
def test_multihead_cross_attention_ignores_key_padding(seq_lengths, extra, seed):
    torch.manual_seed(seed)
    mha = MultiHeadAttention(8, 2, kdim=5, vdim=3).eval()
    memories = [torch.randn(t, 5) for t in seq_lengths]
    values = [torch.randn(t, 3) for t in seq_lengths]
    query = torch.randn(len(seq_lengths), 4, 8)
    k, k_mask = pad_batch(memories, extra)
    v, _ = pad_batch(values, extra)
    batched = mha(query, k, v, key_mask=k_mask)
    for i in range(len(seq_lengths)):
        alone = mha(query[i : i + 1], memories[i][None], values[i][None])
        torch.testing.assert_close(batched.context[i], alone.context[0], **TOL)
