"""Multi-head attention: parity with nn.MultiheadAttention, fast path == generic path, KV cache == recomputation."""

import pytest
import torch
from torch import nn

from attnkit import KVCache, MultiHeadAttention, RotaryPositions, masks, multihead_fast
from attnkit.functional.sdpa import scaled_dot_product_attention


def key_padding(lengths, t):
    return masks.lengths_to_mask(torch.tensor(lengths), t)


@pytest.mark.parametrize(("kdim", "vdim", "bias"), [(None, None, True), (6, 5, True), (None, None, False)])
def test_from_torch_matches_nn_multihead_attention_with_key_padding(kdim, vdim, bias):
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(16, 4, kdim=kdim, vdim=vdim, bias=bias, batch_first=True).eval()
    ours = MultiHeadAttention.from_torch(theirs).eval()
    query = torch.randn(3, 5, 16)
    key = torch.randn(3, 7, kdim or 16)
    value = torch.randn(3, 7, vdim or 16)
    key_mask = key_padding([7, 4, 1], 7)
    expected, expected_weights = theirs(query, key, value, key_padding_mask=~key_mask)  # averaged over heads
    out = ours(query, key, value, key_mask=key_mask)  # attnkit's keyword on the drop-in: attnkit's polarity
    torch.testing.assert_close(out.context, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.weights, expected_weights, atol=1e-5, rtol=1e-5)


def test_from_torch_self_attention_with_causal_mask_matches():
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(16, 4, batch_first=True).eval()
    ours = MultiHeadAttention.from_torch(theirs).eval()
    x = torch.randn(2, 6, 16)
    expected, _ = theirs(x, x, x, attn_mask=~masks.causal(6))  # torch: True = blocked
    torch.testing.assert_close(ours(x, causal=True).context, expected, atol=1e-5, rtol=1e-5)


def test_from_torch_refuses_what_it_cannot_copy():
    with pytest.raises(ValueError, match="add_bias_kv"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, add_bias_kv=True))


def _fast_and_generic(seed=0, **kwargs):
    torch.manual_seed(seed)
    fast = MultiHeadAttention(16, 4, **kwargs)
    generic = MultiHeadAttention(16, 4, **kwargs)
    generic.load_state_dict(fast.state_dict())
    generic.fast_path = False
    assert fast.fast_path
    return fast, generic


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_path_equals_generic_path_in_values_and_gradients(need_weights, causal):
    fast, generic = _fast_and_generic()
    x = torch.randn(3, 6, 16)
    key_mask = key_padding([6, 3, 1], 6)
    x_fast, x_generic = x.clone().requires_grad_(), x.clone().requires_grad_()
    out_fast = fast(x_fast, key_mask=key_mask, causal=causal, need_weights=need_weights)
    out_generic = generic(x_generic, key_mask=key_mask, causal=causal, need_weights=True)
    torch.testing.assert_close(out_fast.context, out_generic.context, atol=1e-5, rtol=1e-5)
    if need_weights:
        torch.testing.assert_close(out_fast.weights, out_generic.weights, atol=1e-6, rtol=1e-5)
    upstream = torch.randn_like(out_fast.context)
    (out_fast.context * upstream).sum().backward()
    (out_generic.context * upstream).sum().backward()
    torch.testing.assert_close(x_fast.grad, x_generic.grad, atol=1e-5, rtol=1e-4)
    for (name, p_fast), p_generic in zip(fast.named_parameters(), generic.parameters(), strict=True):
        torch.testing.assert_close(p_fast.grad, p_generic.grad, atol=1e-5, rtol=1e-4, msg=name)


def test_inference_weights_path_equals_the_autograd_formula():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 5, 7, 8) for _ in range(3))  # 10 heads: more than one block of 4
    mask = torch.rand(2, 1, 7, 7) > 0.3
    mask[0, 0, 3] = False  # an empty row
    with torch.no_grad():
        context, weights = scaled_dot_product_attention(q, k, v, mask, need_weights=True)
    q.requires_grad_()
    ref_context, ref_weights = scaled_dot_product_attention(q, k, v, mask, need_weights=True)
    torch.testing.assert_close(weights, ref_weights)
    torch.testing.assert_close(context, ref_context)
    assert (weights[0, :, 3] == 0).all() and (context[0, :, 3] == 0).all()


