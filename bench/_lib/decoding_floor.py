"""The floor of cached greedy decoding in eager PyTorch: a step's kernels and nothing else.

:func:`floor_greedy` decodes exactly what :func:`attnkit.decoding.greedy` decodes with
:class:`attnkit.models.TransformerSeq2Seq` (pre-norm layers, sinusoidal positions, no ``<eos>``), but as one flat
loop over the kernels a cached step cannot do without — per layer three LayerNorms, the fused q/k/v matmul, the
cache write, two ``scaled_dot_product_attention`` calls, four more matmuls, GELU and three residual adds; then the
final LayerNorm, the output matmul and ``argmax`` — on weights laid out once, caches allocated once, and no
modules, checks, masks, scores or bookkeeping. No library built on eager kernels can take a step in less time, so
``peer / floor`` bounds the speed-up any eager implementation of cached decoding can reach on this machine. It is
a measuring device for ``bench.decoding``, not a decoder: it knows one architecture and skips every check.

Shape glossary: B rows, H heads, Dh head dim, D model dim, S source positions, T steps, V vocabulary.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from attnkit.models.transformer.seq2seq import TransformerSeq2Seq


@dataclass(frozen=True)
class _Layer:
    """One pre-norm decoder layer's parameters, laid out for ``F.linear`` / ``F.layer_norm``."""

    norm_self: tuple[torch.Tensor, torch.Tensor | None]
    qkv: tuple[torch.Tensor, torch.Tensor]  # [3D, D], [3D]
    out_self: tuple[torch.Tensor, torch.Tensor | None]
    norm_cross: tuple[torch.Tensor, torch.Tensor | None]
    q_cross: tuple[torch.Tensor, torch.Tensor | None]
    out_cross: tuple[torch.Tensor, torch.Tensor | None]
    norm_ff: tuple[torch.Tensor, torch.Tensor | None]
    ff_in: tuple[torch.Tensor, torch.Tensor | None]
    ff_out: tuple[torch.Tensor, torch.Tensor | None]
    eps: float


def _pair(module: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor | None]:
    return module.weight.detach(), None if module.bias is None else module.bias.detach()


def _layers(model: TransformerSeq2Seq) -> list[_Layer]:
    layers = []
    for layer in model.decoder_layers:
        if not layer.norm_first:
            raise ValueError("the decoding floor is written for pre-norm layers")
        attention, cross = layer.self_attention, layer.cross_attention
        qkv_weight = torch.cat([attention.q_proj.weight, attention.k_proj.weight, attention.v_proj.weight]).detach()
        qkv_bias = torch.cat([attention.q_proj.bias, attention.k_proj.bias, attention.v_proj.bias]).detach()
        first, _, _, second = layer.feed_forward
        layers.append(
            _Layer(
                _pair(layer.norm_self),
                (qkv_weight, qkv_bias),
                _pair(attention.out_proj),
                _pair(layer.norm_cross),
                _pair(cross.q_proj),
                _pair(cross.out_proj),
                _pair(layer.norm_ff),
                _pair(first),
                _pair(second),
                layer.norm_self.eps,
            )
        )
    return layers


