"""Masks keep their guarantees under autocast and on any device, without host round-trips.

* under ``torch.autocast("cpu", dtype=torch.bfloat16)``: masked weights are exactly 0; a fully masked row gives zero
  weights, zero context and zero gradient, with no NaN (Attention, AttentionPooling, MultiHeadAttention);
* branch-free: ``masked_softmax`` and the SDPA guard trace into one graph (``fullgraph=True`` fails on any
  ``bool(tensor)``), i.e. no device synchronisation per call;
* device-agnostic: with the default device set to ``meta``, a tensor created without ``device=`` would land there
  and break the call; parity tests also run on CUDA when there is one (skipped here, with the reason).
"""

import pytest
import torch
from _factories import DISTRIBUTIONS, SCORES
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from attnkit import Attention, AttentionPooling, MultiHeadAttention, masks
from attnkit.functional import masked_softmax
from attnkit.functional.sdpa import scaled_dot_product_attention

CUDA = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="CUDA not available: the cuda variant runs on a machine with a GPU"
)
DEVICES = ["cpu", pytest.param("cuda", marks=CUDA)]


def bf16():
    return torch.autocast("cpu", dtype=torch.bfloat16)


def _mask(lengths, t):
    return masks.lengths_to_mask(torch.tensor(lengths), t)


# ------------------------------------------------------------------------------------------- autocast bf16
@pytest.mark.parametrize("distribution", list(DISTRIBUTIONS))
@pytest.mark.parametrize("score", ["scaled-dot", "general", "additive"])
def test_attention_under_bf16_autocast_zeroes_masked_keys_and_empty_rows(score, distribution):
    torch.manual_seed(0)
    attention = Attention(SCORES[score](8), DISTRIBUTIONS[distribution](8))
    query = torch.randn(3, 4, 8, requires_grad=True)
    key = torch.randn(3, 5, 8, requires_grad=True)
    key_mask = _mask([5, 2, 0], 5)  # the last row has no key at all
    with bf16():
        out = attention(query, key, key_mask=key_mask)
    assert torch.isfinite(out.context).all() and torch.isfinite(out.weights).all()
    assert (out.weights[1, :, 2:] == 0).all()  # masked keys: exactly 0
    assert (out.weights[2] == 0).all() and (out.context[2] == 0).all()  # fully masked rows
    out.context.float().sum().backward()
    assert torch.isfinite(query.grad).all() and torch.isfinite(key.grad).all()
    assert (query.grad[2] == 0).all() and (key.grad[2] == 0).all() and (key.grad[1, 2:] == 0).all()


@pytest.mark.parametrize("heads", [1, 3])
def test_attention_pooling_under_bf16_autocast_zeroes_padding_and_empty_sequences(heads):
    torch.manual_seed(0)
    pooling = AttentionPooling(8, heads=heads)
    x = torch.randn(3, 5, 8, requires_grad=True)
    mask = _mask([5, 2, 0], 5)
    with bf16():
        out = pooling(x, mask)
    assert torch.isfinite(out.context).all() and torch.isfinite(out.weights).all()
    assert (out.weights[1, :, 2:] == 0).all()
    assert (out.weights[2] == 0).all() and (out.context[2] == 0).all()
    out.context.float().sum().backward()
    assert torch.isfinite(x.grad).all()
    assert (x.grad[2] == 0).all() and (x.grad[1, 2:] == 0).all()
    assert all(torch.isfinite(p.grad).all() for p in pooling.parameters())


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("fast_path", [True, False])
@pytest.mark.parametrize("query_mask", [False, True])
def test_multihead_under_bf16_autocast_zeroes_masked_keys_and_empty_rows(fast_path, need_weights, query_mask):
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, bias=False)  # no output bias: a zero context gives a zero output
    mha.fast_path = fast_path
    x = torch.randn(3, 5, 16, requires_grad=True)
    key_mask = _mask([5, 2, 0], 5)
    with bf16():
        out = mha(x, key_mask=key_mask, query_mask=key_mask if query_mask else None, need_weights=need_weights)
    assert torch.isfinite(out.context).all()
    assert (out.context[2] == 0).all()
    if need_weights:
        assert torch.isfinite(out.weights).all()
        assert (out.weights[1, :, :, 2:] == 0).all() and (out.weights[2] == 0).all()
    out.context.float().square().sum().backward()
    assert torch.isfinite(x.grad).all() and (x.grad[2] == 0).all()
    assert all(torch.isfinite(p.grad).all() for p in mha.parameters())


