"""The fast paths of :class:`~attnkit.multihead.MultiHeadAttention`, each beside its slow, readable reference.

**Which path runs** — one rule, decided by :func:`steps` and nowhere else:

    A module runs its fast paths when ``module.fast_path`` is True — by default exactly when its score is
    :class:`~attnkit.scores.ScaledDotScore` and its distribution :class:`~attnkit.distributions.Softmax`, the pair
    ``F.scaled_dot_product_attention`` computes; set it to False to run the references — **and** torch.compile is
    not tracing the call (the fast paths read row counts and storage addresses on the host; the references are
    branch-free and compile into one graph). Otherwise every step below runs its reference.

=====================  ============================================================  =================================
what                   fast (:data:`FAST`)                                           reference (:data:`REFERENCE`)
=====================  ============================================================  =================================
projections            :func:`project_fused`: self-attention's q, k, v in one         :func:`project_reference`:
                       ``[E, 3E]`` matmul on weights packed in one storage; rows      ``q_proj``, ``k_proj``,
                       no output reads (masked queries, padded keys) skipped          ``v_proj`` on every row
attention              :func:`attend_sdpa`: PyTorch's fused kernel                    :func:`attend_reference`:
                       (:func:`attnkit.functional.sdpa.scaled_dot_product_attention`) ``distribution(score) @ v``
output projection      :func:`output_fused`: masked query rows skipped                :func:`output_reference`
the whole call, when   :func:`packed_self_attention`: the real rows packed, each      the three steps above, with
:func:`can_pack`       sequence attending to itself, no mask                          the masks
``forward_packed``     :func:`forward_packed_fused`: one projection, SDPA per         :func:`forward_packed_reference`:
                       sequence                                                       the module on each sequence
one-token decoding     :func:`decode_self_lean`, :func:`decode_cross_lean`: no        :func:`decode_self_reference`,
                       argument checks, routing or mask building                      :func:`decode_cross_reference`
=====================  ============================================================  =================================

:func:`can_pack` holds for self-attention whose ``query_mask`` equals its ``key_mask``, with no cache,
``attn_mask``, ``attn_bias``, rotary positions or weights asked for (the usual encoder over a padded batch).
Tests hold every pair equal in values and gradients (``tests/core/test_multihead.py``).

Packed weights: the fast projections read the q, k, v weights (and biases) in place from one storage
(:mod:`attnkit.functional.packed_linear`), laid out by :func:`pack_projections` on first use and again whenever they
get new storage (``.to()``, ``load_state_dict(assign=True)``); parameters and ``state_dict`` keys stay the same.

Shape glossary:
    B  batch   H  heads   Tq  query positions   Tk  key positions (including cached ones)   E  embed_dim
    Dh  head_dim = E / H   N  rows (packed, or one per decoder row)   S  source positions   n  one sequence
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch
import torch.nn.functional as F
from torch import nn

from attnkit.functional.packed_linear import gather_rows, on_rows, packed_linear, packed_view
from attnkit.functional.sdpa import scaled_dot_product_attention
from attnkit.kv_cache import KVCache

__all__ = ["FAST", "REFERENCE", "Steps", "can_pack", "pack_projections", "project_packed", "steps"]


class Heads(Protocol):
    """What these functions read of a :class:`~attnkit.multihead.MultiHeadAttention` (named here rather than
    imported, so that the module and its fast paths do not import each other)."""

    q_proj: nn.Linear
    k_proj: nn.Linear
    v_proj: nn.Linear
    out_proj: nn.Linear
    embed_dim: int
    num_heads: int
    head_dim: int
    dropout: float
    training: bool
    fast_path: bool
    score: nn.Module
    distribution: nn.Module
    rotary: nn.Module | None

    def __call__(self, query: torch.Tensor, *args: Any, **kwargs: Any) -> Any: ...


def split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """``[B, T, H·Dh]`` -> ``[B, H, T, Dh]`` (a view)."""
    batch, length, dim = x.shape
    return x.view(batch, length, heads, dim // heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """``[B, H, T, Dh]`` -> ``[B, T, H·Dh]``."""
    batch, heads, length, head_dim = x.shape
    return x.transpose(1, 2).reshape(batch, length, heads * head_dim)


def _dropout(module: Heads) -> float:
    return module.dropout if module.training else 0.0


def _same_rows(a: torch.Tensor | None, b: torch.Tensor | None) -> bool:
    return a is b or (a is not None and b is not None and a.shape == b.shape and bool(torch.equal(a, b)))


def _self_attention_dims(module: Heads) -> bool:
    return module.k_proj.in_features == module.v_proj.in_features == module.embed_dim


# ------------------------------------------------------------------------------------ packed projection weights
_VIEWS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # module -> {letters: (key, packed views)}


def pack_projections(module: Heads) -> None:
    """Lay the query, key and value weights (and biases) back to back in one storage, values unchanged.

    Parameters stay the same objects (only their ``.data`` moves). A no-op where they are packed already, differ
    in input size, are not plain parameters (e.g. under a parametrization) or differ in dtype or device.
    """
    if not _self_attention_dims(module):
        return
    for name in ("weight", "bias"):
        params = [getattr(proj, name) for proj in (module.q_proj, module.k_proj, module.v_proj)]
        if not all(isinstance(p, nn.Parameter) for p in params) or packed_view(params) is not None:
            continue
        if len({(p.dtype, p.device) for p in params}) != 1:
            continue
        with torch.inference_mode(False), torch.no_grad():  # ordinary tensors, even when called in inference mode
            packed = torch.cat([p.detach() for p in params])  # [3E(, E)]
        for param, part in zip(params, packed.split([p.shape[0] for p in params]), strict=True):
            param.data = part


def _packed(module: Heads, letters: str) -> tuple[list, list | None, tuple]:
    """``(weights, biases or None, (packed weight view, packed bias view))`` of the projections ``letters``.

    The views are kept between calls (outside the module: copies and pickles never carry them) and rebuilt when
    any parameter's ``data_ptr`` changes, packing the parameters first if they are not (a kept view holds the old
    storage alive, so new storage can never reuse its address).
    """
    projections = [{"q": module.q_proj, "k": module.k_proj, "v": module.v_proj}[c] for c in letters]
    weights, biases, key = _parameters(projections)
    kept = _VIEWS.setdefault(module, {})
    cached = kept.get(letters)
    if cached is None or cached[0] != key:
        pack_projections(module)
        weights, biases, key = _parameters(projections)
        cached = key, (packed_view(weights), None if biases is None else packed_view(biases))
        kept[letters] = cached
    return weights, biases, cached[1]


def _parameters(projections: list[nn.Linear]) -> tuple[list, list | None, tuple]:
    """The projections' weights, biases (or None) and the key of their storage (dtype and addresses)."""
    weights = [p.weight for p in projections]
    biases = None if projections[0].bias is None else [p.bias for p in projections]
    return weights, biases, (weights[0].dtype, *(t.data_ptr() for t in (*weights, *(biases or ()))))


