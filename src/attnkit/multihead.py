"""Multi-head attention (layer 3): self- and cross-attention, causal masks, rotary positions, a KV cache.

:meth:`MultiHeadAttention.forward` reads as the textbook does: project the query, key and value and split them
into heads; rotate (rotary positions) and append to the cache; build one mask; attend; merge the heads and
project the output. Each step has a readable reference and a fast twin; :mod:`attnkit.multihead_fast` says which
runs when (in short: the fast twins, for the scaled-dot score with softmax, unless ``module.fast_path = False``).

Masks follow attnkit's polarity, True = attend (``key_mask``, ``query_mask``, ``attn_mask``). Torch's polarity
(True = padding or not allowed) is taken by ``key_padding_mask=`` (never mixed with attnkit's masks in one call), by
:meth:`MultiHeadAttention.forward_torch` and by the drop-in :meth:`MultiHeadAttention.from_torch` returns
(:mod:`attnkit.multihead_torch`).

Shape glossary:
    B  batch   H  heads   Tq  query positions   Tk  key positions (including cached ones)
    E  embed_dim   Dh  head_dim = E / H   N  rows (packed, or one per decoder row)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from attnkit import masks, multihead_fast
from attnkit.distributions import Distribution, Softmax
from attnkit.kv_cache import KVCache
from attnkit.multihead_dropin import TorchSignature
from attnkit.multihead_fast import merge_heads, split_heads
from attnkit.multihead_torch import from_torch_masks, key_mask_of_call, rename_torch_state_dict, to_torch_state_dict
from attnkit.outputs import AttentionOutput
from attnkit.positions import RotaryPositions
from attnkit.scores import ScaledDotScore, Score

__all__ = ["MultiHeadAttention", "TorchMultiheadAttention"]


class MultiHeadAttention(nn.Module):
    """Multi-head attention with one mask polarity (True = attend) and batch-first tensors.

    ``embed_dim`` is ``E`` and ``num_heads`` ``H`` (dividing ``E``); ``kdim``/``vdim`` default to ``E``; ``dropout``
    acts on the attention weights in training; ``score`` works on ``[B, H, T, Dh]`` tensors (default
    :class:`ScaledDotScore`, with :class:`Softmax`). ``q_proj``, ``k_proj``, ``v_proj``, ``out_proj`` are plain
    ``nn.Linear`` modules; ``load_state_dict`` also accepts an ``nn.MultiheadAttention`` state dict.
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
        self._fast_path_allowed = True

    @property
    def fast_path(self) -> bool:
        """True when the fast twins run: allowed (set ``fast_path = False`` for the references) and
        :meth:`computes_sdpa`, read at every call (so ``m.distribution = Sparsemax()`` is followed)."""
        return self._fast_path_allowed and self.computes_sdpa()

    @fast_path.setter
    def fast_path(self, allowed: bool) -> None:
        self._fast_path_allowed = bool(allowed)

    def computes_sdpa(self) -> bool:
        """True when this module's attention is exactly ``F.scaled_dot_product_attention``'s (the scaled dot score
        with softmax, of exactly those classes): the only case a fused kernel may stand in for it."""
        return type(self.score) is ScaledDotScore and type(self.distribution) is Softmax

    def new_cache(self, batch_size: int, max_len: int) -> KVCache:
        """A :class:`KVCache` for this module's self-attention: ``[batch_size, H, max_len, Dh]`` buffers in the
        dtype and on the device of its weights (a bf16 module gets a bf16 cache)."""
        weight = self.k_proj.weight
        return KVCache(batch_size, max_len, self.num_heads, self.head_dim, dtype=weight.dtype, device=weight.device)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor | None = None,
        value: torch.Tensor | None = None,
        *,
        key_mask: torch.Tensor | None = None,
        query_mask: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
        attn_bias: torch.Tensor | None = None,
        key_padding_mask: torch.Tensor | None = None,
        causal: bool = False,
        need_weights: bool = False,
        cache: KVCache | None = None,
        key_value: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> AttentionOutput:
        """Attend from ``query [B, Tq, E]`` over ``key [B, Tk, kdim]`` / ``value [B, Tk, vdim]`` (default ``key``;
        self-attention when ``key`` is None) -> ``AttentionOutput(context [B, Tq, E], weights [B, H, Tq, Tk] or
        None)``; the exact weights only with ``need_weights``.

        Args:
            key_mask: ``[B, Tk]`` bool, **True where the key is real** (with a cache: every step held after this).
            query_mask: ``[B, Tq]`` bool, True where the query is real; masked queries get zero output and weights.
            attn_mask: bool broadcastable to ``[B, H, Tq, Tk]``, **True = attend**; ``attn_bias``, a finite float
                one, is added to the scores.
            key_padding_mask: ``[B, Tk]`` bool in **torch's polarity, True = padding** (``key_mask=~it``), refused
                with attnkit's masks in one call.
            causal: add :func:`attnkit.masks.causal` (bottom-right aligned, right with a cache).
            cache: a :class:`KVCache` (self-attention only): this step's keys and values are appended and
                attention runs over everything held.
            key_value: keys and values from :meth:`project_key_value` (cross-attention to a memory many queries
                visit), instead of ``key``, ``value`` and ``cache``.
        """
        key_mask = key_mask_of_call(key_mask, key_padding_mask, query_mask=query_mask, attn_mask=attn_mask)
        key, value = self._check_call(query, key, value, query_mask, cache, key_value)
        steps = multihead_fast.steps(self)  # the one rule: fast twins, or the readable references
        extras = cache is not None or attn_mask is not None or attn_bias is not None or need_weights
        if steps.can_pack(self, query, key, value, query_mask, key_mask, extras):
            # self-attention over a padded batch: the real rows packed, each sequence attending to itself
            return AttentionOutput(multihead_fast.packed_self_attention(self, query, query_mask, causal), None)
        key_rows = key_mask if cache is None else None  # rows whose keys and values something reads
        q, k, v = steps.project(self, query, key, value, key_value, query_mask, key_rows)  # [B, H, T, Dh]
        if self.rotary is not None:
            offset = cache.size if cache is not None else 0
            q, k = self.rotary(q, offset=offset), self.rotary(k, offset=offset)
        if cache is not None:
            k, v = cache.update(k, v)  # [B, H, cached + Tq, Dh]
        mask = self._mask(q, k, key_mask, attn_mask, causal)  # [B|1, H|1, Tq|1, Tk] or None
        context, weights = steps.attend(self, q, k, v, mask, attn_bias, need_weights)  # [B, H, Tq, Dh]
        output = steps.output(self, merge_heads(context).to(query.dtype), query_mask)  # [B, Tq, E]
        if need_weights and query_mask is not None:
            weights = weights * query_mask[:, None, :, None]
        return AttentionOutput(output, weights if need_weights else None)

    def _check_call(
        self,
        query: torch.Tensor,
        key: torch.Tensor | None,
        value: torch.Tensor | None,
        query_mask: torch.Tensor | None,
        cache: KVCache | None,
        key_value: tuple[torch.Tensor, torch.Tensor] | None,
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """Raise ``ValueError`` for arguments that do not fit together; return ``(key, value)`` as attended
        (``query`` twice for self-attention, ``None`` twice with ``key_value``)."""
        if query.dim() != 3 or query.shape[-1] != self.embed_dim:
            raise ValueError(f"query must have shape [B, Tq, E={self.embed_dim}], got {tuple(query.shape)}")
        if query_mask is not None and masks.as_bool_mask(query_mask, "query_mask").shape != query.shape[:2]:
            raise ValueError(
                f"query_mask must have shape [B, Tq] = {tuple(query.shape[:2])}, got {tuple(query_mask.shape)}"
            )
        if key_value is not None:
            if key is not None or value is not None or cache is not None:
                raise ValueError("key_value= replaces key, value and cache: pass none of them with it")
            if self.rotary is not None:
                raise ValueError("key_value= is for cross-attention; this module rotates keys (rotary=)")
            return None, None
        if key is None:
            if value is not None:
                raise ValueError("value given without key: pass both for cross-attention, neither for self-attention")
            return query, query
        if cache is not None:
            raise ValueError("cache= is for self-attention (key=None); cross-attention keys do not grow")
        return key, key if value is None else value

    def _mask(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        key_mask: torch.Tensor | None,
        attn_mask: torch.Tensor | None,
        causal: bool,
    ) -> torch.Tensor | None:
        """One bool mask (True = attend) broadcastable to the scores ``[B, H, Tq, Tk]``, or None (nothing masked)."""
        batch, heads, tq, _ = q.shape
        tk = k.shape[2]
        # one query under the (bottom-right aligned) causal mask sees every key: nothing to mask
        causal_mask = masks.causal(tq, tk, device=q.device) if causal and tq > 1 else None
        combined = masks.combine(attn_mask, causal_mask)
        return masks.attention_mask((batch, heads, tq, tk), key_mask=key_mask, attn_mask=combined)

    def forward_torch(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
        need_weights: bool = True,
        attn_mask: torch.Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``nn.MultiheadAttention(batch_first=True).forward``: its arguments, defaults, masks and return value.

        **Torch's polarity**: a bool ``key_padding_mask [B, Tk]`` or ``attn_mask [Tq, Tk]`` / ``[B·H, Tq, Tk]`` is
        True where attention is *not* allowed; a float one is added to the scores (``-inf`` blocks). ``is_causal``
        is torch's hint that ``attn_mask`` is the causal mask (the mask itself is what is applied).

        Returns:
            ``(output [B, Tq, E], weights)``: weights ``[B, Tq, Tk]`` averaged over heads, ``[B, H, Tq, Tk]`` with
            ``average_attn_weights=False``, None without ``need_weights``. A row with nothing to attend to gives
            zeros here (torch gives NaN).
        """
        shape = (query.shape[0], self.num_heads, query.shape[1], key.shape[1])
        allowed, bias = from_torch_masks(key_padding_mask, attn_mask, is_causal, shape)
        out = MultiHeadAttention.forward(  # attnkit's own call, also on the drop-in (whose forward is torch's)
            self, query, key, value, attn_mask=allowed, attn_bias=bias, need_weights=need_weights
        )
        weights = out.weights.mean(dim=1) if need_weights and average_attn_weights else out.weights
        return out.context, weights

    # ------------------------------------------------------------------------------------------ projections
    def project_key_value(
        self, key: torch.Tensor, value: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values split into heads: key ``[B, Tk, kdim]``, value ``[B, Tk, vdim]`` -> two ``[B, H, Tk, Dh]``,
        for ``key_value=`` (attend to the same memory many times)."""
        value = key if value is None else value
        return split_heads(self.k_proj(key), self.num_heads), split_heads(self.v_proj(value), self.num_heads)

    def project_query_key_value(self, x: torch.Tensor) -> torch.Tensor:
        """Self-attention's three projections of x ``[..., E]`` in one matmul -> ``[..., 3E]`` (q, k, v in order);
        needs ``kdim = vdim = E``."""
        if self.k_proj.in_features != self.embed_dim or self.v_proj.in_features != self.embed_dim:
            raise ValueError("project_query_key_value needs kdim = vdim = embed_dim")
        return multihead_fast.project_packed(self, "qkv", x)

    def pack_projections(self) -> None:
        """Lay the query, key and value weights back to back in one storage (done on first use anyway):
        :func:`attnkit.multihead_fast.pack_projections`."""
        multihead_fast.pack_projections(self)

    # ------------------------------------------------------------------------------ packed and one-token calls
    def forward_packed(self, x: torch.Tensor, lengths: Sequence[int], *, causal: bool = False) -> torch.Tensor:
        """Self-attention within each of the packed sequences: x ``[N, E]``, ``lengths`` summing to N -> ``[N, E]``.

        Sequence ``b`` is rows ``sum(lengths[:b]) : sum(lengths[:b + 1])`` of ``x`` and attends to itself only
        (``causal``: to its own earlier rows). Equal to ``self(padded, key_mask=mask, causal=causal).context[mask]``
        for the right-padded batch ``padded[mask] = x``; rotary positions count from 0 in each sequence.
        """
        if x.dim() != 2 or x.shape[-1] != self.embed_dim:
            raise ValueError(f"x must have shape [N, E={self.embed_dim}], got {tuple(x.shape)}")
        if sum(lengths) != x.shape[0] or any(n < 0 for n in lengths):
            raise ValueError(f"lengths must be >= 0 and sum to N={x.shape[0]}, got {list(lengths)}")
        return multihead_fast.steps(self).forward_packed(self, x, lengths, causal)

    def decode_self(self, x: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """Causal self-attention of one new position per row over everything ``cache`` holds: x ``[N, E]`` ->
        ``[N, E]``; this position's keys and values are appended to ``cache``.

        The values of ``self(x[:, None], causal=True, cache=cache).context[:, 0]``, without forward's checks. No
        weights.
        """
        return multihead_fast.steps(self).decode_self(self, x, cache)

    def decode_cross(
        self, x: torch.Tensor, key_value: tuple[torch.Tensor, torch.Tensor], key_mask: torch.Tensor | None
    ) -> torch.Tensor:
        """Attention of one query per row over keys and values projected once (:meth:`project_key_value`):
        x ``[N, E]``, key_value ``([N, H, S, Dh], [N, H, S, Dh])``, key_mask ``[N, S]`` bool or None -> ``[N, E]``.

        The values of ``self(x[:, None], key_value=key_value, key_mask=key_mask).context[:, 0]``, as
        :meth:`decode_self`; a row with no real key gives zeros.
        """
        return multihead_fast.steps(self).decode_cross(self, x, key_value, key_mask)

    # ------------------------------------------------------------------------------------------ torch interop
    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs) -> None:
        """Rename an ``nn.MultiheadAttention`` state dict's keys to these (attnkit's own are left alone)."""
        rename_torch_state_dict(state_dict, prefix)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> TorchMultiheadAttention:
        """A drop-in for ``module``: a :class:`TorchMultiheadAttention` with its weights, giving its outputs.

        It takes torch's call in torch's polarity and ``module.batch_first``'s layout, so it can replace ``module``
        anywhere (torch's Transformer layers included). ``add_bias_kv`` and ``add_zero_attn`` are not supported.
        """
        if module.bias_k is not None or module.add_zero_attn:
            raise ValueError("from_torch does not support add_bias_kv or add_zero_attn")
        new = TorchMultiheadAttention(
            module.embed_dim,
            module.num_heads,
            kdim=module.kdim,
            vdim=module.vdim,
            dropout=module.dropout,
            bias=module.in_proj_bias is not None,
        )
        new.batch_first = module.batch_first
        new.load_state_dict(module.state_dict())
        new.train(module.training)
        return new.to(module.out_proj.weight.device, module.out_proj.weight.dtype)

    def to_torch(self) -> nn.MultiheadAttention:
        """torch's own ``nn.MultiheadAttention`` with this module's weights and training mode, giving its outputs
        (``batch_first`` as this module's, True for a plain one): a model trained with attnkit deploys without it.

        Raises ``ValueError`` when torch's module cannot compute this one: a score other than
        :class:`ScaledDotScore`, a distribution other than :class:`Softmax`, or rotary positions.
        """
        if not self.computes_sdpa() or self.rotary is not None:
            raise ValueError(
                "to_torch: nn.MultiheadAttention computes scaled dot scores with softmax and no rotary positions; "
                f"this module has {type(self.score).__name__}, {type(self.distribution).__name__}"
                + (" and rotary positions" if self.rotary is not None else "")
            )
        weight = self.out_proj.weight
        module = nn.MultiheadAttention(
            self.embed_dim,
            self.num_heads,
            dropout=self.dropout,
            bias=self.q_proj.bias is not None,
            kdim=self.k_proj.in_features,
            vdim=self.v_proj.in_features,
            batch_first=getattr(self, "batch_first", True),
            device=weight.device,
            dtype=weight.dtype,
        )
        state = MultiHeadAttention.state_dict(self)  # attnkit's keys (the drop-in's are torch's already)
        to_torch_state_dict(state, "", module._qkv_same_embed_dim)
        module.load_state_dict(state)
        return module.train(self.training)


class TorchMultiheadAttention(TorchSignature, MultiHeadAttention):
    """attnkit's multi-head attention behind ``nn.MultiheadAttention``'s call (what :meth:`MultiHeadAttention.from_torch`
    returns): ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)`` in **torch's polarity**, ``batch_first`` either way, the
    attributes torch's Transformer layers read (:class:`attnkit.multihead_dropin.TorchSignature`).

    Its ``state_dict`` is in torch's layout (it loads either). The rest is :class:`MultiHeadAttention`'s; the
    attnkit-polarity call stays reachable as ``MultiHeadAttention.forward(m, ...)``.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.register_state_dict_post_hook(_torch_layout)


def _torch_layout(module: TorchMultiheadAttention, state_dict: dict, prefix: str, local_metadata: dict) -> None:
    """State-dict post-hook of the drop-in: its projection keys in ``nn.MultiheadAttention``'s layout."""
    to_torch_state_dict(state_dict, prefix, module._same_dims())
