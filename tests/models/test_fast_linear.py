"""The fast step's linear maps (``attnkit.models.transformer.fast_linear``) against their reference, the modules they were
built from: the same values (float: to float32 rounding; int8: exactly, the same kernel on the same int8 weights),
q, k, v side by side as one map, and None where no one map computes the modules."""

import pytest
import torch
from torch import nn

from attnkit.models.quantize import quantize_model
from attnkit.models.transformer import fast_linear as ll

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py: tiny models, one torch thread


def linears(count=3, din=16, dout=12, bias=True):
    torch.manual_seed(0)
    return [nn.Linear(din, dout, bias=bias).eval() for _ in range(count)]


def int8(modules):
    wrapper = quantize_model(nn.Sequential(*modules), "int8")
    return list(wrapper)


def rows(n=5, din=16):
    return torch.randn(n, din, generator=torch.Generator().manual_seed(2)) * 3.0


@pytest.mark.parametrize("bias", [True, False])
def test_dense_map_equals_the_layers_side_by_side(bias):
    modules = linears(bias=bias)
    fast = ll.fast_linear(modules)
    assert isinstance(fast, ll.DenseLinear)
    x = rows()
    torch.testing.assert_close(fast(x), torch.cat([m(x) for m in modules], dim=-1), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("count", [1, 3])
@pytest.mark.parametrize("bias", [True, False])
def test_int8_map_equals_the_quantised_layers_exactly(count, bias):
    modules = int8(linears(count=count, bias=bias))
    fast = ll.fast_linear(modules)
    assert isinstance(fast, ll.Int8Linear)
    for n in (1, 4):  # each call quantises its own input: compare on the same rows
        x = rows(n)
        assert torch.equal(fast(x), torch.cat([m(x) for m in modules], dim=-1))


def test_int8_map_is_not_the_float_map():
    float_modules = linears(count=1)
    x = rows()
    got = ll.fast_linear(int8(linears(count=1)))(x)
    with torch.no_grad():
        want = float_modules[0](x)
    assert not torch.equal(got, want)
    torch.testing.assert_close(got, want, atol=0.05 * float(want.abs().max()), rtol=0.0)


def test_no_map_for_layers_that_differ():
    float_part, int8_part = linears(count=1), int8(linears(count=1))
    assert ll.fast_linear([*float_part, *int8_part]) is None
    with_bias, without = linears(count=1), linears(count=1, bias=False)
    assert ll.fast_linear([*with_bias, *without]) is None
    assert ll.fast_linear([*int8(with_bias), *int8(without)]) is None
    assert ll.fast_linear([nn.Identity()]) is None
