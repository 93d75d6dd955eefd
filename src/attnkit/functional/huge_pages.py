"""Large fresh CPU buffers backed by transparent huge pages (layer 2): the one operating-system trick of the SDPA
fast path (:mod:`attnkit.functional.sdpa`), kept here on its own so the attention code reads without it.

The inference weights path returns one large fresh ``[B, H, Tq, Tk]`` buffer (67 MB at 8 x 8 x 512 x 512). Its
pages fault in, and are zeroed by the kernel, one 4 KiB page at a time on first write; on the project's machine that
cost as much as a third of the whole call (``bench.sdpa_weights``), and asking for huge pages makes it one fault per
2 MiB. It is a hint only: without THP, on another OS, for a GPU tensor or a small buffer, the result is plain
``torch.empty`` with the same contents.
"""

from __future__ import annotations

import ctypes
import sys

import torch

__all__ = ["HUGE_PAGE", "HUGE_PAGES_MIN_BYTES", "empty_huge_pages"]

HUGE_PAGE = 2 << 20  # bytes: x86-64 and arm64 transparent huge pages
HUGE_PAGES_MIN_BYTES = 8 << 20  # smaller buffers: not worth a system call
_MADV_HUGEPAGE = 14  # <linux/mman.h>


def _load_madvise():
    if not sys.platform.startswith("linux"):
        return None
    try:
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    return madvise


_madvise = _load_madvise()


def empty_huge_pages(*shape: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``torch.empty(shape)``, asking Linux to back a large CPU buffer with transparent huge pages.

    A fresh buffer of more than a few MiB is a new memory mapping whose pages fault in (and are zeroed by the
    kernel) one 4 KiB page at a time on first write; ``madvise(MADV_HUGEPAGE)`` on its 2 MiB-aligned interior,
    before anything touches it, makes that one fault per 2 MiB. Only a hint: where the system does not honour it
    (no THP, other OS, GPU tensor, small buffer) this is plain ``torch.empty``, with the same contents either way.
    """
    out = torch.empty(shape, dtype=dtype, device=device)
    nbytes = out.numel() * out.element_size()
    if _madvise is None or out.device.type != "cpu" or nbytes < HUGE_PAGES_MIN_BYTES:
        return out
    start = -(-out.data_ptr() // HUGE_PAGE) * HUGE_PAGE  # first 2 MiB boundary inside the buffer
    end = (out.data_ptr() + nbytes) // HUGE_PAGE * HUGE_PAGE
    if end > start:
        _madvise(start, end - start, _MADV_HUGEPAGE)  # failure (e.g. EINVAL without THP) changes nothing
    return out
