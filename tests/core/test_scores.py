"""Score functions: values by hand, the chunked additive score against its naive reference, gradcheck."""

import math

import pytest
import torch

from attnkit import AdditiveScore, CosineScore, DotScore, GeneralScore, ScaledDotScore
from attnkit.functional import additive_scores, additive_scores_reference


def test_dot_and_scaled_dot_by_hand():
    q = torch.tensor([[[1.0, 2.0, 0.0, 0.0]]])  # [1, 1, 4]
    k = torch.tensor([[[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]]])  # [1, 2, 4]
    torch.testing.assert_close(DotScore()(q, k), torch.tensor([[[3.0, 0.0]]]))
    torch.testing.assert_close(ScaledDotScore()(q, k), torch.tensor([[[1.5, 0.0]]]))


def test_general_score_is_bilinear():
    torch.manual_seed(0)
    score = GeneralScore(3, 5)
    q, k = torch.randn(2, 4, 3), torch.randn(2, 6, 5)
    expected = torch.einsum("bqi,ij,bkj->bqk", q, score.weight, k)
    torch.testing.assert_close(score(q, k), expected)


def test_cosine_score_is_scaled_cosine():
    q = torch.tensor([[[3.0, 0.0]]])
    k = torch.tensor([[[1.0, 0.0], [0.0, 2.0], [-1.0, -1.0]]])
    torch.testing.assert_close(CosineScore(temperature=0.5)(q, k), torch.tensor([[[2.0, 0.0, -math.sqrt(2)]]]))
    learnable = CosineScore(temperature=0.5, learnable=True)
    learnable(q, k).sum().backward()
    assert learnable.log_scale.grad is not None


def test_scores_work_with_a_heads_dimension():
    torch.manual_seed(0)
    q, k = torch.randn(2, 3, 4, 8), torch.randn(2, 3, 5, 8)
    for score in (DotScore(), ScaledDotScore(), GeneralScore(8, 8), AdditiveScore(8, 8, 6), CosineScore()):
        scores = score(q, k)
        assert scores.shape == (2, 3, 4, 5)
        # head h only sees head h's queries and keys
        torch.testing.assert_close(scores[:, 1], score(q[:, 1], k[:, 1]))


def test_dot_scores_name_mismatched_feature_sizes():
    with pytest.raises(ValueError, match=r"query \(1, 2, 3\) and key \(1, 2, 4\)"):
        DotScore()(torch.randn(1, 2, 3), torch.randn(1, 2, 4))


@pytest.mark.parametrize("block_elements", [7, 64, 1 << 18])
def test_chunked_additive_equals_naive_in_values_and_gradients(block_elements):
    torch.manual_seed(0)
    wq = torch.randn(3, 5, 6, dtype=torch.float64)
    uk = torch.randn(3, 7, 6, dtype=torch.float64)
    v = torch.randn(6, dtype=torch.float64)
    upstream = torch.randn(3, 5, 7, dtype=torch.float64)
    inputs_fast = [t.clone().requires_grad_() for t in (wq, uk, v)]
    inputs_ref = [t.clone().requires_grad_() for t in (wq, uk, v)]
    fast = additive_scores(*inputs_fast, block_elements=block_elements)
    ref = additive_scores_reference(*inputs_ref)
    torch.testing.assert_close(fast, ref)
    (fast * upstream).sum().backward()
    (ref * upstream).sum().backward()
    for a, b in zip(inputs_fast, inputs_ref, strict=True):
        torch.testing.assert_close(a.grad, b.grad)


def test_chunked_additive_gradcheck_float64_with_broadcast_leading_dims():
    torch.manual_seed(0)
    wq = torch.randn(2, 3, 4, 5, dtype=torch.float64, requires_grad=True)
    uk = torch.randn(2, 1, 6, 5, dtype=torch.float64, requires_grad=True)
    v = torch.randn(5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b, c: additive_scores(a, b, c, block_elements=40), (wq, uk, v))


def test_additive_score_module_matches_the_formula_and_reuses_projected_keys():
    torch.manual_seed(0)
    score = AdditiveScore(4, 6, 5)
    q, k = torch.randn(2, 3, 4), torch.randn(2, 7, 6)
    expected = torch.tanh(score.query_proj(q)[:, :, None] + score.key_proj(k)[:, None]) @ score.v
    torch.testing.assert_close(score(q, k), expected)
    torch.testing.assert_close(score(q, None, projected_key=score.project_keys(k)), expected)


def test_chunked_additive_never_allocates_the_4d_tensor():
    # With a block of 1,024 elements, the autograd graph must not hold anything of size B*Tq*Tk*Dh.
    wq = torch.randn(2, 64, 32, requires_grad=True)
    uk = torch.randn(2, 64, 32, requires_grad=True)
    v = torch.randn(32, requires_grad=True)
    largest = 0

    def pack(t):
        nonlocal largest
        largest = max(largest, t.numel())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        additive_scores(wq, uk, v, block_elements=1024).sum().backward()
    assert largest < 2 * 64 * 64 * 32 / 16
