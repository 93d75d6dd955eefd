"""The erasures — how a unit leaves the input — as objects in one table, and which units each test erases at
every k (layer 5). Imports no torch at module level: the command line offers :data:`ERASURES`' names.

| erasure | the erased unit |
|---|---|
| ``delete`` (default) | leaves the sequence: lengths shrink, an RNN never reads it, positions close up |
| ``mask`` | stays in the sequence (an RNN still reads it, positions do not move), masked out of every attention |
| ``unk`` | is replaced by the unknown token (a grid cell: by zero features) |

An :class:`Erasure` turns a subject's unit values ``[N, T]`` into :class:`Erased` variants, which each subject
turns into its model's inputs. Adding an erasure is one class and one line in :data:`ERASURES`.

Shape glossary:
    T  units   K  erasure sizes   N  variants
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = [
    "ERASURES",
    "PERCENTS",
    "Erased",
    "Erasure",
    "as_erasure",
    "compact",
    "flip_counts",
    "keep_top",
    "top_counts",
]

PERCENTS = (1, 5, 10, 20, 50)


@dataclass
class Erased:
    """Erased variants of one subject: ``values [N, T]`` (a unit's id, or the subject's ``blank``), ``present
    [N, T]`` (False: the unit leaves the sequence) and ``attend [N, T]`` (False: out of every attention; None:
    every present unit is attended)."""

    values: torch.Tensor
    present: torch.Tensor
    attend: torch.Tensor | None = None


@dataclass(frozen=True)
class Erasure:
    """One way a unit leaves the input. ``only_removes``: the erased units leave and nothing else changes (a HAN
    then reuses the vectors of untouched sentences)."""

    name: str
    help: str
    only_removes: bool = False

    def erase(self, values: torch.Tensor, keep: torch.Tensor, *, blank: int) -> Erased:
        """values ``[N, T]`` long, keep ``[N, T]`` bool (False = erase) -> :class:`Erased`."""
        raise NotImplementedError


class Delete(Erasure):
    def erase(self, values: torch.Tensor, keep: torch.Tensor, *, blank: int) -> Erased:
        """The erased units leave the sequence."""
        return Erased(values, keep)


class Mask(Erasure):
    def erase(self, values: torch.Tensor, keep: torch.Tensor, *, blank: int) -> Erased:
        """Every unit stays; the erased ones out of every attention."""
        return Erased(values, keep | True, keep)


class Unk(Erasure):
    def erase(self, values: torch.Tensor, keep: torch.Tensor, *, blank: int) -> Erased:
        """The erased units replaced by the subject's ``blank`` (the unknown token)."""
        return Erased(values.masked_fill(~keep, blank), keep | True)


ERASURES: dict[str, Erasure] = {
    erasure.name: erasure
    for erasure in (
        Delete("delete", "delete it from the sequence (default; lengths shrink, an RNN never reads it)", True),
        Mask("mask", "mask it out of every attention (it stays in the sequence)"),
        Unk("unk", "replace it by [UNK]"),
    )
}


def as_erasure(erase: Any) -> Erasure:
    """The :class:`Erasure` a name (the boundary: command line, Python API) or an erasure object stands for."""
    if isinstance(erase, Erasure):
        return erase
    if erase not in ERASURES:
        raise ValueError(f"unknown erasure {erase!r}; choose from {', '.join(ERASURES)}")
    return ERASURES[erase]


def compact(values: torch.Tensor, present: torch.Tensor, pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's present values closed up to the left: values, present ``[N, T]`` -> ids ``[N, T']`` (``pad``
    after the end) and their mask ``[N, T']`` (True = real; ``T' >= 1``)."""
    import torch

    lengths = present.sum(1)  # [N]
    mask = torch.arange(max(int(lengths.max()) if lengths.numel() else 1, 1)) < lengths[:, None]  # [N, T']
    ids = torch.full(mask.shape, pad, dtype=values.dtype)
    ids[mask] = values[present]  # row-major: each row's present values in order
    return ids, mask


def erased_probabilities(keep, values, erase, *, blank: int, forward, classes: int, chunk: int = 256):
    """What a subject's ``probabilities_when`` does: keep ``[N, T]`` -> probabilities ``[N, C]``, ``chunk``
    variants at a time erased the ``erase`` way (values ``[T]``, ``blank``: the erased value) and run by
    ``forward(erased, erasure) -> logits [n, C]``."""
    import torch

    if keep.dim() != 2 or keep.shape[-1] != values.shape[-1]:
        raise ValueError(f"keep: expected [N, {values.shape[-1]}], got {tuple(keep.shape)}")
    erasure, parts = as_erasure(erase), []
    for start in range(0, keep.shape[0], chunk):
        rows = keep[start : start + chunk].cpu()
        erased = erasure.erase(values.expand(rows.shape[0], -1), rows, blank=blank)
        parts.append(torch.softmax(forward(erased, erasure).float(), -1).cpu())
    return torch.cat(parts) if parts else torch.empty(0, classes)


def top_counts(units: int, percents: Sequence[int] = PERCENTS) -> list[int]:
    """How many units the top ``k`` % are: ``ceil(k/100 · units)``, at least 1, at most ``units``.

    >>> top_counts(30)
    [1, 2, 3, 6, 15]
    """
    return [min(units, max(1, math.ceil(p * units / 100 - 1e-9))) for p in percents]


def keep_top(order: torch.Tensor, counts: Sequence[int], *, keep: bool) -> torch.Tensor:
    """Masks that erase (``keep=False``: comprehensiveness) or keep only (``keep=True``: sufficiency) the first
    ``count`` units of ``order`` (unit indices, most important first): order ``[T]`` -> ``[K, T]`` bool."""
    import torch

    units = order.numel()
    rank = torch.empty(units, dtype=torch.long)
    rank[order] = torch.arange(units)  # [T] each unit's place in the order
    top = rank[None, :] < torch.tensor(list(counts), dtype=torch.long)[:, None]  # [K, T]
    return top if keep else ~top


def flip_counts(units: int, *, most: int = 50) -> list[int]:
    """The erasure sizes at which the flip search looks: every size for ``units <= most``, else every
    ``ceil(units / most)``-th (and ``units``), so a long document costs at most ``most + 1`` forwards."""
    step = max(1, math.ceil(units / most))
    counts = list(range(step, units + 1, step))
    return counts if counts and counts[-1] == units else [*counts, units]
