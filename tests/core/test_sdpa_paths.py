"""functional.sdpa's three paths (no weights; weights through autograd; weights in inference) against the readable
formula ``masked_softmax(q kᵀ / √Dh + bias, mask) @ v``, in values and gradients, with empty rows and biases."""

import pytest
import torch

from attnkit.functional import masked_softmax
from attnkit.functional.sdpa import scaled_dot_product_attention


def _inputs(mask_kind, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    batch, heads, tq, tk, dh = 2, 3, 4, 5, 8
    q = torch.randn(batch, heads, tq, dh, generator=g, dtype=dtype)
    k, v = (torch.randn(batch, heads, tk, dh, generator=g, dtype=dtype) for _ in range(2))
    masks = {
        "none": None,
        "key padding": torch.arange(tk) < torch.tensor([tk, 0])[:, None, None, None],  # [B, 1, 1, Tk], one empty
        "per query": torch.rand(batch, 1, tq, tk, generator=g) > 0.5,  # [B, 1, Tq, Tk]
        "full": torch.rand(batch, heads, tq, tk, generator=g) > 0.4,  # [B, H, Tq, Tk]
    }
    mask = masks[mask_kind]
    if mask is not None:
        mask[0, 0, -1] = False  # an empty row in every masked case
    return q, k, v, mask


def _reference(q, k, v, mask, bias):
    scores = (q * q.shape[-1] ** -0.5) @ k.transpose(-1, -2)
    weights = masked_softmax(scores if bias is None else scores + bias, mask)
    return weights @ v, weights


@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("mask_kind", ["none", "key padding", "per query", "full"])
def test_every_path_equals_the_readable_formula_in_values_and_gradients(mask_kind, with_bias):
    q, k, v, mask = _inputs(mask_kind)
    bias = torch.randn(q.shape[2], k.shape[2], dtype=q.dtype) if with_bias else None  # [Tq, Tk]
    upstream = torch.randn_like(q)
    results = {}
    for name, need_weights in (("reference", None), ("no weights", False), ("autograd weights", True)):
        inputs = [t.clone().requires_grad_() for t in (q, k, v)]
        if need_weights is None:
            context, weights = _reference(*inputs, mask, bias)
        else:
            context, weights = scaled_dot_product_attention(*inputs, mask, bias=bias, need_weights=need_weights)
        (context * upstream).sum().backward()
        results[name] = (context, weights, [t.grad for t in inputs])
    with torch.no_grad():
        results["inference weights"] = (
            *scaled_dot_product_attention(q, k, v, mask, bias=bias, need_weights=True),
            None,
        )
    context, weights, grads = results.pop("reference")
    for name, (got_context, got_weights, got_grads) in results.items():
        torch.testing.assert_close(got_context, context, msg=name)
        if got_weights is not None:
            torch.testing.assert_close(got_weights, weights, msg=name)
        for got, want in zip(got_grads or (), grads, strict=False):
            torch.testing.assert_close(got, want, msg=name)
    if mask is not None:  # the empty row: zero context, weights and gradient on every path
        for got_context, got_weights, got_grads in results.values():
            assert (got_context[0, 0, -1] == 0).all() and not got_context.isnan().any()
            assert got_weights is None or (got_weights[0, 0, -1] == 0).all()
            if got_grads is not None:
                assert (got_grads[0][0, 0, -1] == 0).all()


def test_autograd_weights_path_passes_gradcheck():
    g = torch.Generator().manual_seed(1)
    inputs = tuple(torch.randn(2, 2, 3, 4, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(3))
    mask = torch.rand(2, 1, 3, 3, generator=g) > 0.5
    mask[0, 0, 1] = False  # an empty row

    def both(q, k, v):
        context, weights = scaled_dot_product_attention(q, k, v, mask, need_weights=True)
        return context, weights

    assert torch.autograd.gradcheck(both, inputs)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_weights_follow_the_float32_formula(dtype):
    q, k, v, mask = _inputs("key padding", dtype=torch.float32)
    expected_context, expected_weights = _reference(q, k, v, mask, None)
    half = [t.to(dtype).requires_grad_() for t in (q, k, v)]
    context, weights = scaled_dot_product_attention(*half, mask, need_weights=True)
    assert weights.dtype == dtype and context.dtype == dtype
    torch.testing.assert_close(weights.float(), expected_weights, atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(context.float(), expected_context, atol=3e-2, rtol=3e-2)
    context.float().sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in half)
    assert (weights[1] == 0).all() and (half[0].grad[1] == 0).all()
