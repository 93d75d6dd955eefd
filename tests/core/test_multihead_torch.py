"""MultiHeadAttention as a drop-in for nn.MultiheadAttention: torch's masks and polarity, its state dicts, and one
graph under torch.compile."""

import pytest
import torch
from torch import nn

from attnkit import MultiHeadAttention, masks


def _pair(kdim=None, vdim=None, bias=True, seed=0):
    torch.manual_seed(seed)
    theirs = nn.MultiheadAttention(16, 4, kdim=kdim, vdim=vdim, bias=bias, batch_first=True).eval()
    return theirs, MultiHeadAttention.from_torch(theirs).eval()


def _padding(lengths, t):
    return ~masks.lengths_to_mask(torch.tensor(lengths), t)  # torch's polarity: True = padding


@pytest.mark.parametrize("fast_path", [True, False])
@pytest.mark.parametrize("self_attention", [True, False])
def test_key_padding_mask_in_torch_polarity_matches_nn_multihead_attention(self_attention, fast_path):
    theirs, ours = _pair(kdim=None if self_attention else 6, vdim=None if self_attention else 6)
    ours.fast_path = fast_path
    query = torch.randn(3, 5, 16)
    key = query if self_attention else torch.randn(3, 5, 6)
    padding = _padding([5, 3, 1], 5)
    expected, expected_weights = theirs(query, key, key, key_padding_mask=padding)
    context, weights = ours(query, key, key, key_padding_mask=padding, average_attn_weights=False)
    torch.testing.assert_close(context, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights.mean(1), expected_weights, atol=1e-6, rtol=1e-5)
    assert (weights[2, :, :, 1:] == 0).all()  # padded keys: exactly zero weight
    same = ours(query, key, key, key_mask=~padding)  # attnkit's polarity, negated
    torch.testing.assert_close(same.context, context, atol=0, rtol=0)


def test_key_mask_and_key_padding_mask_together_are_refused():
    _, ours = _pair()
    plain = MultiHeadAttention(16, 4)
    x = torch.randn(2, 3, 16)
    mask = torch.ones(2, 3, dtype=torch.bool)
    for module in (ours, plain):
        with pytest.raises(ValueError, match="mixes torch's mask convention"):
            module(x, key_mask=mask, key_padding_mask=~mask)
    with pytest.raises(ValueError, match=r"key_padding_mask must be a torch.BoolTensor in torch's polarity"):
        plain(x, key_padding_mask=torch.zeros(2, 3))  # an additive one belongs to forward_torch / the drop-in


def _torch_masks(kind, batch, heads, tq, tk, generator):
    """(key_padding_mask, attn_mask) in torch's convention; every query keeps at least one key."""
    keep = torch.rand(tq, tk, generator=generator) > 0.4
    keep[:, 0] = True
    padding = _padding([tk, tk - 2, 2], tk)[:batch]
    additive = torch.randn(tq, tk, generator=generator).masked_fill(~keep, float("-inf"))
    return {
        "key padding": (padding, None),
        "bool attn_mask": (None, ~keep),
        "bool attn_mask per head": (None, torch.rand(batch * heads, tq, tk, generator=generator) > 0.5),
        "float attn_mask": (None, additive),
        "float key padding": (torch.zeros(batch, tk).masked_fill(padding, float("-inf")), None),
        "both": (padding, ~keep),
        "causal": (padding, ~masks.causal(tq, tk)),
    }[kind]


@pytest.mark.parametrize(
    "kind",
    [
        "key padding",
        "bool attn_mask",
        "bool attn_mask per head",
        "float attn_mask",
        "float key padding",
        "both",
        "causal",
    ],
)
@pytest.mark.parametrize("average", [True, False])
@pytest.mark.parametrize("fast_path", [True, False])
def test_forward_torch_matches_nn_multihead_attention_outputs_and_weights(kind, average, fast_path):
    theirs, ours = _pair()
    ours.fast_path = fast_path
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(3, 6, 16, generator=generator)
    key_padding_mask, attn_mask = _torch_masks(kind, 3, 4, 6, 6, generator)
    if kind == "bool attn_mask per head":
        attn_mask[:, :, 0] = False  # torch's polarity: key 0 allowed everywhere (no fully blocked row)
    call = {"key_padding_mask": key_padding_mask, "attn_mask": attn_mask, "average_attn_weights": average}
    expected, expected_weights = theirs(x, x, x, **call, is_causal=kind == "causal")
    output, weights = ours.forward_torch(x, x, x, **call, is_causal=kind == "causal")
    torch.testing.assert_close(output, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights, expected_weights, atol=1e-6, rtol=1e-5)
    assert ours.forward_torch(x, x, x, **call, need_weights=False)[1] is None


