"""The attention skeleton (layer 3): ``weights = distribution(score(query, key), mask)``, ``context = weights @ value``.

Shape glossary:
    B  batch   H  heads (optional dim)   Tq  query positions   Tk  key positions
    Dq query features   Dk key features   Dv value features
"""

from __future__ import annotations

import torch
from torch import nn

from attnkit import masks
from attnkit.distributions import Distribution, Softmax
from attnkit.outputs import AttentionOutput
from attnkit.scores import Score

__all__ = ["Attention", "AttentionOutput"]


class Attention(nn.Module):
    """Any score × any distribution (default :class:`Softmax`), with masks that mean the same thing everywhere.
    ``dropout`` acts on the weights used for the context; the returned weights are before dropout.

    Example::

        attend = Attention(GeneralScore(256, 512), Sparsemax())
        out = attend(decoder_states, encoder_states, key_mask=source_mask)
        out.context  # [B, Tq, 512]
        out.weights  # [B, Tq, Tk]
    """

    def __init__(self, score: Score, distribution: Distribution | None = None, dropout: float = 0.0) -> None:
        super().__init__()
        self.score = score
        self.distribution = distribution if distribution is not None else Softmax()
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor | None = None,
        *,
        key_mask: torch.Tensor | None = None,
        query_mask: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
        query_positions: torch.Tensor | None = None,
    ) -> AttentionOutput:
        """Attend from each query over the keys: query ``[B, (H,) Tq, Dq]``, key ``[B, (H,) Tk, Dk]``, value
        ``[B, (H,) Tk, Dv]`` (default ``key``) -> ``AttentionOutput(context [B, (H,) Tq, Dv], weights [B, (H,) Tq,
        Tk])``.

        ``key_mask [B, Tk]`` and ``query_mask [B, Tq]`` are bool, True where the position is real; masked queries
        get zero weights and a zero context. ``attn_mask`` is bool broadcastable to ``[B, (H,) Tq, Tk]`` (e.g.
        :func:`attnkit.masks.causal`). ``query_positions`` are read by :class:`~attnkit.distributions.LocalM`.
        """
        value = key if value is None else value
        if key.shape[:-1] != value.shape[:-1]:
            raise ValueError(
                f"key and value must agree on [B, (H,) Tk]; got key {tuple(key.shape)}, value {tuple(value.shape)}"
            )
        scores = self.score(query, key)  # [B, (H,) Tq, Tk]
        mask = masks.attention_mask(scores.shape, key_mask=key_mask, query_mask=query_mask, attn_mask=attn_mask)
        weights = self.distribution(scores, mask, query=query, query_positions=query_positions)
        context = self.dropout(weights) @ value.to(weights.dtype)  # [B, (H,) Tq, Dv]
        return AttentionOutput(context, weights)
