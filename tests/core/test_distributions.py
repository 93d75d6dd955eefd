"""Distributions: hand-computable cases, fast == reference (values and gradients), gradcheck, masking rules."""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attnkit import Entmax15, LocalM, LocalP, Softmax, Sparsemax
from attnkit.functional import entmax15, entmax15_reference, masked_softmax, sparsemax, sparsemax_reference

ALL = {
    "softmax": Softmax,
    "sparsemax": Sparsemax,
    "entmax15": Entmax15,
    "local-m": lambda: LocalM(window=2),
    "local-p": lambda: LocalP(window=2, query_dim=4),
}


def run(dist, scores, mask=None, query=None):
    if query is None:
        query = torch.randn(*scores.shape[:-1], 4, dtype=scores.dtype)
    return dist(scores, mask, query=query)


def test_softmax_by_hand_two_keys_scored_0_and_1():
    weights = masked_softmax(torch.tensor([0.0, 1.0]))
    e = math.e
    torch.testing.assert_close(weights, torch.tensor([1 / (1 + e), e / (1 + e)]))


def test_masked_softmax_fixes_the_watered_down_padding_example():
    # The question this project started from: softmax([0.1, 0.2, 0, 0, 0]) with 3 padded positions.
    scores = torch.tensor([0.1, 0.2, 0.0, 0.0, 0.0])
    mask = torch.tensor([1, 1, 0, 0, 0], dtype=torch.bool)
    weights = masked_softmax(scores, mask)
    torch.testing.assert_close(weights, torch.tensor([0.4750, 0.5250, 0, 0, 0]), atol=1e-4, rtol=0)
    assert (weights[2:] == 0).all()


def test_sparsemax_by_hand():
    torch.testing.assert_close(sparsemax(torch.tensor([1.0, 0.5, -1.0])), torch.tensor([0.75, 0.25, 0.0]))


def test_entmax15_by_hand():
    # support {1, 2}: x = z/2 = (0.5, 0.25); (0.5 - t)^2 + (0.25 - t)^2 = 1 -> t = (0.75 - sqrt(2 - 0.0625)) / 2
    tau = (0.75 - math.sqrt(2 - 0.0625)) / 2
    expected = torch.tensor([(0.5 - tau) ** 2, (0.25 - tau) ** 2, 0.0])
    torch.testing.assert_close(entmax15(torch.tensor([1.0, 0.5, -1.0])), expected)


@pytest.mark.parametrize(("fast", "reference"), [(sparsemax, sparsemax_reference), (entmax15, entmax15_reference)])
def test_sparse_fast_paths_match_their_references_in_values_and_gradients(fast, reference):
    torch.manual_seed(0)
    scores = torch.randn(3, 4, 7, dtype=torch.float64) * 2
    mask = torch.rand(3, 4, 7) > 0.3
    mask[0, 0] = False  # an empty row
    upstream = torch.randn(3, 4, 7, dtype=torch.float64)
    a = scores.clone().requires_grad_()
    b = scores.clone().requires_grad_()
    out_fast, out_ref = fast(a, mask), reference(b, mask)
    torch.testing.assert_close(out_fast, out_ref)
    (out_fast * upstream).sum().backward()
    (out_ref * upstream).sum().backward()
    torch.testing.assert_close(a.grad, b.grad)


@pytest.mark.parametrize("fn", [sparsemax, entmax15, masked_softmax])
def test_gradcheck_float64(fn):
    torch.manual_seed(1)
    scores = torch.randn(2, 3, 6, dtype=torch.float64, requires_grad=True)
    mask = torch.rand(2, 3, 6) > 0.3
    mask[1, 2] = False
    assert torch.autograd.gradcheck(lambda s: fn(s, mask), (scores,))
    assert torch.autograd.gradcheck(lambda s: fn(s), (scores,))


