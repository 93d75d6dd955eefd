"""Greedy or beam-search decoding with the batch split across Python threads, one intra-op thread each (layer 4).

    out = decode_in_threads(greedy, model, source_ids, source_mask, threads=2, max_len=64)

With a handful of rows per step, splitting each small kernel across torch's intra-op threads costs about what it
saves. Here the *sources* are split instead: ``threads`` contiguous slices of the batch, each decoded start to end
in a thread of its own with ``torch.set_num_threads(1)`` (torch's kernels release the GIL, so the slices overlap).
The hypotheses are those of one call over the whole batch; shorter slices are padded with ``pad_id`` (and zero
weights). The model is shared read-only (decoding state lives in each call's state object); the caller's thread
count is restored. ``bench.decoding_runtimes`` times it (``attnkit_split``).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import torch

from attnkit.decoding import DEFAULT_PAD_ID, DecodeOutput

__all__ = ["decode_in_threads", "stitch"]


def _pad_steps(x: torch.Tensor, steps: int, value: float | int) -> torch.Tensor:
    """``x [b, K, T, ...]`` padded along ``T`` to ``steps`` with ``value``."""
    if x.shape[2] == steps:
        return x
    shape = (*x.shape[:2], steps - x.shape[2], *x.shape[3:])
    return torch.cat([x, x.new_full(shape, value)], dim=2)


def stitch(parts: list[DecodeOutput], pad_id: int = DEFAULT_PAD_ID) -> DecodeOutput:
    """The slices' outputs as one :class:`DecodeOutput` over their sources in order (``[B, K, T]`` with ``T`` the
    longest slice's, shorter slices padded with ``pad_id`` and their weights with zeros)."""
    steps = max(part.tokens.shape[2] for part in parts)
    attention = None
    if all(part.attention is not None for part in parts):
        attention = torch.cat([_pad_steps(part.attention, steps, 0.0) for part in parts])  # [B, K, T, *W]
    return DecodeOutput(
        tokens=torch.cat([_pad_steps(part.tokens, steps, pad_id) for part in parts]),  # [B, K, T]
        lengths=torch.cat([part.lengths for part in parts]),
        scores=torch.cat([part.scores for part in parts]),
        log_probs=torch.cat([part.log_probs for part in parts]),
        finished=torch.cat([part.finished for part in parts]),
        attention=attention,
    )


def decode_in_threads(
    decode: Callable[..., DecodeOutput],
    model: object,
    source_ids: torch.Tensor,
    source_mask: torch.Tensor,
    *,
    threads: int = 2,
    **options: object,
) -> DecodeOutput:
    """``decode(model, source_ids[slice], source_mask[slice], **options)`` on ``threads`` contiguous slices of the
    batch ``[B, S]``, each in its own Python thread with one torch thread; the outputs stitched in source order."""
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    batch = source_ids.shape[0]
    bounds = [(batch * i // threads, batch * (i + 1) // threads) for i in range(threads)]
    bounds = [(start, end) for start, end in bounds if end > start] or [(0, batch)]
    if len(bounds) == 1:
        return decode(model, source_ids, source_mask, **options)
    caller_threads = torch.get_num_threads()

    def run(bound: tuple[int, int]) -> DecodeOutput:
        torch.set_num_threads(1)
        start, end = bound
        return decode(model, source_ids[start:end], source_mask[start:end], **options)

    try:
        with ThreadPoolExecutor(max_workers=len(bounds), thread_name_prefix="attnkit-decode") as pool:
            parts = list(pool.map(run, bounds))
    finally:
        torch.set_num_threads(caller_threads)  # the workers' setting also moved torch's process-wide default
    return stitch(parts, int(options.get("pad_id", DEFAULT_PAD_ID)))