def test_forward_torch_cross_attention_and_its_errors():
    theirs, ours = _pair(kdim=5, vdim=3)
    query, key, value = torch.randn(2, 4, 16), torch.randn(2, 6, 5), torch.randn(2, 6, 3)
    padding = _padding([6, 2], 6)
    expected, expected_weights = theirs(query, key, value, key_padding_mask=padding)
    output, weights = ours.forward_torch(query, key, value, key_padding_mask=padding)
    torch.testing.assert_close(output, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights, expected_weights, atol=1e-6, rtol=1e-5)
    with pytest.raises(ValueError, match=r"attn_mask must have shape \[4, 6\] or \[8, 4, 6\]"):
        ours.forward_torch(query, key, value, attn_mask=torch.zeros(6, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="is_causal is a hint"):
        ours.forward_torch(query, key, value, is_causal=True)
    with pytest.raises(ValueError, match=r"must be bool .* or float"):
        ours.forward_torch(query, key, value, attn_mask=torch.zeros(4, 6, dtype=torch.long))


@pytest.mark.parametrize(("kdim", "vdim", "bias"), [(None, None, True), (None, None, False), (6, 5, True)])
def test_load_state_dict_reads_an_nn_multihead_attention_state_dict(kdim, vdim, bias):
    theirs, _ = _pair(kdim=kdim, vdim=vdim, bias=bias, seed=3)
    ours = MultiHeadAttention(16, 4, kdim=kdim, vdim=vdim, bias=bias).eval()
    torch_keys = set(theirs.state_dict())
    assert torch_keys & {"in_proj_weight", "q_proj_weight"}  # torch's own layout
    result = ours.load_state_dict(theirs.state_dict())  # strict: every key used, none missing
    assert not result.missing_keys and not result.unexpected_keys
    query, key = torch.randn(2, 4, 16), torch.randn(2, 5, kdim or 16)
    value = torch.randn(2, 5, vdim or 16)
    padding = _padding([5, 2], 5)
    expected, _ = theirs(query, key, value, key_padding_mask=padding)
    torch.testing.assert_close(
        ours(query, key, value, key_padding_mask=padding).context, expected, atol=1e-5, rtol=1e-5
    )
    assert set(ours.state_dict()) == {  # attnkit's keys, unchanged: its own checkpoints load as before
        f"{p}.{w}"
        for p in ("q_proj", "k_proj", "v_proj", "out_proj")
        for w in (("weight", "bias") if bias else ("weight",))
    }
    again = MultiHeadAttention(16, 4, kdim=kdim, vdim=vdim, bias=bias)
    again.load_state_dict(ours.state_dict())
    torch.testing.assert_close(again(query, key, value).context, ours(query, key, value).context)


def test_a_parent_module_loads_torch_keys_under_its_prefix_and_bias_kv_is_refused():
    torch.manual_seed(0)
    theirs = nn.Sequential(nn.Linear(16, 16))
    theirs.attention = nn.MultiheadAttention(16, 4, batch_first=True)
    ours = nn.Sequential(nn.Linear(16, 16))
    ours.attention = MultiHeadAttention(16, 4)
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(2, 3, 16)
    torch.testing.assert_close(ours.attention(x).context, theirs.attention(x, x, x)[0], atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="bias_k/bias_v"):
        MultiHeadAttention(16, 4).load_state_dict(nn.MultiheadAttention(16, 4, add_bias_kv=True).state_dict())


# ----------------------------------------------------------------------------------------- torch.compile
def _compile_cases(mha):
    x, memory = torch.randn(3, 6, 16), torch.randn(3, 5, 16)
    key_mask = masks.lengths_to_mask(torch.tensor([6, 3, 0]), 6)  # the last sequence is all padding
    return x, [
        lambda x: mha(x, key_mask=key_mask).context,
        lambda x: mha(x, key_padding_mask=~key_mask, causal=True).context,
        lambda x: mha(x, key_mask=key_mask, query_mask=key_mask).context,
        lambda x: mha(x, key_mask=key_mask, need_weights=True).weights,
        lambda x: mha(x, memory, key_mask=key_mask[:, :5]).context,
    ]


def test_forward_traces_into_one_graph_and_equals_eager():
    """fullgraph=True fails on any graph break (a host round-trip such as ``bool(mask.any())``); the eager
    backend keeps this quick: it checks the tracing, not the generated code (the slow test below does)."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).eval()
    x, cases = _compile_cases(mha)
    for fn in cases:
        torch._dynamo.reset()
        compiled = torch.compile(fn, fullgraph=True, backend="eager")
        out = compiled(x)
        assert torch.isfinite(out).all()
        torch.testing.assert_close(out, fn(x), atol=1e-6, rtol=1e-5)


@pytest.mark.slow  # inductor compiles C++ kernels: about a minute on a 2-core machine
def test_compiled_forward_and_backward_with_inductor_equal_eager():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4)
    x = torch.randn(3, 6, 16)
    key_mask = masks.lengths_to_mask(torch.tensor([6, 3, 0]), 6)

    def step(module, inputs):
        out = module(inputs, key_mask=key_mask, causal=True, need_weights=True)
        return out.context, out.weights

    results = []
    for fn in (step, torch.compile(step, fullgraph=True)):
        inputs = x.clone().requires_grad_()
        context, weights = fn(mha, inputs)
        (context.square().sum() + weights.sum()).backward()
        results.append((context, weights, inputs.grad))
        mha.zero_grad()
    for eager, compiled in zip(*results, strict=True):
        torch.testing.assert_close(compiled, eager, atol=1e-5, rtol=1e-4)