@pytest.mark.parametrize("name", ALL)
@given(data=st.data())
def test_rows_sum_to_one_and_masked_weights_are_exactly_zero(name, data):
    torch.manual_seed(data.draw(st.integers(0, 2**16)))
    b, tq, tk = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 4)), data.draw(st.integers(1, 9))
    scores = torch.randn(b, tq, tk) * data.draw(st.sampled_from([0.1, 1.0, 10.0]))
    mask = torch.rand(b, 1, tk) > 0.4
    weights = run(ALL[name](), scores, mask)
    assert torch.isfinite(weights).all()
    assert (weights[~mask.expand_as(weights)] == 0).all()
    sums = weights.sum(-1)
    if name.startswith("local"):
        # a row whose window holds no kept key is empty: it sums to 0, every other row to 1
        empty = sums < 0.5
        torch.testing.assert_close(sums[~empty], torch.ones_like(sums[~empty]))
        assert (sums[empty] == 0).all()
    else:
        has_key = mask.expand_as(weights).any(-1)
        torch.testing.assert_close(sums[has_key], torch.ones_like(sums[has_key]))
        assert (sums[~has_key] == 0).all()


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_fully_masked_rows_are_zero_with_zero_gradient(name, dtype):
    torch.manual_seed(0)
    scores = torch.randn(2, 3, 5).to(dtype).requires_grad_()
    mask = torch.ones(2, 3, 5, dtype=torch.bool)
    mask[0, 1] = False
    mask[1] = False
    query = torch.randn(2, 3, 4, dtype=dtype, requires_grad=True)
    weights = run(ALL[name](), scores, mask, query)
    assert weights.dtype == dtype
    assert torch.isfinite(weights).all()
    assert (weights[0, 1] == 0).all() and (weights[1] == 0).all()
    (weights.float() * torch.randn(weights.shape)).sum().backward()
    assert torch.isfinite(scores.grad).all()
    assert (scores.grad[0, 1] == 0).all() and (scores.grad[1] == 0).all()
    if query.grad is not None:  # only the local-p distribution reads the query
        assert torch.isfinite(query.grad).all() and (query.grad[1] == 0).all()


def test_half_precision_is_computed_in_float32():
    # exp(12) overflows float16's range when summed naively; the float32 path gives the right answer
    scores = torch.tensor([[12.0, 11.0, 0.0]], dtype=torch.float16)
    weights = masked_softmax(scores)
    torch.testing.assert_close(weights.float(), torch.softmax(scores.float(), -1), atol=1e-3, rtol=0)


def test_local_m_only_looks_inside_the_window():
    scores = torch.zeros(1, 5, 8)
    weights = LocalM(window=1)(scores)
    for t in range(5):
        kept = weights[0, t] > 0
        assert kept.nonzero().flatten().tolist() == [p for p in range(t - 1, t + 2) if 0 <= p < 8]
    # an explicit centre for one decoding step
    step = LocalM(window=1)(torch.zeros(1, 1, 8), query_positions=torch.tensor([6]))
    assert (step[0, 0] > 0).nonzero().flatten().tolist() == [5, 6, 7]


def test_local_p_centres_inside_the_source_and_weights_follow_a_gaussian():
    torch.manual_seed(0)
    dist = LocalP(window=2, query_dim=4)
    scores = torch.zeros(2, 3, 10)
    key_mask = torch.ones(2, 1, 10, dtype=torch.bool)
    key_mask[1, :, 6:] = False
    query = torch.randn(2, 3, 4)
    weights = dist(scores, key_mask, query=query)
    source_last = torch.tensor([9.0, 5.0])[:, None]
    centers = dist.predict_centers(query, source_last.expand(2, 3))
    assert ((centers >= 0) & (centers <= source_last)).all()
    # with equal scores the weights are the normalised Gaussian around p_t, inside |s - p_t| <= D
    positions = torch.arange(10.0)
    for b in range(2):
        for t in range(3):
            p = centers[b, t]
            inside = ((positions - p).abs() <= 2) & key_mask[b, 0]
            gauss = torch.exp(-((positions - p) ** 2) / (2 * 1.0**2)) * inside
            torch.testing.assert_close(weights[b, t], gauss / gauss.sum())


def test_local_p_learns_where_to_look():
    # p_t is differentiable: gradient reaches W_p and v_p
    dist = LocalP(window=3, query_dim=4)
    weights = dist(torch.randn(1, 2, 12), None, query=torch.randn(1, 2, 4))
    expected_position = (weights * torch.arange(12.0)).sum()
    expected_position.backward()
    assert dist.position_proj.weight.grad.abs().sum() > 0


def test_local_p_requires_the_query():
    with pytest.raises(ValueError, match="query"):
        LocalP(window=2, query_dim=4)(torch.randn(1, 2, 5))
