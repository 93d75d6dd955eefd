"""MultiHeadAttention.from_torch returns a true drop-in for nn.MultiheadAttention: torch's call with torch's polarity
for torch's names, its layouts and return values, and a replacement inside nn.TransformerEncoderLayer /
nn.TransformerDecoderLayer (fused inference path included) with torch's outputs."""

import copy

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from attnkit import AttentionOutput, MultiHeadAttention, masks

E, H = 16, 4


def _pair(batch_first=True, kdim=None, vdim=None, bias=True, seed=0):
    torch.manual_seed(seed)
    theirs = nn.MultiheadAttention(E, H, kdim=kdim, vdim=vdim, bias=bias, batch_first=batch_first).eval()
    return theirs, MultiHeadAttention.from_torch(theirs)


def _masks(kind, batch, tq, tk, generator):
    """(key_padding_mask, attn_mask, is_causal) in torch's convention; every query keeps key 0."""
    blocked = torch.rand(tq, tk, generator=generator) > 0.6
    blocked[:, 0] = False
    padding = torch.arange(tk)[None] >= torch.tensor([tk, tk - 2, 1][:batch])[:, None]  # True = padding
    per_head = torch.rand(batch * H, tq, tk, generator=generator) > 0.5
    per_head[:, :, 0] = False
    additive = torch.randn(tq, tk, generator=generator).masked_fill(blocked, float("-inf"))
    float_padding = torch.zeros(batch, tk).masked_fill(padding, float("-inf"))
    causal = torch.ones(tq, tk, dtype=torch.bool).triu(1)  # torch: True above the diagonal = not allowed
    return {
        "none": (None, None, False),
        "key_padding_mask": (padding, None, False),
        "float key_padding_mask": (float_padding, None, False),
        "bool attn_mask": (None, blocked, False),
        "bool attn_mask per head": (None, per_head, False),
        "float attn_mask": (None, additive, False),
        "both": (padding, blocked, False),
        "float attn_mask + padding": (padding, additive, False),
        "causal hint": (None, causal, True),
    }[kind]


KINDS = [
    "none",
    "key_padding_mask",
    "float key_padding_mask",
    "bool attn_mask",
    "bool attn_mask per head",
    "float attn_mask",
    "both",
    "float attn_mask + padding",
    "causal hint",
]


def _inputs(batch_first, cross, generator, batch=3, tq=5):
    tk = 6 if cross else tq
    query = torch.randn(batch, tq, E, generator=generator)
    key = torch.randn(batch, tk, 6, generator=generator) if cross else query
    value = torch.randn(batch, tk, 5, generator=generator) if cross else query
    if not batch_first:
        query, key, value = (t.transpose(0, 1).contiguous() for t in (query, key, value))
        if not cross:
            key = value = query
    return query, key, value, tk


