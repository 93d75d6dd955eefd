"""The linear maps of the fast decoding step (layer 4), each a weight laid out once for a few rows per call.

``fast_linear(modules)`` takes one ``nn.Linear`` (or several sharing an input, concatenated along the output: the
self-attention's q, k, v) and returns a callable ``x [N, Din] -> [N, Dout]`` of one of two kinds:

=====================  ==============================================================  ===============================
kind                   kernel                                                          used for
=====================  ==============================================================  ===============================
:class:`DenseLinear`   ``torch.addmm(bias, x, weight_t)``, weight transposed once to   float ``nn.Linear``
                       ``[Din, Dout]`` (MKL reads it faster than ``F.linear``)
:class:`Int8Linear`    ``quantized.linear_dynamic`` on fbgemm-packed int8 weights,     ``--quantize int8``'s layers
                       the very call of ``torch.ao``'s dynamic ``Linear``
=====================  ==============================================================  ===============================

Each kind's reference is the module it was built from (``module(x)``; ``tests/models/test_fast_linear.py``).
oneDNN's linear on a reordered weight was dropped: no gain worth a third kind (``docs/benchmarks.md``). Int8
quantises each call's input with that call's range (per tensor) and keeps per-output-channel weight scales, so
concatenating q, k and v changes no value: every output column is computed as by its own layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

__all__ = ["DenseLinear", "Int8Linear", "fast_linear", "is_int8_linear"]


@dataclass(frozen=True)
class DenseLinear:
    """``x @ weight_t + bias`` with ``weight_t [Din, Dout]`` contiguous."""

    weight_t: torch.Tensor  # [Din, Dout]
    bias: torch.Tensor | None  # [Dout]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:  # [N, Din] -> [N, Dout]
        return x @ self.weight_t if self.bias is None else torch.addmm(self.bias, x, self.weight_t)


@dataclass(frozen=True)
class Int8Linear:
    """torch's dynamic int8 linear (fbgemm): the input quantised per call, int8 weights per output channel."""

    packed: object  # torch.ops.quantized.linear_prepack's LinearPackedParamsBase
    reduce_range: bool

    def __call__(self, x: torch.Tensor) -> torch.Tensor:  # [N, Din] -> [N, Dout]
        return torch.ops.quantized.linear_dynamic(x, self.packed, reduce_range=self.reduce_range)


def is_int8_linear(module: nn.Module) -> bool:
    """True for ``torch.ao``'s dynamically quantised int8 ``Linear`` (what ``quantize_model`` makes)."""
    from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

    return type(module) is DynamicLinear and module._packed_params.dtype == torch.qint8


def _float(modules: Sequence[nn.Linear]) -> DenseLinear | None:
    if len({m.bias is None for m in modules}) > 1:
        return None
    weight = torch.cat([m.weight.detach() for m in modules])  # [Dout, Din]
    bias = None if modules[0].bias is None else torch.cat([m.bias.detach() for m in modules])
    return DenseLinear(weight.t().contiguous(), bias)


def _reduce_range(module: nn.Module) -> bool:
    return module.version is not None and module.version >= 4  # as the module's forward decides


def _int8(modules: Sequence[nn.Module]) -> Int8Linear | None:
    parts = [torch.ops.quantized.linear_unpack(m._packed_params._packed_params) for m in modules]
    if len({b is None for _, b in parts}) > 1 or len({_reduce_range(m) for m in modules}) > 1:
        return None
    weights = [w for w, _ in parts]  # each [Dout_i, Din] int8, per output channel
    bias = None if parts[0][1] is None else torch.cat([b for _, b in parts])
    if len(weights) == 1:
        weight = weights[0]
    elif all(w.qscheme() == torch.per_channel_affine for w in weights):
        weight = torch._make_per_channel_quantized_tensor(
            torch.cat([w.int_repr() for w in weights]),
            torch.cat([w.q_per_channel_scales() for w in weights]),
            torch.cat([w.q_per_channel_zero_points() for w in weights]),
            0,
        )  # [Dout, Din]
    else:  # per-tensor scales cannot be concatenated
        return None
    return Int8Linear(torch.ops.quantized.linear_prepack(weight, bias), _reduce_range(modules[0]))


def fast_linear(modules: Sequence[nn.Module]) -> DenseLinear | Int8Linear | None:
    """One map computing every module in ``modules`` (same input) side by side, ``[N, Din] -> [N, ΣDout]``, or
    None when they are not all float ``nn.Linear`` or all int8 dynamic ``Linear`` alike (bias, scheme): then the
    caller keeps the modules."""
    if all(type(m) is nn.Linear and m.weight.is_floating_point() for m in modules):
        return _float(modules)
    if all(is_int8_linear(m) for m in modules):
        return _int8(modules)
    return None
