"""``nn.MultiheadAttention`` interoperability for :class:`~attnkit.multihead.MultiHeadAttention` (layer 3).

Two conventions meet here: **torch's** ``key_padding_mask`` and boolean ``attn_mask`` are True where attention is
**not** allowed (its float masks are added to the scores, ``-inf`` blocks); **attnkit's** ``key_mask`` and
``attn_mask`` are True where attention **is** allowed, everywhere in the library (an additive float goes apart, as
``attn_bias``).

State dicts: torch keeps the q, k, v projections in one ``in_proj_weight [3E, E]`` and ``in_proj_bias [3E]`` (or
``{q,k,v}_proj_weight`` when ``kdim``/``vdim`` differ from ``E``); attnkit keeps three ``nn.Linear``.

Shape glossary:
    B  batch   H  heads   Tq  query positions   Tk  key positions   E  embed_dim
"""

from __future__ import annotations

import functools
import operator

import torch

__all__ = [
    "combine_bias",
    "from_torch_mask",
    "from_torch_masks",
    "key_mask_from_padding",
    "key_mask_of_call",
    "refuse_mixed_conventions",
    "rename_torch_state_dict",
    "to_torch_state_dict",
]

_PROJECTIONS = ("q_proj", "k_proj", "v_proj")


def rename_torch_state_dict(state_dict: dict[str, torch.Tensor], prefix: str = "") -> None:
    """Rewrite, in place, an ``nn.MultiheadAttention`` state dict's keys under ``prefix`` into attnkit's.

    ``in_proj_weight [3E, E]`` becomes ``q_proj.weight``, ``k_proj.weight``, ``v_proj.weight`` (its three row
    blocks, as views), ``in_proj_bias [3E]`` the three biases, ``{q,k,v}_proj_weight`` their ``.weight``.
    attnkit's own keys are left alone, so a state dict of either kind loads. Raises ``ValueError`` for
    ``bias_k``/``bias_v`` (``add_bias_kv``), which attnkit does not have.
    """
    if prefix + "bias_k" in state_dict or prefix + "bias_v" in state_dict:
        raise ValueError(f"state dict at {prefix or 'the top level'!r} has bias_k/bias_v (add_bias_kv): not supported")
    if prefix + "in_proj_weight" in state_dict:
        weight = state_dict.pop(prefix + "in_proj_weight")
        if weight.shape[0] % 3:
            raise ValueError(f"{prefix}in_proj_weight must have 3·E rows, got shape {tuple(weight.shape)}")
        for name, part in zip(_PROJECTIONS, weight.chunk(3), strict=True):
            state_dict[f"{prefix}{name}.weight"] = part
    for name in _PROJECTIONS:
        if prefix + name + "_weight" in state_dict:
            state_dict[f"{prefix}{name}.weight"] = state_dict.pop(prefix + name + "_weight")
    if prefix + "in_proj_bias" in state_dict:
        bias = state_dict.pop(prefix + "in_proj_bias")
        for name, part in zip(_PROJECTIONS, bias.chunk(3), strict=True):
            state_dict[f"{prefix}{name}.bias"] = part


def to_torch_state_dict(state_dict: dict[str, torch.Tensor], prefix: str, same_dims: bool) -> None:
    """Rewrite, in place, attnkit's projection keys under ``prefix`` into ``nn.MultiheadAttention``'s layout (the
    inverse of :func:`rename_torch_state_dict`): ``in_proj_weight [3E, E]`` when ``same_dims`` (kdim = vdim = E),
    else ``{q,k,v}_proj_weight``; ``in_proj_bias [3E]``; ``out_proj.*`` unchanged."""
    names = [f"{prefix}{name}" for name in _PROJECTIONS]
    if names[0] + ".weight" not in state_dict:
        return
    weights = [state_dict.pop(name + ".weight") for name in names]
    if same_dims:
        state_dict[prefix + "in_proj_weight"] = torch.cat(weights)
    else:
        for name, weight in zip(names, weights, strict=True):
            state_dict[name + "_weight"] = weight
    if names[0] + ".bias" in state_dict:
        state_dict[prefix + "in_proj_bias"] = torch.cat([state_dict.pop(name + ".bias") for name in names])