@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")  # torch's, for bool + float masks
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("cross", [False, True])
@pytest.mark.parametrize("average", [True, False])
def test_every_call_equals_nn_multihead_attention(kind, batch_first, cross, average):
    theirs, ours = _pair(batch_first, kdim=6 if cross else None, vdim=5 if cross else None)
    generator = torch.Generator().manual_seed(1)
    query, key, value, tk = _inputs(batch_first, cross, generator)
    if cross and kind == "causal hint":
        pytest.skip("the causal hint needs a square mask: self-attention only")
    key_padding_mask, attn_mask, is_causal = _masks(kind, 3, 5, tk, generator)
    call = dict(key_padding_mask=key_padding_mask, attn_mask=attn_mask, is_causal=is_causal)
    for fast_path in (True, False):
        ours.fast_path = fast_path
        expected = theirs(query, key, value, **call, average_attn_weights=average)
        got = ours(query, key, value, **call, average_attn_weights=average)
        assert isinstance(got, tuple) and len(got) == 2
        torch.testing.assert_close(got[0], expected[0], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(got[1], expected[1], atol=1e-6, rtol=1e-5)
        no_weights = ours(query, key, value, **call, need_weights=False)
        assert no_weights[1] is None and expected[0].shape == no_weights[0].shape
        torch.testing.assert_close(no_weights[0], expected[0], atol=1e-5, rtol=1e-5)


def test_gradients_equal_nn_multihead_attentions_too():
    theirs, ours = _pair(batch_first=False)
    ours.fast_path = True
    x = torch.randn(5, 3, E)
    blocked = torch.ones(5, 5, dtype=torch.bool).triu(1)
    grads = []
    for module in (theirs, ours):
        inputs = x.clone().requires_grad_()
        out, weights = module(inputs, inputs, inputs, attn_mask=blocked)
        (out.square().sum() + weights.sum()).backward()
        grads.append(inputs.grad)
    torch.testing.assert_close(grads[1], grads[0], atol=1e-5, rtol=1e-5)


def test_the_anti_causal_mask_of_the_issue_is_read_in_torchs_polarity():
    """The issue's report: attn_mask=triu(ones, 1).bool() attended anti-causally (|diff| 1.10)."""
    theirs, ours = _pair(batch_first=True)
    x = torch.randn(2, 6, E)
    mask = torch.triu(torch.ones(6, 6), 1).bool()
    torch.testing.assert_close(ours(x, x, x, attn_mask=mask)[0], theirs(x, x, x, attn_mask=mask)[0], atol=1e-5, rtol=0)
    weights = ours(x, x, x, attn_mask=mask)[1]
    assert (weights.triu(1) == 0).all()  # nothing above the diagonal: the future is not seen


@pytest.mark.parametrize("kind", ["none", "key_padding_mask", "bool attn_mask per head", "float attn_mask"])
@pytest.mark.parametrize("average", [True, False])
def test_unbatched_inputs_equal_torchs(kind, average):
    theirs, ours = _pair(batch_first=False)
    generator = torch.Generator().manual_seed(2)
    x = torch.randn(5, E, generator=generator)
    key_padding_mask, attn_mask, _ = _masks(kind, 1, 5, 5, generator)
    if key_padding_mask is not None:
        key_padding_mask = key_padding_mask[0]
    if kind == "bool attn_mask per head":
        attn_mask = attn_mask[:H]
    call = dict(key_padding_mask=key_padding_mask, attn_mask=attn_mask, average_attn_weights=average)
    expected, got = theirs(x, x, x, **call), ours(x, x, x, **call)
    torch.testing.assert_close(got[0], expected[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got[1], expected[1], atol=1e-6, rtol=1e-5)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    batch_first=st.booleans(),
    tq=st.integers(1, 6),
    use_padding=st.booleans(),
    use_attn=st.sampled_from(["none", "bool", "float"]),
)
def test_random_masks_in_torchs_convention_give_torchs_answer(seed, batch_first, tq, use_padding, use_attn):
    theirs, ours = _pair(batch_first)
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(2, tq, E, generator=generator)
    x = x if batch_first else x.transpose(0, 1).contiguous()
    lengths = torch.randint(1, tq + 1, (2,), generator=generator)
    padding = (torch.arange(tq)[None] >= lengths[:, None]) if use_padding else None
    blocked = torch.rand(tq, tq, generator=generator) > 0.5
    blocked[:, 0] = False  # key 0 is never padding either: no row without keys (torch gives NaN there)
    attn_mask = {"none": None, "bool": blocked, "float": torch.randn(tq, tq, generator=generator)}[use_attn]
    expected = theirs(x, x, x, key_padding_mask=padding, attn_mask=attn_mask)
    got = ours(x, x, x, key_padding_mask=padding, attn_mask=attn_mask)
    torch.testing.assert_close(got[0], expected[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got[1], expected[1], atol=1e-6, rtol=1e-5)


def test_attnkits_own_keywords_keep_attnkits_polarity_and_mixing_is_refused():
    theirs, ours = _pair(batch_first=True)
    x = torch.randn(3, 5, E)
    real = masks.lengths_to_mask(torch.tensor([5, 3, 1]), 5)  # attnkit: True = real key
    expected = theirs(x, x, x, key_padding_mask=~real)
    torch.testing.assert_close(ours(x, x, x, key_mask=real)[0], expected[0], atol=1e-5, rtol=1e-5)
    causal = theirs(x, x, x, attn_mask=~masks.causal(5))
    torch.testing.assert_close(ours(x, causal=True)[0], causal[0], atol=1e-5, rtol=1e-5)
    for torch_side in ({"key_padding_mask": ~real}, {"attn_mask": ~masks.causal(5)}):
        for attnkit_side in ({"key_mask": real}, {"query_mask": real}, {"causal": True}):
            with pytest.raises(ValueError, match=r"^this call mixes torch's mask convention .* use one of them$"):
                ours(x, x, x, **torch_side, **attnkit_side)


def test_a_mask_of_the_wrong_shape_is_refused_in_torchs_terms():
    _, ours = _pair()
    x = torch.randn(2, 3, E)
    with pytest.raises(ValueError, match=r"key_padding_mask must have shape \[2, 3\] \(torch's convention\)"):
        ours(x, x, x, key_padding_mask=torch.zeros(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"attn_mask must have shape \[3, 3\] or \[8, 3, 3\]"):
        ours(x, x, x, attn_mask=torch.zeros(3, 4, dtype=torch.bool))


def test_attention_output_is_an_indexable_tuple_that_keeps_its_fields():
    out = MultiHeadAttention(E, H)(torch.randn(2, 3, E), need_weights=True)
    assert isinstance(out, tuple) and len(out) == 2
    assert out[0] is out.context and out[1] is out.weights and out[-1] is out.weights
    context, weights = out
    assert context is out.context and weights.shape == (2, H, 3, 3)
    assert AttentionOutput(context) == (context, None)


def test_the_drop_in_has_the_attributes_torch_reads_and_the_same_state():
    theirs, ours = _pair(batch_first=False)
    assert ours.batch_first is False and ours._qkv_same_embed_dim and ours.num_heads == H
    torch.testing.assert_close(ours.in_proj_weight, theirs.in_proj_weight, atol=0, rtol=0)
    torch.testing.assert_close(ours.in_proj_bias, theirs.in_proj_bias, atol=0, rtol=0)
    assert ours.bias_k is None and ours.bias_v is None and not ours.add_zero_attn
    _, no_bias = _pair(bias=False)
    assert no_bias.in_proj_bias is None
    _, cross = _pair(kdim=6, vdim=5)
    assert not cross._qkv_same_embed_dim and cross.in_proj_weight is None and cross.k_proj_weight.shape == (E, 6)
    kpm = torch.tensor([[False, False, True]])
    attn = torch.zeros(3, 3, dtype=torch.bool)
    for module in (theirs, ours):  # the fused encoder path's mask merging, as torch does it
        assert module.merge_masks(None, kpm, torch.randn(1, 3, E))[1] == 1
    merged_theirs = theirs.merge_masks(attn, kpm, torch.randn(1, 3, E))
    merged_ours = ours.merge_masks(attn, kpm, torch.randn(1, 3, E))
    assert merged_theirs[1] == merged_ours[1] == 2 and torch.equal(merged_theirs[0], merged_ours[0])


def _swap(layer, *names):
    swapped = copy.deepcopy(layer)
    for name in names:
        setattr(swapped, name, MultiHeadAttention.from_torch(getattr(layer, name)))
    return swapped


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("grad", [True, False])  # no grad in eval: torch's fused encoder path reads our weights
def test_as_self_attn_of_transformer_encoder_layer_and_stack(batch_first, norm_first, grad):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(E, H, 32, dropout=0.0, batch_first=batch_first, norm_first=norm_first)
    layer.eval()
    ours = _swap(layer, "self_attn")
    x = torch.randn(3, 6, E)
    x = x if batch_first else x.transpose(0, 1)
    padding = torch.arange(6)[None] >= torch.tensor([6, 4, 2])[:, None]
    causal = nn.Transformer.generate_square_subsequent_mask(6)  # float, -inf above the diagonal
    calls = [{}, {"src_key_padding_mask": padding}, {"src_mask": causal, "is_causal": True}]
    calls.append({"src_mask": causal.isinf(), "src_key_padding_mask": padding})
    with torch.set_grad_enabled(grad):
        for call in calls:
            torch.testing.assert_close(ours(x, **call), layer(x, **call), atol=1e-5, rtol=1e-5)
        stack_theirs = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
        stack_ours = nn.TransformerEncoder(ours, 2, enable_nested_tensor=False).eval()
        for call in ({"src_key_padding_mask": padding}, {"mask": causal, "is_causal": True}):
            torch.testing.assert_close(stack_ours(x, **call), stack_theirs(x, **call), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("batch_first", [True, False])
def test_as_both_attentions_of_transformer_decoder_layer(batch_first):
    torch.manual_seed(0)
    layer = nn.TransformerDecoderLayer(E, H, 32, dropout=0.0, batch_first=batch_first).eval()
    ours = _swap(layer, "self_attn", "multihead_attn")
    tgt, memory = torch.randn(3, 5, E), torch.randn(3, 7, E)
    if not batch_first:
        tgt, memory = tgt.transpose(0, 1), memory.transpose(0, 1)
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(5)
    memory_padding = torch.arange(7)[None] >= torch.tensor([7, 3, 1])[:, None]
    call = dict(tgt_mask=tgt_mask, tgt_is_causal=True, memory_key_padding_mask=memory_padding)
    for grad in (True, False):
        with torch.set_grad_enabled(grad):
            torch.testing.assert_close(ours(tgt, memory, **call), layer(tgt, memory, **call), atol=1e-5, rtol=1e-5)


def test_from_torch_keeps_the_training_mode_and_a_state_dict_round_trip():
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(E, H, batch_first=True)
    assert MultiHeadAttention.from_torch(theirs).training
    assert not MultiHeadAttention.from_torch(theirs.eval()).training
    layer = nn.TransformerEncoderLayer(E, H, 32, dropout=0.0, batch_first=True).eval()
    ours = _swap(nn.TransformerEncoderLayer(E, H, 32, dropout=0.0, batch_first=True).eval(), "self_attn")
    ours.load_state_dict(layer.state_dict())  # torch's layer state dict (in_proj_weight) loads into ours
    x = torch.randn(2, 4, E)
    torch.testing.assert_close(ours(x), layer(x), atol=1e-5, rtol=1e-5)