@pytest.mark.parametrize("mask_kind", ["none", "key padding", "full"])
@pytest.mark.parametrize("shape", [(1, 3, 5, 4, 8), (2, 3, 9, 6, 4)])  # odd head counts: a last, partial block
def test_inference_weights_path_equals_the_readable_formula(mask_kind, shape):
    from attnkit.functional import masked_softmax

    batch, heads, tq, tk, dh = shape
    g = torch.Generator().manual_seed(1)
    q = torch.randn(batch, heads, tq, dh, generator=g)
    k, v = torch.randn(batch, heads, tk, dh, generator=g), torch.randn(batch, heads, tk, dh, generator=g)
    mask = {
        "none": None,
        "key padding": torch.arange(tk) < torch.tensor([tk, 2])[:batch, None, None, None],  # [B, 1, 1, Tk]
        "full": torch.rand(batch, heads, tq, tk, generator=g) > 0.4,
    }[mask_kind]
    with torch.no_grad():
        context, weights = scaled_dot_product_attention(q, k, v, mask, need_weights=True)
    expected = masked_softmax((q @ k.transpose(-1, -2)) * dh**-0.5, mask)
    torch.testing.assert_close(weights, expected, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(context, expected @ v, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("need_weights", [False, True])
def test_fully_masked_rows_give_zero_context_and_gradient_without_nan(dtype, need_weights):
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).to(dtype)
    x = torch.randn(2, 5, 16, dtype=dtype, requires_grad=True)
    key_mask = key_padding([5, 0], 5)  # the second sequence has no key at all
    out = mha(x, key_mask=key_mask, need_weights=need_weights)
    assert torch.isfinite(out.context).all()
    # zero context before the output projection: what is left is its bias
    torch.testing.assert_close(out.context[1], mha.out_proj.bias.expand(5, 16))
    out.context.float().sum().backward()
    assert torch.isfinite(x.grad).all()
    assert (x.grad[1] == 0).all()
    if need_weights:
        assert (out.weights[1] == 0).all()


@pytest.mark.parametrize("rotary", [False, True])
def test_kv_cache_decoding_equals_full_recomputation(rotary):
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, rotary=RotaryPositions(4) if rotary else None).eval()
    x = torch.randn(2, 9, 16)
    full = mha(x, causal=True, need_weights=True)
    cache = KVCache(2, 9, 4, 4)
    # a 3-step prompt, then one step at a time
    steps = [mha(x[:, :3], causal=True, cache=cache, need_weights=True)]
    steps += [mha(x[:, t : t + 1], causal=True, cache=cache, need_weights=True) for t in range(3, 9)]
    incremental = torch.cat([s.context for s in steps], dim=1)
    torch.testing.assert_close(incremental, full.context, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(steps[-1].weights[:, :, 0], full.weights[:, :, -1], atol=1e-6, rtol=1e-5)
    assert cache.size == 9


@pytest.mark.parametrize("variant", ["fast", "rotary", "generic", "training"])
def test_one_token_decoding_methods_equal_forward(variant):
    """decode_self / decode_cross give forward's values, on the lean path and on the fallbacks to forward."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, rotary=RotaryPositions(4) if variant == "rotary" else None).eval()
    if variant == "generic":
        mha.fast_path = False  # the readable score + distribution path
    x, memory = torch.randn(3, 6, 16), torch.randn(3, 5, 16)
    memory_mask = key_padding([5, 2, 0], 5)  # the last row has no real key: zeros, not NaN
    key_value = mha.project_key_value(memory)
    lean_cache, reference_cache = KVCache(3, 6, 4, 4), KVCache(3, 6, 4, 4)
    with torch.no_grad():
        if variant == "training":
            mha.train()  # dropout is 0: forward's values still, through forward itself
        for t in range(6):
            got = mha.decode_self(x[:, t], lean_cache)
            want = mha(x[:, t : t + 1], causal=True, cache=reference_cache).context[:, 0]
            torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-6)
            if variant == "rotary":  # rotary keys are self-attention's: cross-attention refuses, as forward does
                with pytest.raises(ValueError, match="this module rotates keys"):
                    mha.decode_cross(x[:, t], key_value, memory_mask)
                continue
            got = mha.decode_cross(x[:, t], key_value, memory_mask)
            want = mha(x[:, t : t + 1], key_value=key_value, key_mask=memory_mask).context[:, 0]
            torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-6)
            assert torch.isfinite(got).all() and (got[2] == mha.out_proj.bias).all()
    torch.testing.assert_close(lean_cache.keys, reference_cache.keys, atol=1e-6, rtol=1e-6)
    assert lean_cache.size == reference_cache.size == 6


def test_rotary_scores_depend_on_relative_position_only():
    torch.manual_seed(0)
    rotary = RotaryPositions(8)
    q, k = torch.randn(1, 1, 1, 8), torch.randn(1, 1, 1, 8)
    near = rotary(q, offset=5) @ rotary(k, offset=3).transpose(-1, -2)
    far = rotary(q, offset=105) @ rotary(k, offset=103).transpose(-1, -2)
    torch.testing.assert_close(near, far, atol=1e-4, rtol=1e-4)


def test_kv_cache_update_reset_reorder_and_overflow():
    cache = KVCache(2, 3, 1, 2)
    k = torch.arange(8.0).view(2, 1, 2, 2)
    held_k, held_v = cache.update(k, -k)
    assert held_k.shape == (2, 1, 2, 2) and torch.equal(held_v, -k)
    cache.reorder(torch.tensor([1, 1]))
    assert torch.equal(cache.keys[0, :, :2], k[1])
    with pytest.raises(ValueError, match=r"overflow.*holding 2.*adding 2.*capacity 3"):
        cache.update(k, k)
    with pytest.raises(ValueError, match=r"\[B, H, T, Dh\]"):
        cache.update(torch.zeros(2, 2, 1, 2), torch.zeros(2, 2, 1, 2))
    cache.reset()
    assert cache.size == 0
    assert cache.update(k[:, :, :1], k[:, :, :1])[0].shape == (2, 1, 1, 2)


def test_multihead_errors_name_the_problem():
    mha = MultiHeadAttention(16, 4)
    with pytest.raises(ValueError, match=r"query must have shape \[B, Tq, E=16\]"):
        mha(torch.randn(2, 3, 8))
    with pytest.raises(ValueError, match="cache= is for self-attention"):
        mha(torch.randn(1, 1, 16), torch.randn(1, 2, 16), cache=KVCache(1, 4, 4, 4))
    with pytest.raises(ValueError, match="not divisible"):
        MultiHeadAttention(10, 4)
    with pytest.raises(ValueError, match="key_mask"):
        mha(torch.randn(2, 3, 16), key_mask=torch.ones(2, 3))


@pytest.mark.parametrize("fast_path", [True, False])
def test_precomputed_key_value_equals_cross_attention(fast_path):
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, kdim=6, vdim=6).eval()
    mha.fast_path = fast_path
    query, memory = torch.randn(2, 3, 16), torch.randn(2, 5, 6)
    key_mask = key_padding([5, 2], 5)
    expected = mha(query, memory, key_mask=key_mask, need_weights=True)
    projected = mha.project_key_value(memory)
    assert projected[0].shape == (2, 4, 5, 4)
    out = mha(query, key_value=projected, key_mask=key_mask, need_weights=True)
    torch.testing.assert_close(out.context, expected.context)
    torch.testing.assert_close(out.weights, expected.weights)
    with pytest.raises(ValueError, match="key_value= replaces key"):
        mha(query, memory, key_value=projected)


@pytest.mark.parametrize("causal", [False, True])
def test_query_mask_packs_rows_and_zeroes_padded_queries_in_values_and_gradients(causal):
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).eval()
    x = torch.randn(3, 6, 16)
    mask = key_padding([6, 3, 1], 6)
    x_packed, x_plain = x.clone().requires_grad_(), x.clone().requires_grad_()
    packed = mha(x_packed, key_mask=mask, query_mask=mask, causal=causal, need_weights=True)
    plain = mha(x_plain, key_mask=mask, causal=causal, need_weights=True)
    keep = mask[..., None]
    torch.testing.assert_close(packed.context, plain.context * keep, atol=1e-6, rtol=1e-5)
    assert (packed.context[~mask] == 0).all() and (packed.weights.transpose(1, 2)[~mask] == 0).all()
    upstream = torch.randn_like(packed.context)
    (packed.context * upstream).sum().backward()
    (plain.context * upstream * keep).sum().backward()
    torch.testing.assert_close(x_packed.grad, x_plain.grad, atol=1e-6, rtol=1e-5)
    assert (x_packed.grad[~mask] == 0).all()


def test_gather_rows_gradcheck_float64():
    from attnkit.functional.packed_linear import gather_rows

    x = torch.randn(6, 3, dtype=torch.float64, requires_grad=True)
    index = torch.tensor([4, 0, 2])
    assert torch.autograd.gradcheck(lambda t: gather_rows(t, index), (x,))
    torch.testing.assert_close(gather_rows(x, index), x[index])


# ------------------------------------------------------------------ packed projections (one storage for q, k, v)


def _reference_of(mha: MultiHeadAttention) -> MultiHeadAttention:
    """The same weights on the readable path: three nn.Linear calls on every row, score and softmax."""
    reference = MultiHeadAttention(mha.embed_dim, mha.num_heads, bias=mha.q_proj.bias is not None)
    reference.load_state_dict(mha.state_dict())
    reference.fast_path = False
    return reference


def _is_packed(mha: MultiHeadAttention) -> bool:
    from attnkit.functional.packed_linear import packed_view

    projections = (mha.q_proj, mha.k_proj, mha.v_proj)
    packed = packed_view([p.weight for p in projections])
    bias_ok = mha.q_proj.bias is None or packed_view([p.bias for p in projections]) is not None
    return packed is not None and bias_ok


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("masking", ["none", "key", "query", "same", "different"])
def test_fused_projections_equal_the_readable_reference_in_values_and_gradients(masking, need_weights, causal, bias):
    torch.manual_seed(0)
    fused = MultiHeadAttention(16, 4, bias=bias)
    reference = _reference_of(fused)
    x = torch.randn(3, 6, 16)
    key_mask = key_padding([6, 3, 1], 6)
    query_mask = {"query": key_mask, "same": key_mask.clone(), "different": key_padding([5, 6, 2], 6)}.get(masking)
    key_mask = key_mask if masking in ("key", "same", "different") else None
    outputs = []
    for mha in (fused, reference):
        xi = x.clone().requires_grad_()
        out = mha(xi, key_mask=key_mask, query_mask=query_mask, causal=causal, need_weights=need_weights)
        upstream = torch.linspace(-1, 1, out.context.numel()).view_as(out.context)
        (out.context * upstream).sum().backward()
        outputs.append((out, xi.grad))
    (out_f, grad_f), (out_r, grad_r) = outputs
    assert _is_packed(fused) and not _is_packed(reference)  # packed on first use, by the fast path only
    torch.testing.assert_close(out_f.context, out_r.context, atol=1e-5, rtol=1e-5)
    if need_weights:
        torch.testing.assert_close(out_f.weights, out_r.weights, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(grad_f, grad_r, atol=1e-5, rtol=1e-4)
    for (name, p_f), p_r in zip(fused.named_parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(p_f.grad, p_r.grad, atol=1e-5, rtol=1e-4, msg=name)


@pytest.mark.parametrize("causal", [False, True])
def test_one_shared_mask_runs_packed_and_equals_the_padded_path_in_values_and_gradients(causal, monkeypatch):
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4)
    reference = _reference_of(mha)  # the padded path: masks in the kernel, every row projected
    x = torch.randn(4, 7, 16)
    rows = [[1, 1, 1, 1, 1, 1, 1], [0, 1, 1, 0, 1, 0, 0], [0] * 7, [1, 0, 0, 0, 0, 0, 1]]
    mask = torch.tensor(rows, dtype=torch.bool)  # not prefixes; one sequence is all padding
    lengths_seen = []
    original = multihead_fast.forward_packed_fused

    def spy(module, packed, lengths, causal):
        lengths_seen.append(list(lengths))
        return original(module, packed, lengths, causal)

    monkeypatch.setattr(multihead_fast, "forward_packed_fused", spy)
    results = []
    for module in (mha, reference):
        xi = x.clone().requires_grad_()
        out = module(xi, key_mask=mask, query_mask=mask.clone(), causal=causal).context
        upstream = torch.linspace(-1, 1, out.numel()).view_as(out)
        (out * upstream).sum().backward()
        results.append((out, xi.grad))
    assert lengths_seen == [[7, 3, 0, 2]]  # the fused module packed; the reference did not
    (out, grad), (expected, expected_grad) = results
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    assert (out[~mask] == 0).all() and (grad[~mask] == 0).all()
    torch.testing.assert_close(grad, expected_grad, atol=1e-5, rtol=1e-4)
    for (name, p_f), p_r in zip(mha.named_parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(p_f.grad, p_r.grad, atol=1e-5, rtol=1e-4, msg=name)


def test_forward_packed_checks_its_inputs():
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match=r"x must have shape \[N, E=8\]"):
        mha.forward_packed(torch.randn(2, 3, 8), [3, 3])
    with pytest.raises(ValueError, match="sum to N=5"):
        mha.forward_packed(torch.randn(5, 8), [2, 2])
    assert mha.forward_packed(torch.randn(0, 8), [0, 0]).shape == (0, 8)


def test_packed_projections_keep_state_dict_keys_and_follow_optimizer_steps_and_loads():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4)
    assert list(mha.state_dict()) == [
        f"{p}.{w}" for p in ("q_proj", "k_proj", "v_proj", "out_proj") for w in ("weight", "bias")
    ]
    x = torch.randn(2, 5, 16)
    optimizer = torch.optim.SGD(mha.parameters(), lr=0.5)
    mha(x).context.square().sum().backward()  # packed on first use
    assert _is_packed(mha)
    optimizer.step()  # in place: the packed storage sees the new values
    assert _is_packed(mha)
    torch.testing.assert_close(mha(x).context, _reference_of(mha)(x).context)
    # a load (copying in place, or assigning new tensors) changes what the fused path computes
    other = MultiHeadAttention(16, 4)
    for assign in (False, True):
        mha.load_state_dict(other.state_dict(), assign=assign)
        torch.testing.assert_close(mha(x).context, other(x).context)
        assert _is_packed(mha)  # packed again by the first call after the load
    mha.load_state_dict({k: v.clone() for k, v in other.state_dict().items()}, assign=True)
    torch.testing.assert_close(mha(x).context, other(x).context)
    assert _is_packed(mha)


def test_packing_survives_dtype_moves_copies_and_pickling_and_optimizers_keep_their_parameters():
    import copy
    import io

    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4)
    params = list(mha.parameters())
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    mha(x.float())
    mha.double()
    expected = _reference_of(mha).double()(x).context
    torch.testing.assert_close(mha(x).context, expected)
    assert _is_packed(mha) and all(a is b for a, b in zip(params, mha.parameters(), strict=True))
    buffer = io.BytesIO()
    torch.save(mha, buffer)
    buffer.seek(0)
    for clone in (copy.deepcopy(mha), torch.load(buffer, weights_only=False)):
        torch.testing.assert_close(clone(x).context, expected)
        assert _is_packed(clone)
        clone.q_proj.weight.data.add_(1.0)  # a copy owns its storage
        torch.testing.assert_close(mha(x).context, expected)
        assert not torch.equal(clone(x).context, expected)  # and its cached views follow its own storage


def test_packing_on_first_use_in_inference_mode_leaves_ordinary_parameters():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).double()  # new storage: unpacked until the next call
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    with torch.inference_mode():
        expected = mha(x).context.clone()
    assert _is_packed(mha) and not any(p.is_inference() for p in mha.parameters())
    out = mha(x).context  # training after inference: parameters can be saved for backward
    out.sum().backward()
    torch.testing.assert_close(out, expected)
    assert mha.q_proj.weight.grad is not None


def test_parameters_that_cannot_be_packed_fall_back_to_concatenation():
    from torch.nn.utils import parametrize

    class Doubled(nn.Module):
        def forward(self, weight: torch.Tensor) -> torch.Tensor:
            return weight * 2

    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4)
    reference = _reference_of(mha)
    for module in (mha, reference):
        parametrize.register_parametrization(module.k_proj, "weight", Doubled())  # computed: not a Parameter
    x = torch.randn(2, 5, 16, requires_grad=True)
    torch.testing.assert_close(mha(x).context, reference(x).context)
    assert not _is_packed(mha)
    mha(x).context.sum().backward()
    assert mha.k_proj.parametrizations.weight.original.grad is not None


@pytest.mark.parametrize("bias", [True, False])
def test_packed_linear_gradcheck_float64(bias):
    from attnkit.functional.packed_linear import packed_linear, packed_view

    torch.manual_seed(0)
    storage = torch.randn(3 * 4 * 3 + 3 * 4, dtype=torch.float64)
    weights = [storage[i * 12 : (i + 1) * 12].view(4, 3).detach().requires_grad_() for i in range(3)]
    biases = [storage[36 + i * 4 : 36 + (i + 1) * 4].detach().requires_grad_() for i in range(3)] if bias else None
    assert packed_view(weights) is not None  # leaves that share one storage
    x = torch.randn(2, 5, 3, dtype=torch.float64, requires_grad=True)

    def fn(x, *params):
        return packed_linear(x, params[:3], params[3:] or None)

    assert torch.autograd.gradcheck(fn, (x, *weights, *(biases or ())))
    expected = torch.nn.functional.linear(x, torch.cat(weights), None if biases is None else torch.cat(biases))
    torch.testing.assert_close(fn(x, *weights, *(biases or ())), expected)


def test_packed_linear_detects_in_place_changes_before_backward():
    from attnkit.functional.packed_linear import packed_linear

    mha = MultiHeadAttention(8, 2)
    mha.pack_projections()
    x = torch.randn(2, 3, 8, requires_grad=True)
    projections = (mha.q_proj, mha.k_proj, mha.v_proj)
    assert _is_packed(mha)
    out = packed_linear(x, [p.weight for p in projections], [p.bias for p in projections])
    with torch.no_grad():
        mha.v_proj.weight.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
