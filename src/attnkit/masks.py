"""Boolean attention masks (layer 1). **True means "this position takes part"** (keep / attend), everywhere.

This is the polarity of SDPA's boolean ``attn_mask`` and of Hugging Face's ``attention_mask``; it is the
opposite of ``nn.MultiheadAttention``'s ``key_padding_mask``.

Shape glossary:
    B  batch            T   sequence length (max_len)
    Tq query positions  Tk  key positions
    H  heads

Every function raises ``ValueError`` naming the offending argument and the shapes involved.
"""

from __future__ import annotations

import functools
import operator

import torch

__all__ = ["as_bool_mask", "attention_mask", "causal", "check_mask", "combine", "lengths_to_mask", "window"]


def as_bool_mask(mask: torch.Tensor, name: str) -> torch.Tensor:
    """Return ``mask`` if it is a boolean tensor, else raise ``ValueError`` naming ``name``.

    Float masks are refused on purpose: ``0/1`` floats, ``0/-inf`` additive masks and inverted padding masks
    are all in circulation, and guessing which one was meant silently flips results.
    """
    if not isinstance(mask, torch.Tensor):
        raise ValueError(f"{name} must be a torch.BoolTensor (True = attend), got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise ValueError(
            f"{name} must be a torch.BoolTensor (True = attend), got dtype {mask.dtype} with shape "
            f"{tuple(mask.shape)}; convert 0/1 masks with `mask.bool()` and padding masks with `~padding`"
        )
    return mask


def check_mask(mask: torch.Tensor, name: str, target_shape: torch.Size | tuple[int, ...]) -> torch.Tensor:
    """Check that boolean ``mask`` broadcasts to ``target_shape`` and return it."""
    as_bool_mask(mask, name)
    target_shape = tuple(target_shape)
    try:
        broadcast = torch.broadcast_shapes(mask.shape, target_shape)
    except RuntimeError:
        broadcast = None
    if broadcast != target_shape:
        raise ValueError(f"{name} with shape {tuple(mask.shape)} does not broadcast to shape {target_shape}")
    return mask


def lengths_to_mask(lengths: torch.Tensor, max_len: int | None = None) -> torch.Tensor:
    """Mask of the first ``lengths[b]`` positions of each row: integer ``lengths [B]`` -> ``[B, T]`` bool,
    ``mask[b, t] = t < lengths[b]`` (``T = max_len``, default ``lengths.max()``)."""
    if not isinstance(lengths, torch.Tensor):
        lengths = torch.as_tensor(lengths)
    if lengths.dim() != 1:
        raise ValueError(f"lengths must be 1-D [B], got shape {tuple(lengths.shape)}")
    if lengths.is_floating_point() or lengths.dtype == torch.bool:
        raise ValueError(f"lengths must be an integer tensor, got dtype {lengths.dtype}")
    if lengths.numel() and int(lengths.min()) < 0:
        raise ValueError(f"lengths must be >= 0, got min {int(lengths.min())} in shape {tuple(lengths.shape)}")
    longest = int(lengths.max()) if lengths.numel() else 0
    if max_len is None:
        max_len = longest
    elif longest > max_len:
        raise ValueError(f"lengths has a value {longest} beyond max_len={max_len} (shape {tuple(lengths.shape)})")
    positions = torch.arange(max_len, device=lengths.device)
    return positions[None, :] < lengths[:, None]  # [B, T]


def causal(tq: int, tk: int | None = None, *, device: torch.device | str | None = None) -> torch.Tensor:
    """Causal mask, bottom-right aligned: the last query sees every key, query ``i`` sees keys ``<= i + tk - tq``.

    With ``tk > tq`` (a KV cache holding ``tk - tq`` earlier steps) the new queries see the whole past.
    This is *not* the top-left alignment of SDPA's ``is_causal`` when ``tq != tk``. Returns ``[Tq, Tk]`` bool.
    """
    tk = tq if tk is None else tk
    if tq < 0 or tk < 0:
        raise ValueError(f"causal needs tq, tk >= 0, got tq={tq}, tk={tk}")
    query_pos = torch.arange(tq, device=device)[:, None] + (tk - tq)  # [Tq, 1] absolute position
    key_pos = torch.arange(tk, device=device)[None, :]  # [1, Tk]
    return key_pos <= query_pos  # [Tq, Tk]


