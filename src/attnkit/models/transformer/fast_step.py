"""One greedy/beam decoding step of :class:`~attnkit.models.transformer.seq2seq.TransformerSeq2Seq` as a flat run of
kernels on weights laid out once (layer 4): the fast path of ``decode_step``.

The reference is the modules' one-token path, :meth:`TransformerDecoderLayer.decode_token`; the tests hold the two
to the same tokens and logits within float32 rounding (``tests/models/test_transformer_fast_step.py``). What differs
(timed in ``bench.decoding_runtimes``): every linear map is a :mod:`~attnkit.models.transformer.fast_linear` kind
laid out once (q, k, v as one ``[D, 3D]`` map; ``--quantize int8``'s layers on fbgemm's own kernel), and there are
no module calls, checks or closures per layer: ~30 kernels a layer.

The weights are laid out anew at every :meth:`start_decoding` (kept between decodings, an update the version
counters did not show would decode with stale weights). The fast step applies to eval-mode models whose decoder has
no rotary positions, fast-path attentions, and linear layers all float ``nn.Linear`` or all int8
(:func:`attnkit.models.quantize.quantize_model`) per layer group; otherwise :func:`fast_step_weights` returns None
and ``decode_step`` keeps the modules' path.

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
from attnkit.models.transformer.fast_linear import DenseLinear, Int8Linear, fast_linear

__all__ = ["FastStepWeights", "fast_decode_step", "fast_step_weights"]

Linear = DenseLinear | Int8Linear  # x [N, Din] -> [N, Dout]
Norm = tuple[torch.Tensor | None, torch.Tensor | None, float]  # LayerNorm weight, bias, eps


@dataclass(frozen=True)
class _Layer:
    """One decoder layer's weights, laid out for :func:`fast_decode_step`."""

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
class FastStepWeights:
    """A decoder's weights laid out once for :func:`fast_decode_step`."""

    layers: list[_Layer]
    final_norm: Norm | None  # None: post-norm models have no final LayerNorm
    output: Linear  # [D, V]
    heads: int


def _norm(module: nn.Module) -> Norm:
    weight = None if module.weight is None else module.weight.detach()
    return weight, None if module.bias is None else module.bias.detach(), module.eps


def _eligible(model: nn.Module) -> bool:
    """Whether the fast step computes what the modules compute for ``model`` (linear layers aside: those are
    checked by :func:`~attnkit.models.transformer.fast_linear.fast_linear`)."""
    if model.training:
        return False
    for layer in model.decoder_layers:
        attentions = (layer.self_attention, layer.cross_attention)
        if any(a.rotary is not None or not a.fast_path for a in attentions):
            return False
        if layer.self_attention.k_proj.in_features != layer.self_attention.embed_dim:
            return False
        if not isinstance(layer.feed_forward[1], (nn.GELU, nn.ReLU)):
            return False
    return True


def _layer(layer: nn.Module) -> _Layer | None:
    first, activation, _, second = layer.feed_forward
    attention, cross = layer.self_attention, layer.cross_attention
    maps = [
        fast_linear(modules)
        for modules in (
            (attention.q_proj, attention.k_proj, attention.v_proj),
            (attention.out_proj,),
            (cross.q_proj,),
            (cross.out_proj,),
            (first,),
            (second,),
        )
    ]
    if any(m is None for m in maps):
        return None
    qkv, out_self, q_cross, out_cross, ff_in, ff_out = maps
    return _Layer(
        _norm(layer.norm_self),
        qkv,
        out_self,
        _norm(layer.norm_cross),
        q_cross,
        out_cross,
        _norm(layer.norm_ff),
        ff_in,
        activation,
        ff_out,
        layer.norm_first,
    )


@torch.no_grad()
def fast_step_weights(model: nn.Module) -> FastStepWeights | None:
    """``model``'s decoder weights laid out for :func:`fast_decode_step` (built anew at each call, so they always
    are the model's current weights), or None when the fast step does not apply (training mode, rotary
    positions, custom or mixed linear layers, a score other than scaled dot): then decode through the modules."""
    if not _eligible(model):
        return None
    layers = [_layer(layer) for layer in model.decoder_layers]
    output = fast_linear((model.output,))
    if output is None or any(layer is None for layer in layers):
        return None
    final = model.decoder_norm
    return FastStepWeights(
        layers,
        _norm(final) if isinstance(final, nn.LayerNorm) else None,
        output,
        model.decoder_layers[0].self_attention.num_heads,
    )


def _layer_norm(x: torch.Tensor, norm: Norm) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:], norm[0], norm[1], norm[2])


def fast_decode_step(
    weights: FastStepWeights,
    x: torch.Tensor,
    caches: Sequence[KVCache],
    memory_kv: Sequence[tuple[torch.Tensor, torch.Tensor]],
    memory_mask: torch.Tensor | None,
) -> torch.Tensor:
    """One new position per row through every decoder layer, the final norm and the output projection.

    Args:
        weights: from :func:`fast_step_weights`.
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
        q, k, v = layer.qkv(h).view(rows, 3, heads, 1, head_dim).unbind(1)  # 3 x [N, H, 1, Dh]
        keys, values = cache.update(k, v)  # [N, H, t, Dh]
        context = F.scaled_dot_product_attention(q, keys, values)  # [N, H, 1, Dh]
        x = x + layer.out_self(context.view(rows, dim))  # [N, D]
        x = x if pre else _layer_norm(x, layer.norm_self)
        h = _layer_norm(x, layer.norm_cross) if pre else x
        q = layer.q_cross(h).view(rows, heads, 1, head_dim)  # [N, H, 1, Dh]
        if cross_mask is None:
            context = F.scaled_dot_product_attention(q, memory_keys, memory_values)  # [N, H, 1, Dh]
        else:  # attnkit's wrapper: a row with no real source position gives zeros
            context, _ = scaled_dot_product_attention(q, memory_keys, memory_values, cross_mask)
        x = x + layer.out_cross(context.reshape(rows, dim))
        x = x if pre else _layer_norm(x, layer.norm_cross)
        h = _layer_norm(x, layer.norm_ff) if pre else x
        x = x + layer.ff_out(layer.activation(layer.ff_in(h)))  # [N, F] inside
        x = x if pre else _layer_norm(x, layer.norm_ff)
    if weights.final_norm is not None:
        x = _layer_norm(x, weights.final_norm)
    return weights.output(x)  # [N, V]
