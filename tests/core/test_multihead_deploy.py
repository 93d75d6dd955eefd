"""A model trained with attnkit deploys without it (#37): the drop-in's state dict is torch's, ``to_torch()`` gives
torch's module; and the module follows its *current* distribution (fast path, torch's fused encoder path, cache)."""

import copy

import pytest
import torch
from torch import nn

import attnkit
from attnkit import MultiHeadAttention, Sparsemax, distributions

E, H = 16, 4


@pytest.mark.parametrize(("kdim", "vdim", "bias"), [(None, None, True), (6, 5, True), (None, None, False)])
def test_the_drop_ins_state_dict_loads_into_nn_multihead_attention(kdim, vdim, bias):
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(E, H, kdim=kdim, vdim=vdim, bias=bias, batch_first=True).eval()
    ours = MultiHeadAttention.from_torch(theirs)
    fresh = nn.MultiheadAttention(E, H, kdim=kdim, vdim=vdim, bias=bias, batch_first=True).eval()
    fresh.load_state_dict(ours.state_dict())  # strict: torch's keys exactly
    assert set(ours.state_dict()) == set(theirs.state_dict())
    q, k, v = torch.randn(2, 3, E), torch.randn(2, 4, kdim or E), torch.randn(2, 4, vdim or E)
    torch.testing.assert_close(fresh(q, k, v)[0], ours(q, k, v)[0], atol=1e-6, rtol=1e-5)
    again = MultiHeadAttention.from_torch(fresh)
    again.load_state_dict(ours.state_dict())  # and back: either layout loads


def test_a_layer_holding_the_drop_in_saves_a_state_dict_torchs_layer_loads():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(E, H, 32, dropout=0.0, batch_first=True).eval()
    ours = copy.deepcopy(layer)
    ours.self_attn = MultiHeadAttention.from_torch(layer.self_attn)
    with torch.no_grad():
        ours.self_attn.q_proj.weight.mul_(1.5)  # "trained with attnkit"
    plain = nn.TransformerEncoderLayer(E, H, 32, dropout=0.0, batch_first=True).eval()
    plain.load_state_dict(ours.state_dict())
    x = torch.randn(2, 5, E)
    torch.testing.assert_close(plain(x), ours(x), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("batch_first", [True, False])
def test_to_torch_returns_torchs_module_with_the_same_weights_and_outputs(batch_first):
    torch.manual_seed(0)
    plain = MultiHeadAttention(E, H, kdim=6, vdim=5)
    cross = plain.to_torch()
    assert type(cross) is nn.MultiheadAttention and cross.batch_first and cross.training
    q, k, v = torch.randn(2, 3, E), torch.randn(2, 4, 6), torch.randn(2, 4, 5)
    torch.testing.assert_close(cross(q, k, v)[0], plain(q, k, v).context, atol=1e-6, rtol=1e-5)
    drop_in = MultiHeadAttention.from_torch(nn.MultiheadAttention(E, H, batch_first=batch_first).eval())
    back = drop_in.to_torch()
    assert back.batch_first is batch_first and not back.training
    x = torch.randn(3, 2, E)
    torch.testing.assert_close(back(x, x, x)[0], drop_in(x, x, x)[0], atol=1e-6, rtol=1e-5)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_to_torch_is_scriptable_and_refuses_what_torch_cannot_compute():
    torch.manual_seed(0)
    module = MultiHeadAttention(E, H).eval()
    scripted = torch.jit.script(module.to_torch())  # attnkit's module itself is not scriptable (README)
    x = torch.randn(2, 3, E)
    torch.testing.assert_close(scripted(x, x, x)[0], module(x).context, atol=1e-6, rtol=1e-5)
    with pytest.raises(ValueError, match="Sparsemax"):
        MultiHeadAttention(E, H, distribution=Sparsemax()).to_torch()


def test_the_module_follows_a_distribution_set_after_construction():
    torch.manual_seed(0)
    module = MultiHeadAttention(E, H).eval()
    assert module.fast_path
    module.distribution = Sparsemax()
    assert not module.fast_path
    built = MultiHeadAttention(E, H, distribution=Sparsemax()).eval()
    built.load_state_dict(module.state_dict())
    x = torch.randn(2, 5, E)
    out, weights = module(x, need_weights=True)
    torch.testing.assert_close(out, built(x).context, atol=1e-6, rtol=1e-5)
    assert (weights == 0).any()  # sparsemax ran, not the softmax kernel
    torch.testing.assert_close(module(x).context, out, atol=1e-6, rtol=1e-5)  # no weights asked: same path
    module.distribution = distributions.Softmax()
    assert module.fast_path
    module.fast_path = False  # the readable references on request, still
    assert not module.fast_path
    assert "Uniform" in attnkit.__all__ and attnkit.Uniform is distributions.Uniform


@pytest.mark.parametrize("norm_first", [False, True])
def test_torchs_fused_encoder_path_never_bypasses_a_drop_in_of_another_distribution(norm_first):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(E, H, 32, dropout=0.0, batch_first=True, norm_first=norm_first)
    softmax = copy.deepcopy(layer).eval()
    layer.self_attn = MultiHeadAttention.from_torch(layer.self_attn)
    layer.self_attn.distribution = Sparsemax()
    x = torch.randn(3, 6, E)
    padding = torch.arange(6)[None] >= torch.tensor([6, 4, 2])[:, None]
    trained = layer.train()(x, src_key_padding_mask=padding)
    assert not torch.allclose(trained, softmax(x, src_key_padding_mask=padding), atol=1e-2)  # sparsemax ran
    with torch.no_grad():
        served = layer.eval()(x, src_key_padding_mask=padding)
    keep = ~padding[..., None]
    torch.testing.assert_close(served * keep, trained.detach() * keep, atol=1e-5, rtol=1e-5)


def test_new_cache_fits_the_modules_dtype_so_bf16_decoding_runs():
    torch.manual_seed(0)
    module = MultiHeadAttention(E, H).to(torch.bfloat16).eval()
    cache = module.new_cache(2, 4)
    assert cache.keys.dtype == torch.bfloat16 and cache.keys.shape == (2, H, 4, E // H)
    x = torch.randn(2, 3, E, dtype=torch.bfloat16)
    steps = [module(x[:, t : t + 1], causal=True, cache=cache).context for t in range(3)]
    full = module(x, causal=True).context
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=2e-2, rtol=2e-2)
