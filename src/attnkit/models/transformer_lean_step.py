"""One greedy/beam decoding step of :class:`~attnkit.models.transformer_seq2seq.TransformerSeq2Seq` as a flat run of
kernels on weights laid out once (layer 4): the fast path of ``decode_step``.

The readable reference is the modules' own one-token path, :meth:`TransformerDecoderLayer.decode_token` (each
layer's attentions through :meth:`~attnkit.multihead.MultiHeadAttention.decode_self` /
:meth:`~attnkit.multihead.MultiHeadAttention.decode_cross`, then the feed-forward ``nn.Sequential``); the tests hold
the two to the same tokens and logits within float32 rounding (``tests/models/test_transformer_lean_step.py``).

What the lean step does differently, measured in ``bench.decoding_runtimes`` (issue #24):

* every linear map is ``torch.addmm(bias, x, weight_t)`` on its weight transposed once to a contiguous
  ``[Din, Dout]`` (with a handful of rows per step, MKL reads that layout ~1.25x faster than ``F.linear``'s
  ``[Dout, Din]``); self-attention's q, k, v are one ``[D, 3D]`` matmul;
* no module calls, argument checks, routing or closures per layer: ~30 kernels a layer and nothing else.

The transposed weights are laid out anew at every :meth:`start_decoding` (one copy of the decoder's weights, a few
milliseconds against a decoding's hundreds of steps). They were once kept between decodings, keyed by every source
tensor's storage and version counter, but a model trained by ``fit`` and then evaluated decoded with stale weights
(an update the version counters did not show), so correctness won over the saving. The lean step applies to models in eval mode whose decoder has no
rotary positions, plain float ``nn.Linear`` layers (not :func:`attnkit.models.quantize.quantize_model`'s) and
fast-path attentions; :func:`lean_weights` returns None for any other and ``decode_step`` keeps the modules' path.

Shape glossary:
    N  decoder rows (B·beams)   D  model size   H  heads   Dh  head size D/H   S  source positions
    t  cached steps   F  feed-forward size   V  target vocabulary
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from attnkit.functional.sdpa import scaled_dot_product_attention
from attnkit.kv_cache import KVCache

__all__ = ["LeanWeights", "lean_decode_step", "lean_weights"]

Linear = tuple[torch.Tensor, torch.Tensor | None]  # weight transposed [Din, Dout], bias [Dout] or None
Norm = tuple[torch.Tensor | None, torch.Tensor | None, float]  # LayerNorm weight, bias, eps


@dataclass(frozen=True)
class _Layer:
    """One decoder layer's weights, laid out for :func:`lean_decode_step`."""

    norm_self: Norm
    qkv: Linear  # [D, 3D]
    out_self: Linear
    norm_cross: Norm
    q_cross: Linear
    out_cross: Linear
    norm_ff: Norm
    ff_in: Linear  # [D, F]
    activation: Callable[[torch.Tensor], torch.Tensor]
    ff_out: Linear  # [F, D]
    norm_first: bool


@dataclass(frozen=True)
class LeanWeights:
    """A decoder's weights laid out once for :func:`lean_decode_step`, and the sources' signature they were
    taken from (storage address and version counter of every tensor)."""

    layers: list[_Layer]
    final_norm: Norm | None  # None: post-norm models have no final LayerNorm
    output: Linear  # [D, V]
    heads: int
    signature: tuple[tuple[int, int], ...]


def _linear(module: nn.Module) -> Linear:
    bias = None if module.bias is None else module.bias.detach()
    return module.weight.detach().t().contiguous(), bias


def _qkv(attention: nn.Module) -> Linear:
    parts = (attention.q_proj, attention.k_proj, attention.v_proj)
    weight = torch.cat([p.weight.detach() for p in parts]).t().contiguous()  # [D, 3D]
    bias = None if parts[0].bias is None else torch.cat([p.bias.detach() for p in parts])
    return weight, bias


def _norm(module: nn.Module) -> Norm:
    weight = None if module.weight is None else module.weight.detach()
    return weight, None if module.bias is None else module.bias.detach(), module.eps


def _eligible(model: nn.Module) -> bool:
    """Whether the lean step computes what the modules compute for ``model``."""
    if model.training:
        return False
    for layer in model.decoder_layers:
        first, activation, _, second = layer.feed_forward
        attentions = (layer.self_attention, layer.cross_attention)
        if any(a.rotary is not None or not a.fast_path for a in attentions):
            return False
        if layer.self_attention.k_proj.in_features != layer.self_attention.embed_dim:
            return False
        linears = [first, second, layer.cross_attention.q_proj]
        linears += [p for a in attentions for p in (a.q_proj, a.k_proj, a.v_proj, a.out_proj)]
        if any(type(m) is not nn.Linear or not m.weight.is_floating_point() for m in linears):
            return False
        if not isinstance(activation, (nn.GELU, nn.ReLU)):
            return False
    output = model.output
    return type(output) is nn.Linear and output.weight.is_floating_point()