def project_packed(module: Heads, letters: str, x: torch.Tensor) -> torch.Tensor:
    """x ``[..., E]`` through the projections named by ``letters`` (``"qkv"``, ``"kv"``) at once ->
    ``[..., len(letters)·E]``, reading the packed weights in place (``torch.cat`` of them where not packed)."""
    projections = [getattr(module, f"{c}_proj") for c in letters]
    if not all(isinstance(p.weight, torch.Tensor) for p in projections):  # int8 layers (attnkit.models.quantize)
        return torch.cat([p(x) for p in projections], dim=-1)
    weights, biases, packed = _packed(module, letters)
    return packed_linear(x, weights, biases, packed)


# ------------------------------------------------------------------------------------------------ projections
def project_reference(
    module: Heads,
    query: torch.Tensor,
    key: torch.Tensor | None,
    value: torch.Tensor | None,
    key_value: tuple[torch.Tensor, torch.Tensor] | None,
    query_rows: torch.Tensor | None,
    key_rows: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``q_proj(query)``, ``k_proj(key)``, ``v_proj(value)`` on every row, split into heads ->
    q ``[B, H, Tq, Dh]``, k, v ``[B, H, Tk, Dh]`` (``key_value``: already projected; the row masks are unused)."""
    heads = module.num_heads
    q = split_heads(module.q_proj(query), heads)
    if key_value is not None:
        return q, *key_value
    return q, split_heads(module.k_proj(key), heads), split_heads(module.v_proj(value), heads)


def project_fused(
    module: Heads,
    query: torch.Tensor,
    key: torch.Tensor | None,
    value: torch.Tensor | None,
    key_value: tuple[torch.Tensor, torch.Tensor] | None,
    query_rows: torch.Tensor | None,
    key_rows: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`project_reference`'s values at the rows ``query_rows`` / ``key_rows`` keep (``[B, T]`` bool, None:
    all), zeros at the others (no output reads them).

    Self-attention (``key`` and ``value`` are ``query``): one ``[E, 3E]`` matmul on the packed weights for the
    rows both keep — one gradient for the input, no ``torch.cat`` — or q on its rows and k, v on theirs.
    Cross-attention: q on its rows, k and v on every row.
    """
    heads = module.num_heads
    if key is query and value is query and _self_attention_dims(module):
        if _same_rows(query_rows, key_rows):
            q, k, v = on_rows(lambda x: project_packed(module, "qkv", x), query, query_rows).chunk(3, dim=-1)
        else:
            q = on_rows(module.q_proj, query, query_rows)
            k, v = on_rows(lambda x: project_packed(module, "kv", x), query, key_rows).chunk(2, dim=-1)
        return split_heads(q, heads), split_heads(k, heads), split_heads(v, heads)
    q = split_heads(on_rows(module.q_proj, query, query_rows), heads)
    if key_value is not None:
        return q, *key_value
    return q, split_heads(module.k_proj(key), heads), split_heads(module.v_proj(value), heads)


# -------------------------------------------------------------------------------------------------- attention
def attend_reference(
    module: Heads,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    bias: torch.Tensor | None,
    need_weights: bool,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``distribution(score(q, k) + bias, mask) @ v``: q ``[B, H, Tq, Dh]``, k, v ``[B, H, Tk, Dh]`` ->
    ``(context [B, H, Tq, Dh], weights [B, H, Tq, Tk])`` (the weights before dropout)."""
    scores = module.score(q, k)  # [B, H, Tq, Tk]
    weights = module.distribution(scores if bias is None else scores + bias, mask, query=q)
    dropout = _dropout(module)
    return F.dropout(weights, dropout, training=dropout > 0) @ v.to(weights.dtype), weights


def attend_sdpa(
    module: Heads,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    bias: torch.Tensor | None,
    need_weights: bool,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """:func:`attend_reference` for the scaled-dot score and softmax, on PyTorch's fused kernel (the weights,
    when asked, computed exactly alongside: :mod:`attnkit.functional.sdpa`)."""
    return scaled_dot_product_attention(q, k, v, mask, bias=bias, dropout=_dropout(module), need_weights=need_weights)


# ------------------------------------------------------------------------------------------ output projection
def output_reference(module: Heads, context: torch.Tensor, query_mask: torch.Tensor | None) -> torch.Tensor:
    """``out_proj`` on every row of context ``[B, Tq, E]``, masked query rows zeroed -> ``[B, Tq, E]``."""
    output = module.out_proj(context)
    return output if query_mask is None else output * query_mask[..., None].to(output.dtype)


def output_fused(module: Heads, context: torch.Tensor, query_mask: torch.Tensor | None) -> torch.Tensor:
    """:func:`output_reference`'s values, with ``out_proj`` on the kept rows only."""
    return on_rows(module.out_proj, context, query_mask)


# ------------------------------------------------------------------------------------ packed self-attention
def can_pack(
    module: Heads,
    query: torch.Tensor,
    key: torch.Tensor | None,
    value: torch.Tensor | None,
    query_mask: torch.Tensor | None,
    key_mask: torch.Tensor | None,
    extras: bool,
) -> bool:
    """True for self-attention whose queries and keys share one padding mask, with no ``extras`` (a cache,
    ``attn_mask``, ``attn_bias`` or weights asked for) and no rotary positions: :func:`packed_self_attention`."""
    return (
        not extras
        and key is query
        and value is query
        and module.rotary is None
        and query_mask is not None
        and _self_attention_dims(module)
        and _same_rows(query_mask, key_mask)
    )


def packed_self_attention(module: Heads, query: torch.Tensor, mask: torch.Tensor, causal: bool) -> torch.Tensor:
    """Self-attention of query ``[B, T, E]`` whose queries and keys share ``mask [B, T]``, via
    :func:`forward_packed_fused` on the real rows -> ``[B, T, E]``, zeros at padding. Reference: the three steps
    with ``key_mask=mask, query_mask=mask``."""
    batch, length, embed_dim = query.shape
    index = mask.reshape(-1).nonzero().squeeze(1)  # [N]: row-major, so each sequence's rows stay together
    lengths = mask.sum(1).tolist()
    packed = forward_packed_fused(module, gather_rows(query.reshape(-1, embed_dim), index), lengths, causal)
    out = packed.new_zeros(batch * length, embed_dim).index_copy(0, index, packed)  # [B·T, E]
    return out.view(batch, length, embed_dim)


def forward_packed_reference(module: Heads, x: torch.Tensor, lengths: Sequence[int], causal: bool) -> torch.Tensor:
    """The module on each packed sequence alone: x ``[N, E]`` -> ``[N, E]`` (nothing to attend for ``n = 0``)."""
    parts = [module(part[None], causal=causal).context[0] if len(part) else part for part in x.split(list(lengths))]
    return torch.cat(parts) if parts else x[:0]


def forward_packed_fused(module: Heads, x: torch.Tensor, lengths: Sequence[int], causal: bool) -> torch.Tensor:
    """:func:`forward_packed_reference`'s values: one ``[N, E] x [E, 3E]`` projection on the packed weights, the
    fused SDPA kernel once per sequence with no mask, one output projection. The regrouping uses ``split``/``cat``
    (slicing would add a full-size zero gradient per sequence in backward)."""
    if not _self_attention_dims(module):
        return forward_packed_reference(module, x, lengths, causal)
    heads, head_dim, embed_dim = module.num_heads, module.head_dim, module.embed_dim
    qkv = project_packed(module, "qkv", x)  # [N, 3E]
    queries, keys, values = (t.split(list(lengths)) for t in qkv.split(embed_dim, dim=-1))
    contexts = []
    for q, k, v, n in zip(queries, keys, values, lengths, strict=True):
        if n == 0:
            contexts.append(q)  # [0, E]
            continue
        q, k, v = (t.view(1, n, heads, head_dim).transpose(1, 2) for t in (q, k, v))  # [1, H, n, Dh]
        if module.rotary is not None:
            q, k = module.rotary(q), module.rotary(k)
        context = F.scaled_dot_product_attention(q, k, v, dropout_p=_dropout(module), is_causal=causal and n > 1)
        contexts.append(context.transpose(1, 2).reshape(n, embed_dim))  # [n, E]
    return module.out_proj(torch.cat(contexts) if contexts else x[:0])  # [N, E]


# --------------------------------------------------------------------------------------- one-token decoding
def decode_self_reference(module: Heads, x: torch.Tensor, cache: KVCache) -> torch.Tensor:
    """``module(x[:, None], causal=True, cache=cache).context[:, 0]``: x ``[N, E]`` -> ``[N, E]``."""
    return module(x[:, None], causal=True, cache=cache).context[:, 0]


def decode_self_lean(module: Heads, x: torch.Tensor, cache: KVCache) -> torch.Tensor:
    """:func:`decode_self_reference`'s values without forward's checks, routing and mask building, which a
    decoder would pay once per layer and token."""
    if not _self_attention_dims(module):
        return decode_self_reference(module, x, cache)
    rows, heads, head_dim = x.shape[0], module.num_heads, module.head_dim
    q, k, v = project_packed(module, "qkv", x).view(rows, 3, heads, 1, head_dim).unbind(1)  # 3 x [N, H, 1, Dh]
    if module.rotary is not None:
        q, k = module.rotary(q, offset=cache.size), module.rotary(k, offset=cache.size)
    keys, values = cache.update(k, v)  # [N, H, t, Dh]: one query sees every cached key, nothing to mask
    context = F.scaled_dot_product_attention(q, keys, values, dropout_p=_dropout(module))  # [N, H, 1, Dh]
    return module.out_proj(context.view(rows, module.embed_dim))  # [N, E]


def decode_cross_reference(
    module: Heads, x: torch.Tensor, key_value: tuple[torch.Tensor, torch.Tensor], key_mask: torch.Tensor | None
) -> torch.Tensor:
    """``module(x[:, None], key_value=key_value, key_mask=key_mask).context[:, 0]``: x ``[N, E]`` -> ``[N, E]``."""
    return module(x[:, None], key_value=key_value, key_mask=key_mask).context[:, 0]


def decode_cross_lean(
    module: Heads, x: torch.Tensor, key_value: tuple[torch.Tensor, torch.Tensor], key_mask: torch.Tensor | None
) -> torch.Tensor:
    """:func:`decode_cross_reference`'s values with less work per call (a row with no real key gives zeros)."""
    if module.rotary is not None:
        return decode_cross_reference(module, x, key_value, key_mask)  # forward's error: rotary keys are self's
    rows = x.shape[0]
    q = module.q_proj(x).view(rows, module.num_heads, 1, module.head_dim)  # [N, H, 1, Dh]
    mask = None if key_mask is None else key_mask[:, None, None, :]  # [N, 1, 1, S]
    context, _ = scaled_dot_product_attention(q, *key_value, mask, dropout=_dropout(module))  # [N, H, 1, Dh]
    return module.out_proj(context.view(rows, module.embed_dim))  # [N, E]


# ------------------------------------------------------------------------------------------------ the rule
@dataclass(frozen=True)
class Steps:
    """One implementation of each step of :meth:`MultiHeadAttention.forward` and of its other entry points."""

    project: Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor]]
    attend: Callable[..., tuple[torch.Tensor, torch.Tensor | None]]
    output: Callable[[Heads, torch.Tensor, torch.Tensor | None], torch.Tensor]
    can_pack: Callable[..., bool]
    forward_packed: Callable[[Heads, torch.Tensor, Sequence[int], bool], torch.Tensor]
    decode_self: Callable[[Heads, torch.Tensor, KVCache], torch.Tensor]
    decode_cross: Callable[..., torch.Tensor]


REFERENCE = Steps(
    project_reference,
    attend_reference,
    output_reference,
    lambda *args: False,
    forward_packed_reference,
    decode_self_reference,
    decode_cross_reference,
)
FAST = Steps(
    project_fused, attend_sdpa, output_fused, can_pack, forward_packed_fused, decode_self_lean, decode_cross_lean
)


def steps(module: Heads) -> Steps:
    """The rule: :data:`FAST` when ``module.fast_path`` is True and torch.compile is not tracing, else
    :data:`REFERENCE` (see the module docstring)."""
    return FAST if module.fast_path and not torch.compiler.is_compiling() else REFERENCE