def from_torch_mask(
    mask: torch.Tensor | None, name: str, shape: tuple[int, int, int, int]
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """One of torch's masks as attnkit's ``(allowed, bias)``, both broadcastable to ``shape = [B, H, Tq, Tk]``.

    ``mask`` (``key_padding_mask [B, Tk]`` or ``attn_mask [Tq, Tk]`` / ``[B·H, Tq, Tk]``, named by ``name``) is in
    torch's convention: bool True = not allowed; float = added to the scores (``-inf`` blocks). ``allowed`` is True
    = attend; ``bias`` holds the float mask with its blocked entries 0. Either may be None.
    """
    if mask is None:
        return None, None
    batch, heads, tq, tk = shape
    if name == "key_padding_mask":
        expected = {(batch, tk): (batch, 1, 1, tk)}
    else:
        expected = {(tq, tk): (tq, tk), (batch * heads, tq, tk): (batch, heads, tq, tk)}
    if tuple(mask.shape) not in expected:
        wanted = " or ".join(str(list(s)) for s in expected)
        raise ValueError(f"{name} must have shape {wanted} (torch's convention), got {tuple(mask.shape)}")
    mask = mask.reshape(expected[tuple(mask.shape)])
    if mask.dtype == torch.bool:
        return ~mask, None
    if not mask.is_floating_point():
        raise ValueError(f"{name} must be bool (True = not allowed, torch's polarity) or float, got {mask.dtype}")
    allowed = mask != float("-inf")
    return allowed, mask.masked_fill(~allowed, 0.0)


def from_torch_masks(
    key_padding_mask: torch.Tensor | None,
    attn_mask: torch.Tensor | None,
    is_causal: bool,
    shape: tuple[int, int, int, int],
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """torch's two masks of one call as attnkit's ``(attn_mask, attn_bias)``, broadcastable to ``shape``.

    ``attn_mask`` comes back in attnkit's polarity (True = attend), the float parts summed into ``attn_bias``.
    ``is_causal`` is torch's hint that ``attn_mask`` is the causal mask: the mask itself is applied, and as in
    torch the hint without a mask is refused.
    """
    if is_causal and attn_mask is None:
        raise ValueError("is_causal is a hint that attn_mask is causal: pass attn_mask too (as torch requires)")
    key_allowed, key_bias = from_torch_mask(key_padding_mask, "key_padding_mask", shape)  # [B, 1, 1, Tk]
    allowed, bias = from_torch_mask(attn_mask, "attn_mask", shape)  # [Tq, Tk] or [B, H, Tq, Tk]
    if key_allowed is None or allowed is None:
        combined = allowed if key_allowed is None else key_allowed
    else:
        combined = key_allowed & allowed
    return combined, combine_bias(key_bias, bias)


def refuse_mixed_conventions(torch_names: dict[str, object], attnkit_names: dict[str, object]) -> None:
    """Raise ``ValueError`` when one call passes masks in both conventions (torch's True = blocked, attnkit's
    True = attend): such a call has most likely flipped one of them. Entries that are None / False are unused."""
    theirs = [name for name, value in torch_names.items() if value is not None and value is not False]
    ours = [name for name, value in attnkit_names.items() if value is not None and value is not False]
    if theirs and ours:
        raise ValueError(
            f"this call mixes torch's mask convention ({', '.join(theirs)}: True = not allowed) with attnkit's "
            f"({', '.join(ours)}: True = attend): use one of them"
        )


def combine_bias(*biases: torch.Tensor | None) -> torch.Tensor | None:
    """Sum of the given additive biases (broadcasting), ``None`` entries skipped; ``None`` if there are none."""
    present = [b for b in biases if b is not None]
    return functools.reduce(operator.add, present) if present else None


def key_mask_of_call(
    key_mask: torch.Tensor | None,
    key_padding_mask: torch.Tensor | None,
    *,
    query_mask: torch.Tensor | None,
    attn_mask: torch.Tensor | None,
) -> torch.Tensor | None:
    """attnkit's ``key_mask`` ``[B, Tk]`` for a call of attnkit's multi-head forward, which may name the padding in
    torch's polarity (``key_padding_mask``) but then none of attnkit's masks (see :func:`refuse_mixed_conventions`)."""
    refuse_mixed_conventions(
        {"key_padding_mask": key_padding_mask}, {"key_mask": key_mask, "query_mask": query_mask, "attn_mask": attn_mask}
    )
    return key_mask_from_padding(key_mask, key_padding_mask)


def key_mask_from_padding(key_mask: torch.Tensor | None, key_padding_mask: torch.Tensor | None) -> torch.Tensor | None:
    """attnkit's ``key_mask`` (True = real key) from it or from torch's bool ``key_padding_mask`` (True = pad).

    Raises ``ValueError`` if both are given: they say the same thing in opposite polarities, and a call passing
    both has most likely flipped one.
    """
    if key_padding_mask is None:
        return key_mask
    if key_mask is not None:
        raise ValueError(
            "pass key_mask (attnkit: True = real key) or key_padding_mask (torch: True = padding), not both"
        )
    if not isinstance(key_padding_mask, torch.Tensor) or key_padding_mask.dtype != torch.bool:
        raise ValueError(
            "key_padding_mask must be a torch.BoolTensor in torch's polarity (True = padding), got "
            f"{getattr(key_padding_mask, 'dtype', type(key_padding_mask).__name__)}; a float (additive) one goes "
            "to forward_torch"
        )
    return ~key_padding_mask
