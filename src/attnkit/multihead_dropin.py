"""``nn.MultiheadAttention``'s own face for attnkit's multi-head attention (layer 3): what ``from_torch`` returns.

:class:`TorchSignature`, mixed into :class:`attnkit.multihead.TorchMultiheadAttention`, gives the module torch's
``forward`` (**torch's polarity** for torch's argument names) and the attributes torch's Transformer layers read.
attnkit's own keywords (``key_mask``, ``query_mask``: True = attend) keep attnkit's meaning; one call may use one
convention, not both.

Shape glossary:
    B  batch   H  heads   Tq (L)  query positions   Tk (S)  key positions   E  embed_dim
"""

from __future__ import annotations

import torch

from attnkit.multihead_torch import from_torch_mask, from_torch_masks, refuse_mixed_conventions
from attnkit.outputs import AttentionOutput

__all__ = ["TorchSignature"]


class TorchSignature:
    """torch's call and attributes over attnkit's :class:`~attnkit.multihead.MultiHeadAttention` (a mixin: the
    class it is mixed into provides ``q_proj``/``k_proj``/``v_proj``/``out_proj`` and attnkit's ``forward``)."""

    batch_first: bool = True
    bias_k = None  # add_bias_kv / add_zero_attn are refused by from_torch: never set here
    bias_v = None
    add_zero_attn = False

    def _same_dims(self) -> bool:
        """kdim = vdim = E: torch keeps the three projections in one ``in_proj_weight``."""
        return self.k_proj.in_features == self.embed_dim and self.v_proj.in_features == self.embed_dim

    # ---------------------------------------------------------------------- attributes torch's layers read
    @property
    def _qkv_same_embed_dim(self) -> bool:
        """What ``nn.TransformerEncoderLayer`` reads before its fused inference kernel replaces this module's call
        (eval + no_grad) with torch's own attention on ``in_proj_weight``: True only when that kernel computes
        what this module does (kdim = vdim = E, fast path on, scaled dot + softmax, no rotary positions), so a
        drop-in given another distribution is always called, never bypassed."""
        return self._same_dims() and self.fast_path and self.rotary is None

    @property
    def kdim(self) -> int:
        return self.k_proj.in_features

    @property
    def vdim(self) -> int:
        return self.v_proj.in_features

    @property
    def in_proj_weight(self) -> torch.Tensor | None:
        """``[3E, E]``: the query, key and value weights stacked (torch's layout); None when kdim/vdim differ."""
        if not self._same_dims():
            return None
        return torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight])

    @property
    def in_proj_bias(self) -> torch.Tensor | None:
        """``[3E]``: the three projection biases stacked; None without biases."""
        if self.q_proj.bias is None:
            return None
        return torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias])

    @property
    def q_proj_weight(self) -> torch.Tensor | None:
        return None if self._same_dims() else self.q_proj.weight

    @property
    def k_proj_weight(self) -> torch.Tensor | None:
        return None if self._same_dims() else self.k_proj.weight

    @property
    def v_proj_weight(self) -> torch.Tensor | None:
        return None if self._same_dims() else self.v_proj.weight

    def merge_masks(
        self, attn_mask: torch.Tensor | None, key_padding_mask: torch.Tensor | None, query: torch.Tensor
    ) -> tuple[torch.Tensor | None, int | None]:
        """``nn.MultiheadAttention.merge_masks``: the masks in torch's convention and torch's mask type (0, 1, 2),
        as ``nn.TransformerEncoderLayer``'s fused inference path expects them."""
        if attn_mask is None:
            return (key_padding_mask, 1) if key_padding_mask is not None else (None, None)
        batch, length, _ = query.shape
        if attn_mask.dim() == 3:
            merged = attn_mask.view(batch, -1, length, length)
        else:
            merged = attn_mask.view(1, 1, length, length).expand(batch, self.num_heads, -1, -1)
        if key_padding_mask is not None:
            merged = merged + key_padding_mask.view(batch, 1, 1, length).expand(-1, self.num_heads, -1, -1)
        return merged, 2

    # ---------------------------------------------------------------------------------------- torch's call
    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor | None = None,
        value: torch.Tensor | None = None,
        key_padding_mask: torch.Tensor | None = None,
        need_weights: bool = True,
        attn_mask: torch.Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
        *,
        key_mask: torch.Tensor | None = None,
        query_mask: torch.Tensor | None = None,
        causal: bool = False,
    ) -> AttentionOutput:
        """``nn.MultiheadAttention.forward``: its arguments, defaults, polarity, layouts and return value.

        query ``[L, B, E]`` (``batch_first=False``), ``[B, L, E]`` or unbatched ``[L, E]``; key and value alike with
        ``S`` positions (``key=None``, not in torch's signature, means self-attention). ``key_padding_mask [B, S]``
        and ``attn_mask [L, S]`` / ``[B·H, L, S]`` are in **torch's polarity** (bool True = not allowed; a float
        one is added to the scores). attnkit's keyword-only ``key_mask``, ``query_mask`` (**True = attend**) and
        ``causal`` may not be mixed with torch's masks in one call.

        Returns ``AttentionOutput(output, weights)`` as torch does: output in the input's layout, weights
        ``[B, L, S]`` averaged over heads (``[B, H, L, S]`` with ``average_attn_weights=False``), None without
        ``need_weights``. A row with nothing to attend to gives zeros where torch gives NaN.
        """
        refuse_mixed_conventions(
            {"key_padding_mask": key_padding_mask, "attn_mask": attn_mask, "is_causal": is_causal},
            {"key_mask": key_mask, "query_mask": query_mask, "causal": causal},
        )
        self_attention = key is None or (key is query and (value is None or value is key))
        unbatched = query.dim() == 2
        key = query if key is None else key
        value = key if value is None else value
        query, key, value = (self._batch_first_layout(t, unbatched) for t in (query, key, value))
        shape = (query.shape[0], self.num_heads, query.shape[1], key.shape[1])
        key_mask, key_padding_mask = _bool_padding_as_key_mask(key_padding_mask, key_mask, unbatched, shape)
        allowed, bias = from_torch_masks(key_padding_mask, attn_mask, is_causal, shape)
        out = super().forward(  # attnkit's forward: attn_mask there is True = attend
            query,
            None if self_attention else key,
            None if self_attention else value,
            key_mask=key_mask,
            query_mask=query_mask,
            causal=causal,
            attn_mask=allowed,
            attn_bias=bias,
            need_weights=need_weights,
        )
        return self._torch_layout(out, average_attn_weights, unbatched)

    def _torch_layout(self, out: AttentionOutput, average_attn_weights: bool, unbatched: bool) -> AttentionOutput:
        """attnkit's ``[B, L, E]`` output and ``[B, H, L, S]`` weights in the layout torch returns them."""
        output, weights = out  # [B, L, E], [B, H, L, S] or None
        if weights is not None and average_attn_weights:
            weights = weights.mean(dim=1)  # [B, L, S]
        if unbatched:
            return AttentionOutput(output[0], None if weights is None else weights[0])
        return AttentionOutput(output if self.batch_first else output.transpose(0, 1), weights)

    def _batch_first_layout(self, tensor: torch.Tensor, unbatched: bool) -> torch.Tensor:
        """``tensor`` as ``[B, T, features]``: a batch of one for unbatched input, transposed when sequence-first."""
        if unbatched:
            if tensor.dim() != 2:
                raise ValueError(f"unbatched query [L, E] needs unbatched key and value, got {tuple(tensor.shape)}")
            return tensor[None]
        if tensor.dim() != 3:
            raise ValueError(f"query, key and value must all be 3-D (batched) or 2-D, got {tuple(tensor.shape)}")
        return tensor if self.batch_first else tensor.transpose(0, 1)


def _bool_padding_as_key_mask(
    key_padding_mask: torch.Tensor | None,
    key_mask: torch.Tensor | None,
    unbatched: bool,
    shape: tuple[int, int, int, int],
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """``(key_mask, key_padding_mask)``: a bool ``key_padding_mask [B, S]`` (True = padding; ``[S]`` unbatched),
    checked against ``shape [B, H, L, S]``, becomes attnkit's ``key_mask`` (True = attend), so that padded keys skip
    their projections as in attnkit's own calls; a float one stays torch's, to be added to the scores."""
    if unbatched and key_padding_mask is not None:
        key_padding_mask = key_padding_mask[None]  # [1, S]
    if key_padding_mask is not None and key_padding_mask.dtype == torch.bool:
        from_torch_mask(key_padding_mask, "key_padding_mask", shape)  # its shape checked, in torch's terms
        return ~key_padding_mask, None
    return key_mask, key_padding_mask