class FloorDecoder:
    """The floor's state for one batch: weights laid out once, the cross-attention keys and values of ``memory
    [B, S, D]`` (no padding) projected once, the position table; ``model``: pre-norm, sinusoidal positions, GELU
    feed-forward, eval mode (as in ``bench.decoding``). :meth:`step` is one step's kernels; :meth:`decode` runs
    ``steps`` of them (with any function of :meth:`step`'s signature, e.g. a compiled one)."""

    @torch.no_grad()
    def __init__(self, model: TransformerSeq2Seq, memory: torch.Tensor, steps: int) -> None:
        self.batch, _, self.dim = memory.shape
        self.heads = model.decoder_layers[0].self_attention.num_heads
        self.head_dim, self.steps = self.dim // self.heads, steps
        self.layers = _layers(model)
        self.memory_kv = []  # per layer: cross-attention keys and values [B, H, S, Dh], projected once
        for layer in model.decoder_layers:
            keys, values = layer.cross_attention.project_key_value(memory)
            self.memory_kv.append((keys.contiguous(), values.contiguous()))
        self.positions = model.target_positions(torch.zeros(1, steps, self.dim), offset=0)[0]  # [T, D] (the table)
        self.embedding = model.target_embedding.weight.detach() * model.embed_scale  # [V, D]
        self.final_norm, self.final_eps = _pair(model.decoder_norm), model.decoder_norm.eps
        self.output = _pair(model.output)

    def step(self, tokens: torch.Tensor, t: int, caches: list[torch.Tensor]) -> torch.Tensor:
        """Step ``t``: tokens ``[B]`` in, the next greedy tokens ``[B]`` out; writes position ``t`` of every
        layer's cache ``[2, B, H, T, Dh]`` (keys, values)."""
        batch, dim, heads, head_dim = self.batch, self.dim, self.heads, self.head_dim
        x = self.embedding[tokens] + self.positions[t]  # [B, D]
        for layer, cache, (memory_keys, memory_values) in zip(self.layers, caches, self.memory_kv, strict=True):
            h = F.layer_norm(x, (dim,), *layer.norm_self, layer.eps)
            q, k, v = F.linear(h, *layer.qkv).view(batch, 3, heads, 1, head_dim).unbind(1)  # 3 x [B, H, 1, Dh]
            cache[0, :, :, t : t + 1].copy_(k)
            cache[1, :, :, t : t + 1].copy_(v)
            context = F.scaled_dot_product_attention(q, cache[0, :, :, : t + 1], cache[1, :, :, : t + 1])
            x = x + F.linear(context.reshape(batch, dim), *layer.out_self)  # [B, D]
            h = F.layer_norm(x, (dim,), *layer.norm_cross, layer.eps)
            q = F.linear(h, *layer.q_cross).view(batch, heads, 1, head_dim)  # [B, H, 1, Dh]
            context = F.scaled_dot_product_attention(q, memory_keys, memory_values)  # [B, H, 1, Dh]
            x = x + F.linear(context.reshape(batch, dim), *layer.out_cross)
            h = F.layer_norm(x, (dim,), *layer.norm_ff, layer.eps)
            x = x + F.linear(F.gelu(F.linear(h, *layer.ff_in)), *layer.ff_out)
        logits = F.linear(F.layer_norm(x, (dim,), *self.final_norm, self.final_eps), *self.output)  # [B, V]
        return logits.argmax(-1)

    def step_static(
        self, tokens: torch.Tensor, t: torch.Tensor, caches: list[torch.Tensor], positions: torch.Tensor
    ) -> torch.Tensor:
        """:meth:`step` with every shape fixed, for ``torch.compile(dynamic=False)``: the step ``t`` is a 0-d long
        tensor (not a Python int, so a new step is no new graph), the cache ``[2, B, H, T, Dh]`` is written at ``t``
        with ``index_copy_`` and attended over in full under the mask ``positions [T] <= t`` (steps not yet
        written are masked out, so the tokens equal :meth:`step`'s)."""
        batch, dim, heads, head_dim = self.batch, self.dim, self.heads, self.head_dim
        at = t.view(1)
        x = self.embedding[tokens] + self.positions.index_select(0, at)  # [B, D]
        visible = (positions <= t)[None]  # [1, T]
        for layer, cache, (memory_keys, memory_values) in zip(self.layers, caches, self.memory_kv, strict=True):
            h = F.layer_norm(x, (dim,), *layer.norm_self, layer.eps)
            q, k, v = F.linear(h, *layer.qkv).view(batch, 3, heads, 1, head_dim).unbind(1)  # 3 x [B, H, 1, Dh]
            cache[0].index_copy_(2, at, k)
            cache[1].index_copy_(2, at, v)
            context = F.scaled_dot_product_attention(q, cache[0], cache[1], attn_mask=visible)  # [B, H, 1, Dh]
            x = x + F.linear(context.reshape(batch, dim), *layer.out_self)  # [B, D]
            h = F.layer_norm(x, (dim,), *layer.norm_cross, layer.eps)
            q = F.linear(h, *layer.q_cross).view(batch, heads, 1, head_dim)  # [B, H, 1, Dh]
            context = F.scaled_dot_product_attention(q, memory_keys, memory_values)  # [B, H, 1, Dh]
            x = x + F.linear(context.reshape(batch, dim), *layer.out_cross)
            h = F.layer_norm(x, (dim,), *layer.norm_ff, layer.eps)
            x = x + F.linear(F.gelu(F.linear(h, *layer.ff_in)), *layer.ff_out)
        logits = F.linear(F.layer_norm(x, (dim,), *self.final_norm, self.final_eps), *self.output)  # [B, V]
        return logits.argmax(-1)

    @torch.no_grad()
    def decode_static(self, step: Callable[..., torch.Tensor] | None = None, bos_id: int = 1) -> torch.Tensor:
        """``steps`` greedy tokens ``[B, steps]`` through ``step`` (default :meth:`step_static`), zeroed caches."""
        step = step or self.step_static
        caches = [torch.zeros(2, self.batch, self.heads, self.steps, self.head_dim) for _ in self.layers]
        positions = torch.arange(self.steps)  # [T]; positions[t] is step t as a 0-d tensor
        tokens = torch.full((self.batch,), bos_id, dtype=torch.long)
        out = torch.empty(self.batch, self.steps, dtype=torch.long)
        for t in range(self.steps):
            tokens = step(tokens, positions[t], caches, positions)
            out[:, t] = tokens
        return out

    @torch.no_grad()
    def decode(self, step: Callable[..., torch.Tensor] | None = None, bos_id: int = 1) -> torch.Tensor:
        """``steps`` greedy tokens ``[B, steps]`` through ``step`` (default :meth:`step`), fresh caches."""
        step = step or self.step
        caches = [torch.empty(2, self.batch, self.heads, self.steps, self.head_dim) for _ in self.layers]
        tokens = torch.full((self.batch,), bos_id, dtype=torch.long)
        out = torch.empty(self.batch, self.steps, dtype=torch.long)
        for t in range(self.steps):
            tokens = step(tokens, t, caches)
            out[:, t] = tokens
        return out


def floor_greedy(model: TransformerSeq2Seq, memory: torch.Tensor, steps: int, bos_id: int = 1) -> torch.Tensor:
    """``steps`` greedy tokens ``[B, steps]`` from ``memory [B, S, D]`` (no padding), kernels only.

    ``model``: pre-norm, sinusoidal positions, GELU feed-forward, eval mode (as in ``bench.decoding``).
    """
    return FloorDecoder(model, memory, steps).decode(bos_id=bos_id)