def window(
    tq: int,
    tk: int,
    left: int,
    right: int,
    *,
    centers: torch.Tensor | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """Local window: query ``i`` sees keys ``j`` with ``c_i - left <= j <= c_i + right`` -> ``[Tq, Tk]`` bool
    (``[..., Tq, Tk]`` when ``centers`` has leading dims).

    ``centers [..., Tq]`` (floats are rounded) default to the bottom-right aligned query positions ``i + tk - tq``,
    as for :func:`causal`.
    """
    if left < 0 or right < 0:
        raise ValueError(f"window needs left, right >= 0, got left={left}, right={right}")
    if centers is None:
        centers = torch.arange(tq, device=device) + (tk - tq)  # [Tq]
    else:
        if centers.shape[-1] != tq:
            raise ValueError(f"centers with shape {tuple(centers.shape)} must end in Tq={tq}")
        centers = centers.round().long() if centers.is_floating_point() else centers
        device = centers.device
    key_pos = torch.arange(tk, device=device)  # [Tk]
    offset = key_pos - centers[..., None]  # [..., Tq, Tk]
    return (offset >= -left) & (offset <= right)


def combine(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """AND of the given boolean masks after broadcasting; ``None`` entries are skipped.

    Returns ``None`` when every entry is ``None`` (nothing is masked).
    """
    present = [m for m in masks if m is not None]
    for i, m in enumerate(present):
        as_bool_mask(m, f"masks[{i}]")
    if not present:
        return None
    try:
        shape = torch.broadcast_shapes(*(m.shape for m in present))
    except RuntimeError as err:
        shapes = ", ".join(str(tuple(m.shape)) for m in present)
        raise ValueError(f"masks with shapes {shapes} do not broadcast together") from err
    result = functools.reduce(operator.and_, present)
    return result.expand(shape) if result.shape != shape else result


def attention_mask(
    scores_shape: torch.Size | tuple[int, ...],
    *,
    key_mask: torch.Tensor | None = None,
    query_mask: torch.Tensor | None = None,
    attn_mask: torch.Tensor | None = None,
) -> torch.Tensor | None:
    """One mask that broadcasts to ``scores_shape = [B, (H,) Tq, Tk]`` (not expanded), or ``None`` if nothing is
    masked, from ``key_mask [B, Tk]`` (True where the key is real), ``query_mask [B, Tq]`` (masked queries get no
    weights) and ``attn_mask`` broadcastable to ``scores_shape``."""
    scores_shape = tuple(scores_shape)
    batch, tq, tk = scores_shape[0], scores_shape[-2], scores_shape[-1]
    middle = (1,) * (len(scores_shape) - 3)  # heads, if any
    parts = []
    if key_mask is not None:
        if as_bool_mask(key_mask, "key_mask").shape != (batch, tk):
            raise ValueError(f"key_mask must have shape [B, Tk] = {(batch, tk)}, got {tuple(key_mask.shape)}")
        parts.append(key_mask.view(batch, *middle, 1, tk))
    if query_mask is not None:
        if as_bool_mask(query_mask, "query_mask").shape != (batch, tq):
            raise ValueError(f"query_mask must have shape [B, Tq] = {(batch, tq)}, got {tuple(query_mask.shape)}")
        parts.append(query_mask.view(batch, *middle, tq, 1))
    if attn_mask is not None:
        parts.append(check_mask(attn_mask, "attn_mask", scores_shape))
    return functools.reduce(operator.and_, parts) if parts else None