def _sources(model: nn.Module) -> Sequence[torch.Tensor]:
    return (
        [p for p in model.decoder_layers.parameters()] + list(model.decoder_norm.parameters()) + [model.output.weight]
    )


def _signature(model: nn.Module) -> tuple[tuple[int, int], ...]:
    return tuple((t.data_ptr(), t._version) for t in _sources(model))


@torch.no_grad()
def lean_weights(model: nn.Module) -> LeanWeights | None:
    """``model``'s decoder weights laid out for :func:`lean_decode_step` (built anew at each call, so they always
    are the model's current weights), or None when the lean step does not apply (training mode, rotary positions, quantised or custom
    layers, a score other than scaled dot): then decode through the modules."""
    if not _eligible(model):
        return None
    signature = _signature(model)
    layers = []
    for layer in model.decoder_layers:
        first, activation, _, second = layer.feed_forward
        attention, cross = layer.self_attention, layer.cross_attention
        layers.append(
            _Layer(
                _norm(layer.norm_self),
                _qkv(attention),
                _linear(attention.out_proj),
                _norm(layer.norm_cross),
                _linear(cross.q_proj),
                _linear(cross.out_proj),
                _norm(layer.norm_ff),
                _linear(first),
                activation,
                _linear(second),
                layer.norm_first,
            )
        )
    final = model.decoder_norm
    weights = LeanWeights(
        layers,
        _norm(final) if isinstance(final, nn.LayerNorm) else None,
        _linear(model.output),
        model.decoder_layers[0].self_attention.num_heads,
        signature,
    )
    return weights


def _apply(x: torch.Tensor, linear: Linear) -> torch.Tensor:
    weight_t, bias = linear
    return x @ weight_t if bias is None else torch.addmm(bias, x, weight_t)


def _layer_norm(x: torch.Tensor, norm: Norm) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:], norm[0], norm[1], norm[2])


def lean_decode_step(
    weights: LeanWeights,
    x: torch.Tensor,
    caches: Sequence[KVCache],
    memory_kv: Sequence[tuple[torch.Tensor, torch.Tensor]],
    memory_mask: torch.Tensor | None,
) -> torch.Tensor:
    """One new position per row through every decoder layer, the final norm and the output projection.

    Args:
        weights: from :func:`lean_weights`.
        x: ``[N, D]`` the embedded tokens (positions added).
        caches: per layer a :class:`KVCache` ``[N, H, L, Dh]``; this position's keys and values are appended.
        memory_kv: per layer the cross-attention keys and values ``([N, H, S, Dh], [N, H, S, Dh])``.
        memory_mask: ``[N, S]`` bool (True = real source position), or None when every position is real.

    Returns:
        logits ``[N, V]``.
    """
    rows, dim = x.shape
    heads = weights.heads
    head_dim = dim // heads
    cross_mask = None if memory_mask is None else memory_mask[:, None, None, :]  # [N, 1, 1, S]
    for layer, cache, (memory_keys, memory_values) in zip(weights.layers, caches, memory_kv, strict=True):
        pre = layer.norm_first
        h = _layer_norm(x, layer.norm_self) if pre else x
        q, k, v = _apply(h, layer.qkv).view(rows, 3, heads, 1, head_dim).unbind(1)  # 3 x [N, H, 1, Dh]
        keys, values = cache.update(k, v)  # [N, H, t, Dh]
        context = F.scaled_dot_product_attention(q, keys, values)  # [N, H, 1, Dh]
        x = x + _apply(context.view(rows, dim), layer.out_self)  # [N, D]
        x = x if pre else _layer_norm(x, layer.norm_self)
        h = _layer_norm(x, layer.norm_cross) if pre else x
        q = _apply(h, layer.q_cross).view(rows, heads, 1, head_dim)  # [N, H, 1, Dh]
        if cross_mask is None:
            context = F.scaled_dot_product_attention(q, memory_keys, memory_values)  # [N, H, 1, Dh]
        else:  # attnkit's wrapper: a row with no real source position gives zeros
            context, _ = scaled_dot_product_attention(q, memory_keys, memory_values, cross_mask)
        x = x + _apply(context.reshape(rows, dim), layer.out_cross)
        x = x if pre else _layer_norm(x, layer.norm_cross)
        h = _layer_norm(x, layer.norm_ff) if pre else x
        x = x + _apply(layer.activation(_apply(h, layer.ff_in)), layer.ff_out)  # [N, F] inside
        x = x if pre else _layer_norm(x, layer.norm_ff)
    if weights.final_norm is not None:
        x = _layer_norm(x, weights.final_norm)
    return _apply(x, weights.output)  # [N, V]