def test_multihead_cross_attention_under_bf16_autocast_with_precomputed_keys():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, bias=False).eval()
    query, memory = torch.randn(3, 2, 16), torch.randn(3, 5, 16)
    key_mask = _mask([5, 2, 0], 5)
    with bf16():
        key_value = mha.project_key_value(memory)
        out = mha(query, key_value=key_value, key_mask=key_mask, need_weights=True)
        one = mha.decode_cross(query[:, 0], key_value, key_mask)
    assert (out.weights[1, :, :, 2:] == 0).all() and (out.weights[2] == 0).all() and (out.context[2] == 0).all()
    assert torch.isfinite(one).all() and (one[2] == 0).all()
    torch.testing.assert_close(one.float(), out.context[:, 0].float(), atol=2e-2, rtol=2e-2)


# ------------------------------------------------------------------------------------------- branch-free
def test_masked_softmax_and_sdpa_guard_need_no_host_round_trip():
    scores = torch.randn(2, 3, 4)
    mask = torch.rand(2, 3, 4) > 0.5
    mask[1, 2] = False  # an empty row
    q, k, v = torch.randn(2, 2, 3, 8), torch.randn(2, 2, 4, 8), torch.randn(2, 2, 4, 8)  # Tq 3, Tk 4
    sdpa_mask = mask[:, None]  # [B, 1, Tq, Tk]
    for fn, args in (
        (masked_softmax, (scores, mask)),
        (lambda *a: scaled_dot_product_attention(*a)[0], (q, k, v, sdpa_mask)),
        (lambda *a: scaled_dot_product_attention(*a, need_weights=True)[1], (q, k, v, sdpa_mask)),
    ):
        torch._dynamo.reset()
        compiled = torch.compile(fn, fullgraph=True, backend="eager")  # a bool(tensor) would break the graph
        torch.testing.assert_close(compiled(*args), fn(*args))
    assert (masked_softmax(scores, mask)[1, 2] == 0).all()


# ------------------------------------------------------------------------------------------- devices
def test_nothing_is_created_on_the_default_device():
    """With the default device set to ``meta``, any tensor made without ``device=`` would be a meta tensor and the
    call would fail or return meta: every path of Attention, AttentionPooling and MultiHeadAttention passes."""
    torch.manual_seed(0)
    mha, attention, pooling = MultiHeadAttention(16, 4), Attention(SCORES["scaled-dot"](16)), AttentionPooling(16)
    x, memory = torch.randn(3, 5, 16), torch.randn(3, 4, 16)
    key_mask, causal, additive = _mask([5, 2, 0], 5), masks.causal(5), torch.zeros(5, 5)  # the test's own: on CPU
    calls = [
        lambda: mha(x, key_mask=key_mask, causal=True, need_weights=True).context,
        lambda: mha(x, key_mask=key_mask, query_mask=key_mask).context,
        lambda: mha(x, memory, key_mask=key_mask[:, :4], attn_mask=causal[:, :4]).context,
        lambda: mha.forward_torch(x, x, x, key_padding_mask=~key_mask, attn_mask=additive)[0],
        lambda: attention(x, x, key_mask=key_mask, attn_mask=causal).context,
        lambda: pooling(x, key_mask).context,
    ]
    for fast_path in (True, False):
        mha.fast_path = fast_path
        for call in calls:
            expected = call()
            with torch.device("meta"):
                out = call()
            assert out.device.type == "cpu"
            torch.testing.assert_close(out, expected)


