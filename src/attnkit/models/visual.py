"""Visual attention: a small CNN turns an image into a grid of feature vectors, attention pooling picks the cells
that matter, and a linear layer classifies the pooled vector (in the spirit of Xu et al. 2015's soft attention).

The grid is a set of ``Hg·Wg`` cells to the pooling. Without positions the pooling is blind to where a cell is
(permuting the cells permutes the weights and leaves the prediction unchanged); 2-D sinusoidal positions added
to the grid make it order-aware. The pooling weights, reshaped to ``[B, heads, Hg, Wg]``, are the attention map
that :func:`attnkit.explain.visual_section` lays over the image.

Shape glossary:
    B  batch   C  image channels   H, W  image height and width   Hg, Wg  grid height and width
    D  grid features   heads  pooling heads   K  classes
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from attnkit.outputs import AttentionOutput
from attnkit.pooling import AttentionPooling
from attnkit.positions import Sinusoidal2DPositions

__all__ = [
    "POSITIONS",
    "ConvBackbone",
    "VisualAttentionClassifier",
    "VisualAttentionOutput",
    "visual_attention_classifier",
]

POSITIONS = ("sinusoidal-2d", "none")


class ConvBackbone(nn.Module):
    """Blocks of 3×3 convolution (same padding), batch normalisation and GELU, an optional 2×2 max-pool after chosen
    blocks, and a LayerNorm over the features of each cell (so that the grid and the positions added to it have
    comparable scales).

    Batch normalisation (``batch_norm=False`` leaves it out) makes training converge in a few epochs; in eval mode
    it uses running statistics, so an image's output never depends on the rest of its batch. ``channels``: each
    convolution's outputs, the last one ``D``; ``downsample``: the blocks followed by a 2×2 max-pool (halving
    ``Hg`` and ``Wg``).
    """

    def __init__(
        self, in_channels: int, channels: Sequence[int], *, downsample: Sequence[int] = (), batch_norm: bool = True
    ) -> None:
        super().__init__()
        if not channels or min(channels) < 1:
            raise ValueError(f"channels must be a non-empty list of positive sizes, got {list(channels)}")
        if in_channels < 1:
            raise ValueError(f"in_channels must be >= 1, got {in_channels}")
        bad = sorted(set(downsample) - set(range(len(channels))))
        if bad:
            raise ValueError(f"downsample: block indices {bad} outside [0, {len(channels)})")
        layers: list[nn.Module] = []
        previous = in_channels
        for index, size in enumerate(channels):
            layers.append(nn.Conv2d(previous, size, kernel_size=3, padding=1, bias=not batch_norm))
            layers += [nn.BatchNorm2d(size), nn.GELU()] if batch_norm else [nn.GELU()]
            if index in downsample:
                layers.append(nn.MaxPool2d(2))
            previous = size
        self.layers = nn.Sequential(*layers)
        self.norm = nn.LayerNorm(previous)
        self.in_channels = in_channels
        self.output_dim = previous

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """images ``[B, C, H, W]`` -> grid ``[B, Hg, Wg, D]``."""
        if images.dim() != 4 or images.shape[1] != self.in_channels:
            raise ValueError(
                f"ConvBackbone expects images of shape [B, {self.in_channels}, H, W], got {tuple(images.shape)}"
            )
        features = self.layers(images)  # [B, D, Hg, Wg]
        return self.norm(features.permute(0, 2, 3, 1))  # [B, Hg, Wg, D]


@dataclass
class VisualAttentionOutput:
    """``logits [B, K]``, the pooling's ``AttentionOutput(pooled [B, D or heads·D], weights [B, heads, Hg·Wg])``
    and ``grid_size (Hg, Wg)``, to reshape the flat weights into maps."""

    logits: torch.Tensor
    pooling: AttentionOutput
    grid_size: tuple[int, int]

    def attention_maps(self) -> torch.Tensor:
        """The pooling weights as maps over the grid: ``[B, heads, Hg, Wg]``, each map summing to 1."""
        weights = self.pooling.weights  # [B, heads, Hg·Wg]
        return weights.reshape(*weights.shape[:2], *self.grid_size)


class VisualAttentionClassifier(nn.Module):
    """``logits = W · dropout(pool(positions(backbone(image))))``.

    ``backbone``: images ``[B, C, H, W]`` -> grid ``[B, Hg, Wg, D]``, with an ``output_dim`` (``D``), e.g.
    :class:`ConvBackbone`. ``pooling``: an :class:`~attnkit.pooling.AttentionPooling` over ``D`` (default: one
    head). ``positions``: a module adding positions to the grid, e.g.
    :class:`~attnkit.positions.Sinusoidal2DPositions`; None leaves the pooling blind to cell positions.
    """

    def __init__(
        self,
        backbone: nn.Module,
        num_classes: int,
        *,
        pooling: AttentionPooling | None = None,
        positions: nn.Module | None = None,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        dim = getattr(backbone, "output_dim", None)
        if not isinstance(dim, int):
            raise ValueError(f"backbone {type(backbone).__name__} must say its feature size as an int output_dim")
        if num_classes < 2:
            raise ValueError(f"num_classes must be >= 2, got {num_classes}")
        self.backbone = backbone
        self.positions = positions
        self.pooling = pooling if pooling is not None else AttentionPooling(dim)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(dim * self.pooling.heads, num_classes)

    @property
    def heads(self) -> int:
        """Number of attention maps per image."""
        return self.pooling.heads

    def forward(self, images: torch.Tensor) -> VisualAttentionOutput:
        """images ``[B, C, H, W]`` -> logits ``[B, K]`` and attention weights ``[B, heads, Hg·Wg]``."""
        return self.attend(self.backbone(images))

    def attend(self, grid: torch.Tensor, *, attend_mask: torch.Tensor | None = None) -> VisualAttentionOutput:
        """Pool and classify a feature grid ``[B, Hg, Wg, D]`` (the part of :meth:`forward` after the backbone).

        ``attend_mask [B, Hg·Wg]`` (optional; True = the pooling may attend to the cell): faithfulness's erasure
        of grid cells.
        """
        if grid.dim() != 4:
            raise ValueError(f"attend expects a grid of shape [B, Hg, Wg, D], got {tuple(grid.shape)}")
        grid_size = (grid.shape[1], grid.shape[2])
        if self.positions is not None:
            grid = self.positions(grid)  # [B, Hg, Wg, D]
        cells = grid.flatten(1, 2)  # [B, Hg·Wg, D]
        pooled = self.pooling(cells, attend_mask)  # pooled [B, D or heads·D], weights [B, heads, Hg·Wg]
        logits = self.classifier(self.dropout(pooled.context))  # [B, K]
        return VisualAttentionOutput(logits, pooled, grid_size)


def visual_attention_classifier(
    num_classes: int,
    *,
    in_channels: int = 1,
    channels: Sequence[int] = (32, 64, 64, 64),
    downsample: Sequence[int] = (),
    heads: int = 4,
    hidden: int | None = None,
    positions: str = "sinusoidal-2d",
    dropout: float = 0.1,
    batch_norm: bool = True,
) -> VisualAttentionClassifier:
    """Build a :class:`VisualAttentionClassifier` with a :class:`ConvBackbone` and additive attention pooling.

    ``channels``, ``downsample``, ``batch_norm``: the backbone's (``D = channels[-1]``); ``heads``: one attention
    map each; ``hidden``: the pooling's score size (default ``D``); ``positions``: ``"sinusoidal-2d"`` (``D``
    divisible by 4) or ``"none"``.
    """
    if positions not in POSITIONS:
        raise ValueError(f"positions must be one of {', '.join(POSITIONS)}; got {positions!r}")
    backbone = ConvBackbone(in_channels, channels, downsample=downsample, batch_norm=batch_norm)
    dim = backbone.output_dim
    return VisualAttentionClassifier(
        backbone,
        num_classes,
        pooling=AttentionPooling(dim, hidden=hidden, heads=heads),
        positions=Sinusoidal2DPositions(dim) if positions == "sinusoidal-2d" else None,
        dropout=dropout,
    )
