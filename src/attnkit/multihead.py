"""Multi-head attention (layer 3): self- and cross-attention, causal masks, rotary positions, a KV cache.

With the default scaled-dot score and softmax, the context comes from ``F.scaled_dot_product_attention``
and, when ``need_weights=True``, the exact per-head weights are computed alongside (see
:mod:`attnkit.functional.sdpa`). Any other score or distribution runs the generic, readable path
``distribution(score(q, k), mask) @ v`` — also the reference the fast path is tested against (set
``module.fast_path = False`` to force it).

Projections: the query, key and value weights (and biases) live back to back in one storage, so self-attention
runs one ``[B·T, E] x [E, 3E]`` matmul on them in place — no ``torch.cat`` of the weights in forward, no split
of their gradient in backward (:mod:`attnkit.functional.packed_linear`). Rows that no output depends on are
skipped: padded keys (``key_mask``) get no key/value projection, padded queries (``query_mask``) no query or
output projection. The
readable reference — three ``nn.Linear`` calls on every row — runs with ``module.fused_projections = False``.

Packed self-attention: when the queries and keys share one padding mask (``query_mask`` equal to ``key_mask``, the
usual self-attention over a padded batch), the real rows are packed into ``[N, E]`` and each sequence attends to
itself with no mask at all (:meth:`MultiHeadAttention.forward_packed`): padding then costs neither projection nor
attention work. The padded path above is its reference.

Shape glossary:
    B  batch   H  heads   Tq  query positions   Tk  key positions (including cached ones)
    E  embed_dim   Dh  head_dim = E / H   N  rows actually projected   P  output rows of packed projections
    n  one packed sequence's length
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from attnkit import masks
from attnkit.distributions import Distribution, Softmax
from attnkit.functional.packed_linear import gather_rows, on_rows, packed_linear, packed_view
from attnkit.functional.sdpa import scaled_dot_product_attention
from attnkit.kv_cache import KVCache
from attnkit.outputs import AttentionOutput
from attnkit.positions import RotaryPositions
from attnkit.scores import ScaledDotScore, Score

__all__ = ["MultiHeadAttention"]


def _pack_after_load(module: MultiHeadAttention, _incompatible_keys: object) -> None:
    module.pack_projections()  # load_state_dict(assign=True) puts new tensors in place


def _same_rows(a: torch.Tensor | None, b: torch.Tensor | None) -> bool:
    return a is b or (a is not None and b is not None and a.shape == b.shape and torch.equal(a, b))


class MultiHeadAttention(nn.Module):
    """Multi-head attention with one mask polarity (True = attend) and batch-first tensors.

    Args:
        embed_dim: ``E``, query (and output) size.
        num_heads: ``H``; must divide ``E``.
        kdim, vdim: key and value input sizes (default ``E``).
        dropout: dropout on the attention weights (training only).
        bias: biases on the input and output projections.
        score: a :class:`~attnkit.scores.Score` on ``[B, H, T, Dh]`` tensors (default :class:`ScaledDotScore`).
        distribution: a :class:`~attnkit.distributions.Distribution` (default :class:`Softmax`).
        rotary: optional :class:`~attnkit.positions.RotaryPositions` applied to queries and keys.

    ``q_proj``, ``k_proj``, ``v_proj``, ``out_proj`` are ordinary ``nn.Linear`` modules (their names are the
    ``state_dict`` keys); when ``kdim = vdim = E`` the first three share one storage (kept so across ``.to()``,
    ``load_state_dict(assign=True)``, copies and pickling).
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        *,
        kdim: int | None = None,
        vdim: int | None = None,
        dropout: float = 0.0,
        bias: bool = True,
        score: Score | None = None,
        distribution: Distribution | None = None,
        rotary: RotaryPositions | None = None,
    ) -> None:
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim={embed_dim} is not divisible by num_heads={num_heads}")
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = nn.Linear(kdim or embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(vdim or embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.dropout = dropout
        self.score = score if score is not None else ScaledDotScore()
        self.distribution = distribution if distribution is not None else Softmax()
        self.rotary = rotary
        self._same_input_dims = (kdim or embed_dim) == embed_dim and (vdim or embed_dim) == embed_dim
        # The SDPA path computes exactly ScaledDotScore + Softmax; anything else takes the generic path.
        self.fast_path = type(self.score) is ScaledDotScore and type(self.distribution) is Softmax
        # Packed projections and skipped rows; False: the readable reference (nn.Linear on every row).
        self.fused_projections = True
        self._packed_views: dict[str, tuple] = {}  # letters -> (parameters' data_ptrs, packed views)
        self.pack_projections()
        self.register_load_state_dict_post_hook(_pack_after_load)

    # ------------------------------------------------------------------------------------------- packing
    def _projection_params(self, name: str) -> list[torch.Tensor | None]:
        return [getattr(proj, name) for proj in (self.q_proj, self.k_proj, self.v_proj)]

    def pack_projections(self) -> None:
        """Lay the query, key and value weights (and biases) back to back in one storage, values unchanged.

        Called on construction and after ``.to()``, ``load_state_dict`` and unpickling; parameters stay the same
        objects (only their ``.data`` moves), so optimizers keep tracking them. A no-op where they are packed
        already, differ in input size, or are not plain parameters (e.g. under a parametrization).
        """
        if not self._same_input_dims:
            return
        for name in ("weight", "bias"):
            params = self._projection_params(name)
            if not all(isinstance(p, nn.Parameter) for p in params) or packed_view(params) is not None:
                continue
            if len({(p.dtype, p.device) for p in params}) != 1:
                continue
            with torch.no_grad():
                packed = torch.cat([p.detach() for p in params])  # [3E(, E)]
            for param, part in zip(params, packed.split([p.shape[0] for p in params]), strict=True):
                param.data = part

    def _apply(self, fn, recurse: bool = True):  # .to(), .half(), .cuda(): one new storage per parameter
        module = super()._apply(fn, recurse)
        self.pack_projections()
        return module

    def __setstate__(self, state: dict) -> None:  # copy.deepcopy and pickle clone each parameter apart
        super().__setstate__(state)
        self.pack_projections()

    def __getstate__(self) -> dict:
        return {**super().__getstate__(), "_packed_views": {}}  # views of this module's storage: rebuilt

    def _packed_projections(self, letters: str):
        """``(weights, biases or None, (packed weight view, packed bias view))`` of the projections ``letters``.

        The views are kept between calls and rebuilt when any parameter's ``data_ptr`` changes (a kept view holds
        the old storage alive, so new storage can never reuse its address).
        """
        modules = [{"q": self.q_proj, "k": self.k_proj, "v": self.v_proj}[c] for c in letters]
        weights = [m.weight for m in modules]
        biases = None if modules[0].bias is None else [m.bias for m in modules]
        key = (weights[0].dtype, *(t.data_ptr() for t in (*weights, *(biases or ()))))
        cached = self._packed_views.get(letters)
        if cached is None or cached[0] != key:
            cached = key, (packed_view(weights), None if biases is None else packed_view(biases))
            self._packed_views[letters] = cached
        return weights, biases, cached[1]

    def _project(self, x: torch.Tensor, letters: str, rows: torch.Tensor | None) -> torch.Tensor:
        """``x [B, T, E]`` through the projections named by ``letters`` (``"qkv"``, ``"kv"``, ``"q"``) at once, on
        ``rows`` only -> ``[B, T, len(letters)·E]``."""
        if letters == "q":
            return on_rows(self.q_proj, x, rows)
        if letters == "qkv":
            return on_rows(self.project_query_key_value, x, rows)
        weights, biases, packed = self._packed_projections(letters)
        return on_rows(lambda t: packed_linear(t, weights, biases, packed), x, rows)

    # ------------------------------------------------------------------------------------------- forward
    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, _ = x.shape
        return x.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)  # [B, H, T, Dh]

    def project_query_key_value(self, x: torch.Tensor) -> torch.Tensor:
        """Self-attention's three projections of x ``[..., E]`` in one matmul -> ``[..., 3E]`` (q, k, v in order).

        Reads the packed weights in place (see the module docstring); needs ``kdim = vdim = E``.
        """
        if not self._same_input_dims:
            raise ValueError("project_query_key_value needs kdim = vdim = embed_dim")
        weights, biases, packed = self._packed_projections("qkv")
        return packed_linear(x, weights, biases, packed)

    def project_key_value(
        self, key: torch.Tensor, value: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values split into heads: key ``[B, Tk, kdim]``, value ``[B, Tk, vdim]`` -> two ``[B, H, Tk, Dh]``.

        Compute them once and pass them as ``key_value=`` to attend to the same memory many times.
        """
        value = key if value is None else value
        return self._split_heads(self.k_proj(key)), self._split_heads(self.v_proj(value))

    def forward_packed(self, x: torch.Tensor, lengths: Sequence[int], *, causal: bool = False) -> torch.Tensor:
        """Self-attention within each of the packed sequences: x ``[N, E]``, ``lengths`` summing to N -> ``[N, E]``.

        Sequence ``b`` is rows ``sum(lengths[:b]) : sum(lengths[:b + 1])`` of ``x`` and attends to itself only
        (``causal``: to its own earlier rows). Equal to ``self(padded, key_mask=mask, causal=causal).context[mask]``
        for the right-padded batch ``padded[mask] = x``; rotary positions count from 0 in each sequence.

        With the SDPA path (``fast_path``): one ``[N, E] x [E, 3E]`` projection on the packed weights, the fused
        SDPA kernel once per sequence with no mask, one output projection. The q/k/v split and the regrouping use
        ``split``/``cat``, whose backward is one ``cat``/``split`` (slicing would add a full-size zero gradient per
        sequence). Otherwise (another score, or ``fast_path = False``): the module on each sequence alone.
        Attention dropout (``dropout`` > 0 while training) sends PyTorch's SDPA to its slow math kernel.
        """
        if x.dim() != 2 or x.shape[-1] != self.embed_dim:
            raise ValueError(f"x must have shape [N, E={self.embed_dim}], got {tuple(x.shape)}")
        if sum(lengths) != x.shape[0] or any(n < 0 for n in lengths):
            raise ValueError(f"lengths must be >= 0 and sum to N={x.shape[0]}, got {list(lengths)}")
        if not (self.fast_path and self._same_input_dims and self.fused_projections):
            # the reference: the module on each sequence alone, [n, E] each (nothing to attend for n = 0)
            parts = [self(part[None], causal=causal).context[0] if len(part) else part for part in x.split(lengths)]
            return torch.cat(parts) if parts else x[:0]
        heads, head_dim, embed_dim = self.num_heads, self.head_dim, self.embed_dim
        qkv = self.project_query_key_value(x)  # [N, 3E]: the packed weights, read in place
        queries, keys, values = (t.split(list(lengths)) for t in qkv.split(embed_dim, dim=-1))
        dropout = self.dropout if self.training else 0.0
        contexts = []
        for q, k, v, n in zip(queries, keys, values, lengths, strict=True):
            if n == 0:
                contexts.append(q)  # [0, E]
                continue
            q, k, v = (t.view(1, n, heads, head_dim).transpose(1, 2) for t in (q, k, v))  # [1, H, n, Dh]
            if self.rotary is not None:
                q, k = self.rotary(q), self.rotary(k)
            context = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=causal and n > 1)
            contexts.append(context.transpose(1, 2).reshape(n, embed_dim))  # [n, E]
        context = torch.cat(contexts) if contexts else x[:0]  # [N, E]
        return self.out_proj(context)

    def _packed_forward(self, query: torch.Tensor, mask: torch.Tensor, causal: bool) -> torch.Tensor:
        """Self-attention of query ``[B, T, E]`` whose queries and keys share ``mask [B, T]``, via
        :meth:`forward_packed` on the real rows -> ``[B, T, E]`` with zeros at padding."""
        batch, length, _ = query.shape
        index = mask.reshape(-1).nonzero().squeeze(1)  # [N]: row-major, so each sequence's rows stay together
        lengths = mask.sum(1).tolist()
        packed = self.forward_packed(gather_rows(query.reshape(-1, self.embed_dim), index), lengths, causal=causal)
        out = packed.new_zeros(batch * length, self.embed_dim).index_copy(0, index, packed)  # [B·T, E]
        return out.view(batch, length, self.embed_dim)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor | None = None,
        value: torch.Tensor | None = None,
        *,
        key_mask: torch.Tensor | None = None,
        query_mask: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
        causal: bool = False,
        need_weights: bool = False,
        cache: KVCache | None = None,
        key_value: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> AttentionOutput:
        """Attend from ``query`` over ``key``/``value`` (self-attention when ``key`` is ``None``).

        Args:
            query: ``[B, Tq, E]``.
            key: ``[B, Tk, kdim]``; ``None`` for self-attention (then ``value`` must be ``None`` too).
            value: ``[B, Tk, vdim]``; defaults to ``key``.
            key_mask: ``[B, Tk]`` bool, True where the key is real (with a cache: all steps held after this one).
                In self-attention without a cache, padded keys are not projected at all (nothing reads them).
            query_mask: ``[B, Tq]`` bool, True where the query is real. Masked queries get a zero output and zero
                weights, and their rows are skipped by the projections. In self-attention with ``key_mask``
                equal to it (and no cache, ``attn_mask``, rotary positions or weights asked for), the real rows are
                packed and each sequence attends to itself unmasked (:meth:`forward_packed`): padding then costs
                no work at all.
            attn_mask: bool broadcastable to ``[B, H, Tq, Tk]``, True = attend.
            causal: add :func:`attnkit.masks.causal` (bottom-right aligned, right with a cache).
            need_weights: also return the exact weights ``[B, H, Tq, Tk]``.
            cache: a :class:`KVCache` (self-attention only): this step's keys and values are appended and
                attention runs over everything held.
            key_value: keys and values already projected by :meth:`project_key_value` (cross-attention to a
                memory that many queries visit, e.g. a decoder's source); ``key`` and ``value`` must be None.

        Returns:
            ``AttentionOutput(context [B, Tq, E], weights [B, H, Tq, Tk] or None)``.
        """
        if query.dim() != 3 or query.shape[-1] != self.embed_dim:
            raise ValueError(f"query must have shape [B, Tq, E={self.embed_dim}], got {tuple(query.shape)}")
        if key_value is not None:
            if key is not None or value is not None or cache is not None:
                raise ValueError("key_value= replaces key, value and cache: pass none of them with it")
            if self.rotary is not None:
                raise ValueError("key_value= is for cross-attention; this module rotates keys (rotary=)")
        elif key is None:
            if value is not None:
                raise ValueError("value given without key: pass both for cross-attention, neither for self-attention")
            key = value = query
        elif cache is not None:
            raise ValueError("cache= is for self-attention (key=None); cross-attention keys do not grow")
        value = key if value is None else value

        if query_mask is not None and masks.as_bool_mask(query_mask, "query_mask").shape != query.shape[:2]:
            raise ValueError(
                f"query_mask must have shape [B, Tq] = {tuple(query.shape[:2])}, got {tuple(query_mask.shape)}"
            )
        offset = cache.size if cache is not None else 0
        fused = self.fused_projections
        if (
            fused
            and self.fast_path
            and key is query
            and value is query
            and self._same_input_dims
            and cache is None
            and attn_mask is None
            and self.rotary is None
            and not need_weights
            and query_mask is not None
            and key_mask is not None
            and _same_rows(query_mask, masks.as_bool_mask(key_mask, "key_mask"))
        ):
            # self-attention over a padded batch: pack the real rows, attend within each sequence, no mask
            return AttentionOutput(self._packed_forward(query, query_mask, causal), None)
        if key_value is None and key is query and value is query and self._same_input_dims and fused:
            # self-attention: one [B·T, E] x [E, 3E] matmul on the packed weights and one gradient for the input;
            # padded keys (without a cache) skip the key/value projection, padded queries the query projection
            key_rows = key_mask if cache is None else None
            if _same_rows(query_mask, key_rows):
                q, k, v = self._project(query, "qkv", query_mask).chunk(3, dim=-1)  # 3 x [B, T, E]
            else:
                q = self._project(query, "q", query_mask)
                k, v = self._project(query, "kv", key_rows).chunk(2, dim=-1)
            q, k, v = (self._split_heads(t) for t in (q, k, v))  # [B, H, T, Dh]
        else:
            q = self._split_heads(self._project(query, "q", query_mask) if fused else self.q_proj(query))
            k, v = key_value if key_value is not None else self.project_key_value(key, value)  # [B, H, Tk, Dh]
        if self.rotary is not None:
            q, k = self.rotary(q, offset=offset), self.rotary(k, offset=offset)
        if cache is not None:
            k, v = cache.update(k, v)  # [B, H, offset + Tq, Dh]

        batch, tq, tk = query.shape[0], q.shape[2], k.shape[2]
        scores_shape = (batch, self.num_heads, tq, tk)
        # one query under the (bottom-right aligned) causal mask sees every key: nothing to mask
        causal_mask = masks.causal(tq, tk, device=query.device) if causal and tq > 1 else None
        mask = None
        if key_mask is not None or attn_mask is not None or causal_mask is not None:
            combined = masks.combine(attn_mask, causal_mask)
            mask = masks.attention_mask(scores_shape, key_mask=key_mask, attn_mask=combined)  # [B|1, H|1, Tq|1, Tk]
        dropout = self.dropout if self.training else 0.0
        if self.fast_path:
            context, weights = scaled_dot_product_attention(q, k, v, mask, dropout=dropout, need_weights=need_weights)
        else:
            weights = self.distribution(self.score(q, k), mask, query=q)  # [B, H, Tq, Tk]
            context = F.dropout(weights, dropout, training=dropout > 0) @ v.to(weights.dtype)
        context = context.transpose(1, 2).reshape(batch, tq, self.embed_dim).to(query.dtype)  # [B, Tq, E]
        if fused:
            output = on_rows(self.out_proj, context, query_mask)
        else:
            output = self.out_proj(context)
            output = output if query_mask is None else output * query_mask[..., None].to(output.dtype)
        if need_weights and query_mask is not None:
            weights = weights * query_mask[:, None, :, None]
        return AttentionOutput(output, weights if need_weights else None)

    # ------------------------------------------------------------------------------------------- decoding
    def decode_self(self, x: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """Causal self-attention of one new position per row over everything ``cache`` holds: x ``[N, E]`` ->
        ``[N, E]``; this position's keys and values are appended to ``cache``.

        The values of ``self(x[:, None], causal=True, cache=cache).context[:, 0]`` (the tests hold them equal)
        without :meth:`forward`'s argument checks, mask building and routing, which a decoder pays once per layer
        and token (about 6% of a greedy step in ``bench.decoding``). No weights, no dropout (inference); a module
        off the SDPA fast path or with ``fused_projections = False`` takes :meth:`forward`.
        """
        if not (self.fast_path and self.fused_projections and self._same_input_dims) or self.training:
            return self(x[:, None], causal=True, cache=cache).context[:, 0]
        rows, heads, head_dim = x.shape[0], self.num_heads, self.head_dim
        q, k, v = self.project_query_key_value(x).view(rows, 3, heads, 1, head_dim).unbind(1)  # 3 x [N, H, 1, Dh]
        if self.rotary is not None:
            q, k = self.rotary(q, offset=cache.size), self.rotary(k, offset=cache.size)
        keys, values = cache.update(k, v)  # [N, H, t, Dh]: one query sees every cached key, nothing to mask
        context = F.scaled_dot_product_attention(q, keys, values)  # [N, H, 1, Dh]
        return self.out_proj(context.view(rows, self.embed_dim))  # [N, E]

    def decode_cross(
        self, x: torch.Tensor, key_value: tuple[torch.Tensor, torch.Tensor], key_mask: torch.Tensor | None
    ) -> torch.Tensor:
        """Attention of one query per row over keys and values projected once (:meth:`project_key_value`):
        x ``[N, E]``, key_value ``([N, H, S, Dh], [N, H, S, Dh])``, key_mask ``[N, S]`` bool or None -> ``[N, E]``.

        The values of ``self(x[:, None], key_value=key_value, key_mask=key_mask).context[:, 0]`` with less work
        per call, as :meth:`decode_self`; a row with no real key gives zeros.
        """
        if not (self.fast_path and self.fused_projections) or self.training or self.rotary is not None:
            return self(x[:, None], key_value=key_value, key_mask=key_mask).context[:, 0]  # (rotary: its error)
        rows = x.shape[0]
        q = self.q_proj(x).view(rows, self.num_heads, 1, self.head_dim)  # [N, H, 1, Dh]
        mask = None if key_mask is None else key_mask[:, None, None, :]  # [N, 1, 1, S]
        context, _ = scaled_dot_product_attention(q, *key_value, mask)  # [N, H, 1, Dh]
        return self.out_proj(context.view(rows, self.embed_dim))  # [N, E]

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> MultiHeadAttention:
        """Copy an ``nn.MultiheadAttention``'s weights so both give the same outputs.

        Remember the polarity flip: torch's ``key_padding_mask`` is True at *padding*; pass ``key_mask=~it``.
        attnkit is always batch-first. ``add_bias_kv`` and ``add_zero_attn`` are not supported.
        """
        if module.bias_k is not None or module.add_zero_attn:
            raise ValueError("from_torch does not support add_bias_kv or add_zero_attn")
        has_bias = module.in_proj_bias is not None
        new = cls(
            module.embed_dim,
            module.num_heads,
            kdim=module.kdim,
            vdim=module.vdim,
            dropout=module.dropout,
            bias=has_bias,
        )
        with torch.no_grad():
            if module._qkv_same_embed_dim:
                weights = module.in_proj_weight.chunk(3)
            else:
                weights = (module.q_proj_weight, module.k_proj_weight, module.v_proj_weight)
            biases = module.in_proj_bias.chunk(3) if has_bias else (None, None, None)
            for proj, weight, bias in zip((new.q_proj, new.k_proj, new.v_proj), weights, biases, strict=True):
                proj.weight.copy_(weight)
                if bias is not None:
                    proj.bias.copy_(bias)
            new.out_proj.weight.copy_(module.out_proj.weight)
            if has_bias:
                new.out_proj.bias.copy_(module.out_proj.bias)
        return new.to(module.out_proj.weight.device, module.out_proj.weight.dtype)