@pytest.mark.parametrize("device", DEVICES)
def test_multihead_matches_nn_multihead_attention_on_device(device):
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(16, 4, batch_first=True).to(device).eval()
    ours = MultiHeadAttention.from_torch(theirs).eval()
    x = torch.randn(3, 6, 16, device=device)
    padding = ~masks.lengths_to_mask(torch.tensor([6, 4, 1], device=device), 6)
    expected, expected_weights = theirs(x, x, x, key_padding_mask=padding)
    for fast_path in (True, False):
        ours.fast_path = fast_path
        out = ours(x, x, x, key_padding_mask=padding)
        assert out.context.device == x.device
        torch.testing.assert_close(out.context, expected, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(out.weights, expected_weights, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_multihead_fast_path_equals_reference_in_values_and_gradients_on_device(device):
    torch.manual_seed(0)
    fast = MultiHeadAttention(16, 4).to(device)
    reference = MultiHeadAttention(16, 4).to(device)
    reference.load_state_dict(fast.state_dict())
    reference.fast_path = False
    x = torch.randn(3, 6, 16, device=device)
    key_mask = masks.lengths_to_mask(torch.tensor([6, 3, 0], device=device), 6)
    results = []
    for module in (fast, reference):
        inputs = x.clone().requires_grad_()
        out = module(inputs, key_mask=key_mask, query_mask=key_mask, causal=True)
        out.context.square().sum().backward()
        results.append((out.context, inputs.grad))
    torch.testing.assert_close(results[0][0], results[1][0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(results[0][1], results[1][1], atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_attention_equals_sdpa_on_device(device):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 8, device=device) for _ in range(3))
    key_mask = masks.lengths_to_mask(torch.tensor([5, 2], device=device), 5)
    attention = Attention(SCORES["scaled-dot"](8))
    out = attention(q, k, v, key_mask=key_mask)  # [B, H, Tq, D] inputs, key_mask [B, Tk]
    context, weights = scaled_dot_product_attention(q, k, v, key_mask[:, None, None, :], need_weights=True)
    torch.testing.assert_close(out.context, context, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.weights, weights, atol=1e-6, rtol=1e-5)


@settings(max_examples=40, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 6), min_size=1, max_size=4),
    queries=st.integers(1, 3),
    dtype=st.sampled_from([torch.float32, torch.float64]),
)
def test_masked_softmax_cpu_shortcut_equals_the_branch_free_formula(lengths, queries, dtype):
    """Eager on the CPU, a batch without empty rows skips the stand-in and the zeroing pass: the weights and the
    gradients must be those of the branch-free formula every other device (and torch.compile) runs."""
    import attnkit.functional._common as common

    def branch_free(scores, mask):
        free, common.host_reads_are_free = common.host_reads_are_free, lambda t: False
        try:
            return masked_softmax(scores, mask)
        finally:
            common.host_reads_are_free = free

    mask = masks.lengths_to_mask(torch.tensor(lengths), 6)[:, None, :].expand(-1, queries, -1)  # [B, Tq, Tk]
    scores = torch.randn(len(lengths), queries, 6, dtype=dtype, requires_grad=True)
    upstream = torch.randn(len(lengths), queries, 6, dtype=dtype)
    ours = masked_softmax(scores, mask)
    (grad_ours,) = torch.autograd.grad((ours * upstream).sum(), scores)
    reference = branch_free(scores, mask)
    (grad_reference,) = torch.autograd.grad((reference * upstream).sum(), scores)
    torch.testing.assert_close(ours, reference, rtol=0, atol=0)
    torch.testing.assert_close(grad_ours, grad_reference, rtol=0, atol=0)
    assert (ours[~mask] == 0).all() and (grad_ours[~mask] == 0).all()


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_sdpa_cpu_shortcut_equals_the_branch_free_guard(monkeypatch, need_weights, requires_grad):
    """Eager on the CPU, a mask without empty rows skips the SDPA guard: context, weights and gradients must be
    those of the branch-free guard that accelerators and torch.compile run (forced here by monkeypatching)."""
    import attnkit.functional._common as common

    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 2, 5, 8, dtype=torch.float64, requires_grad=requires_grad) for _ in range(3))
    mask = _mask([6, 3], 6)[:, None, None, :5].expand(2, 1, 5, 5)  # [B, 1, Tq, Tk], every row keeps a key

    def run():
        context, weights = scaled_dot_product_attention(q, k, v, mask, need_weights=need_weights)
        grads = torch.autograd.grad(context.sum(), (q, k, v)) if requires_grad else ()
        return context, weights, grads

    shortcut = run()
    monkeypatch.setattr(common, "host_reads_are_free", lambda t: False)
    guarded = run()
    torch.testing.assert_close(shortcut[0], guarded[0], rtol=0, atol=1e-12)
    if need_weights:
        torch.testing.assert_close(shortcut[1], guarded[1], rtol=0, atol=1e-12)
    for ours, theirs in zip(shortcut[2], guarded[2], strict=True):
        torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-12)
